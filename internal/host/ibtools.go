package host

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// The saved outputs of ibstat, ibstatus and ibv_devinfo are read into a
// partial Snapshot (its Tool says which): RDMA devices and their ports,
// nothing of PCI, kernel or counters. doctor's rules judge it like any
// snapshot; the GID table is marked missing, since none of the three
// prints it whole. Port states are read by portstate, whatever the tool's
// spelling.

var kvRE = lazyre.New(`^\s*([A-Za-z_ ]+?):\s*(.*?)\s*$`)

// sysfsLayer spells a link layer as sysfs does (InfiniBand, Ethernet).
func sysfsLayer(s string) string {
	switch l, _ := linkrate.SysfsLayer(strings.TrimSpace(s)); l {
	case linkrate.InfiniBand:
		return "InfiniBand"
	case linkrate.RoCE:
		return "Ethernet"
	}
	return strings.TrimSpace(s)
}

// lidValue reads a LID in decimal or 0x hex; nil when it is not a number.
func lidValue(s string) *int {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 32)
	if err != nil {
		return nil
	}
	n := int(v)
	return &n
}

func cleanLine(s string) string { return strings.Trim(s, " \t│|") }

func lines(b []byte) *bufio.Scanner {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	return sc
}

// toolSnapshot starts the partial snapshot of a tool's output.
func toolSnapshot(tool string) *Snapshot {
	return &Snapshot{SchemaVersion: SchemaVersion, Tool: tool, Source: tool}
}

// newToolPort is a port as a tool lists it: its GID table is not shown.
func newToolPort(n int) RDMAPort { return RDMAPort{Port: n, GIDTableMissing: true} }

// finishTool records a device listed without ports (device attributes
// only, or an output cut short) as not read, and normalises.
func finishTool(s *Snapshot) *Snapshot {
	for _, d := range s.RDMADevices {
		if len(d.Ports) == 0 {
			s.Errors = append(s.Errors, CollectError{Subject: d.Name, Path: s.Tool, Error: "the " + s.Tool + " output has no port section for this device (device attributes only, or cut short)"})
		}
	}
	s.Normalize()
	return s
}

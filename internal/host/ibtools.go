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
// prints it whole.

// portStates and physStates are the IBTA port states by number, spelt as
// sysfs spells them (what inventory reads): the one vocabulary the rules
// compare against, whatever the tool printed ("Active", "4: ACTIVE",
// "PORT_ACTIVE (4)").
var (
	portStates = []string{1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
	physStates = []string{1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp", 6: "LinkErrorRecovery", 7: "PhyTest"}
)

var (
	stateNumRE = lazyre.New(`^(\d+):|\((\d+)\)$`)
	kvRE       = lazyre.New(`^\s*([A-Za-z_ ]+?):\s*(.*?)\s*$`)
)

// ParsePortState reads a port state as any of the tools prints it into
// sysfs's number and name; ok is false for a spelling it does not know.
func ParsePortState(s string) (id int, name string, ok bool) {
	return enumState(s, portStates, "PORT_")
}

// ParsePhysState is ParsePortState for the physical state ("LinkUp",
// "5: LinkUp", "LINK_UP (5)").
func ParsePhysState(s string) (id int, name string, ok bool) { return enumState(s, physStates, "") }

func enumState(s string, names []string, prefix string) (int, string, bool) {
	s = strings.TrimSpace(s)
	if m := stateNumRE().FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1] + m[2])
		if n > 0 && n < len(names) {
			return n, names[n], true
		}
	}
	word := strings.Fields(stateNumRE().ReplaceAllString(s, "") + " ")
	if len(word) == 0 {
		return 0, "", false
	}
	w := strings.ReplaceAll(strings.TrimPrefix(strings.ToUpper(word[0]), prefix), "_", "")
	for i, n := range names {
		if n != "" && strings.ReplaceAll(strings.ToUpper(n), "_", "") == w {
			return i, n, true
		}
	}
	return 0, "", false
}

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

// setState and setPhys fill a port's state from a tool's spelling; one
// the parser does not know is kept as printed, so the rules see it.
func setState(p *RDMAPort, v string) {
	if id, n, ok := ParsePortState(v); ok {
		p.StateID, p.State = id, n
		return
	}
	p.State = strings.TrimSpace(v)
}

func setPhys(p *RDMAPort, v string) {
	if id, n, ok := ParsePhysState(v); ok {
		p.PhysStateID, p.PhysState = id, n
		return
	}
	p.PhysState = strings.TrimSpace(v)
}

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

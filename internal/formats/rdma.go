package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// Readers of iproute2's rdma tool: `rdma link show` (each port's state,
// physical state and netdev) and `rdma statistic show` (each port's
// hw_counters on one line, or one a line with -p). Both print
// `link DEV/PORT` then name-value pairs; mail archives wrap those lines
// anywhere, so a port's pairs are read as one stream of words up to the
// next `link`, blank line or command line.

var (
	rdmaLinkLineRE = lazyre.New(`^\s*(?:[^\s:$#]+:\s+)?link ([\w.\-]+)/(\d+)\b(.*)$`)
	rdmaLinkShowRE = lazyre.New(`(?m)^\s*(?:[^\s:$#]+:\s+)?link [\w.\-]+/\d+\b.*\sstate\s+[A-Z_]+`)
	rdmaStatRE     = lazyre.New(`(?m)^\s*(?:[^\s:$#]+:\s+)?link [\w.\-]+/\d+(?:\s+[a-z][a-z0-9_]*\s+\d+|[ \t]*\n[ \t]+[a-z][a-z0-9_]*[ \t]+\d+[ \t]*$)`)
	rdmaCmdRE      = lazyre.New(`[$#]\s*(?:sudo\s+)?rdma\b|^\s*rdma\s`)
)

func sniffRDMALink(b []byte) bool { return rdmaLinkShowRE().Match(b) }
func sniffRDMAStat(b []byte) bool { return rdmaStatRE().Match(b) }

// rdmaBlock is one `link DEV/PORT` and the words after it.
type rdmaBlock struct {
	dev   string
	port  int
	line  int
	words []string
}

// rdmaBlocks cuts b into `link DEV/PORT` blocks: a block runs to the next
// link line, a blank line or a command line (a prompt before `rdma`).
func rdmaBlocks(b []byte) []rdmaBlock {
	var out []rdmaBlock
	var cur *rdmaBlock
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if rdmaCmdRE().MatchString(l) || strings.TrimSpace(l) == "" {
			cur = nil
			continue
		}
		if m := rdmaLinkLineRE().FindStringSubmatch(l); m != nil {
			p, err := strconv.Atoi(m[2])
			if err == nil {
				out = append(out, rdmaBlock{dev: m[1], port: p, line: n, words: strings.Fields(m[3])})
				cur = &out[len(out)-1]
				continue
			}
		}
		if cur != nil {
			cur.words = append(cur.words, strings.Fields(l)...)
		}
	}
	return out
}

// toolPort returns the port of s named dev/n, adding it (a port as a tool
// lists it: its GID table is not shown).
func toolPort(s *host.Snapshot, dev string, n int) *host.RDMAPort {
	var d *host.RDMADevice
	for i := range s.RDMADevices {
		if s.RDMADevices[i].Name == dev {
			d = &s.RDMADevices[i]
		}
	}
	if d == nil {
		s.RDMADevices = append(s.RDMADevices, host.RDMADevice{Name: dev, NUMANode: -1, PCIAddress: pciOfName(dev)})
		d = &s.RDMADevices[len(s.RDMADevices)-1]
	}
	for i := range d.Ports {
		if d.Ports[i].Port == n {
			return &d.Ports[i]
		}
	}
	d.Ports = append(d.Ports, host.RDMAPort{Port: n, GIDTableMissing: true})
	return &d.Ports[len(d.Ports)-1]
}

// layerOfName: the kernel names RDMA devices by link layer when udev's
// rdma naming is on (roce… RoCE, ibp… InfiniBand); other names say
// nothing.
func layerOfName(dev string) string {
	switch {
	case strings.HasPrefix(dev, "roce"):
		return "Ethernet"
	case strings.HasPrefix(dev, "ibp"):
		return "InfiniBand"
	}
	return ""
}

// readRDMALink reads `rdma link show` (with or without -d) into a partial
// host snapshot: each port's state, physical state, netdev and, where
// shown, LID and SM LID.
func readRDMALink(name string, b []byte) (any, error) {
	s := partial(name)
	s.Tool = "rdma link"
	part := &HostPart{Snapshot: s, Shows: ShowsPorts}
	var stats []rdmaBlock
	for _, blk := range rdmaBlocks(b) {
		if !slices.Contains(blk.words, "state") {
			// A statistic block pasted with the link list (rdma link;
			// rdma statistic): the port's counters, read as such.
			stats = append(stats, blk)
			continue
		}
		p := toolPort(s, blk.dev, blk.port)
		p.LinkLayer = layerOfName(blk.dev)
		w := blk.words
		for i := 0; i+1 < len(w); i++ {
			k, v := w[i], w[i+1]
			switch k {
			case "state":
				p.State = parseState(v)
			case "physical_state":
				p.PhysState = parsePhys(v)
			case "netdev":
				p.NetDevs = append(p.NetDevs, v)
			case "lid":
				p.LID = intPtr(v)
			case "sm_lid":
				p.SMLID = intPtr(v)
			case "lmc":
				p.LMC, _ = strconv.Atoi(v)
			default:
				continue
			}
			i++
		}
	}
	if len(s.RDMADevices) == 0 {
		return nil, errors.New("no `link DEV/PORT state …` line")
	}
	if addStats(s, filepath.Base(name), stats, &part.Skipped) {
		part.Shows |= ShowsCounters
	}
	s.Normalize()
	return part, nil
}

// readRDMAStat reads `rdma statistic show` into the ports' hw_counters.
// QP counter objects (`rdma statistic qp show`: cntn, pid, comm) count
// one process's queue pairs, not the port: they are skipped and named.
func readRDMAStat(name string, b []byte) (any, error) {
	s := partial(name)
	s.Tool = "rdma statistic"
	var skipped []string
	addStats(s, filepath.Base(name), rdmaBlocks(b), &skipped)
	if len(s.RDMADevices) == 0 {
		if len(skipped) > 0 {
			return nil, fmt.Errorf("only QP counters (rdma statistic qp), no port's counters: %s", skipped[0])
		}
		return nil, errors.New("no `link DEV/PORT` line with counters")
	}
	s.Normalize()
	return &HostPart{Snapshot: s, Shows: ShowsCounters, Skipped: skipped}, nil
}

// addStats reads statistic blocks into their ports' hw_counters; it
// reports whether any port's counters were read.
func addStats(s *host.Snapshot, base string, blocks []rdmaBlock, skipped *[]string) bool {
	read := false
	for _, blk := range blocks {
		if len(blk.words) > 0 && blk.words[0] == "cntn" {
			*skipped = append(*skipped, fmt.Sprintf("line %d: a QP counter of %s/%d (rdma statistic qp), not the port's counters", blk.line, blk.dev, blk.port))
			continue
		}
		counters := map[string]uint64{}
		w := blk.words
		for i := 0; i+1 < len(w); i++ {
			v, err := strconv.ParseUint(w[i+1], 10, 64)
			if err != nil {
				continue // a word out of step (an annotation): resynchronise
			}
			counters[w[i]] = v
			i++
		}
		if len(counters) == 0 {
			continue
		}
		p := toolPort(s, blk.dev, blk.port)
		p.LinkLayer = layerOfName(blk.dev)
		if p.HWCounters == nil {
			p.HWCounters = map[string]uint64{}
		}
		for k, v := range counters {
			p.HWCounters[k] = v
		}
		if p.Sources == nil {
			p.Sources = map[string]string{}
		}
		src := fmt.Sprintf("%s line %d (rdma statistic)", base, blk.line)
		for k := range counters {
			p.Sources["hw_counters/"+k] = src
		}
		read = true
	}
	return read
}

func intPtr(v string) *int {
	n, err := strconv.ParseInt(v, 0, 32)
	if err != nil {
		return nil
	}
	i := int(n)
	return &i
}

var predictableRE = lazyre.New(`^(?:roce|ib|rdma)(?:P(\d+))?p(\d+)s(\d+)f(\d+)$`)

// pciOfName is the PCI address udev's predictable RDMA names spell
// (rocep1s0f1: bus 1, slot 0, function 1; roceP2p1s0f0 in domain 2; the
// numbers are decimal), so two functions of one card are known as one
// card; the zero address for any other name.
func pciOfName(dev string) host.PCIAddress {
	m := predictableRE().FindStringSubmatch(dev)
	if m == nil {
		return host.PCIAddress{}
	}
	n := func(s string) uint {
		v, _ := strconv.ParseUint(s, 10, 32)
		return uint(v)
	}
	a, err := host.NewPCIAddress(n(m[1]), n(m[2]), n(m[3]), n(m[4]))
	if err != nil {
		return host.PCIAddress{}
	}
	return a
}

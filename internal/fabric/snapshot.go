package fabric

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// FromTopology makes a snapshot of what an ibnetdiscover dump says: every
// node with its GUID, vendor and device id and LID, and both ends of every
// link with the width and speed of its comment. A dump lists only linked
// ports and no port states, so State stays unknown (empty). An ibsim
// netlist has no GUIDs: its nodes are numbered in file order (0x1, 0x2, …)
// so links still pair, and Source says so.
func FromTopology(t *Topology, source string) *Snapshot {
	s := &Snapshot{SchemaVersion: SchemaVersion, Source: source, Read: []Tool{IBNetDiscover}, Unreadable: t.Unreadable}
	byName := map[string]host.GUID{}
	numbered := false
	for i, n := range t.Nodes {
		if n.GUID.IsZero() {
			n.GUID = host.GUID(i + 1)
			numbered = true
		}
		byName[n.ID] = n.GUID
		byName[n.Desc] = n.GUID
		s.Nodes = append(s.Nodes, Node{GUID: n.GUID, Type: n.Type, Desc: n.Desc, Ports: n.Ports, SysImageGUID: n.SysImageGUID, LID: n.LID, VendorID: n.VendorID, DeviceID: n.DeviceID})
	}
	if numbered {
		s.Source += " (no GUIDs in the file: nodes numbered in file order)"
	}
	node := func(e TopoEnd) host.GUID {
		if !e.GUID.IsZero() {
			return e.GUID
		}
		return byName[e.Node]
	}
	for _, l := range t.Links {
		a, b := l.A, l.B
		for _, pair := range [][2]TopoEnd{{a, b}, {b, a}} {
			near, far := pair[0], pair[1]
			g := node(near)
			p := Port{NodeGUID: g, NodeDesc: near.Node, Num: near.Port, PortGUID: near.PortGUID, LID: near.LID, PhysState: portstate.LinkUp,
				Remote: &End{NodeGUID: node(far), PortGUID: far.PortGUID, NodeDesc: far.Node, Port: far.Port, LID: far.LID}}
			if n := s.Node(g); n != nil {
				p.NodeType, p.NodeDesc = n.Type, n.Desc
				if p.LID == 0 && n.Type == Switch {
					p.LID = n.LID
				}
			}
			if l.Width != "" {
				p.Width = strings.ToUpper(l.Width)
				p.Speed = l.Speed
				if sp, ok := linkrate.SpeedByName(l.Speed); ok {
					p.Speed, p.LaneGbps = sp.Name, sp.SignalGbps
				}
				p.RateGbps = linkrate.IBRateGbps(p.Width, p.Speed)
			}
			s.Ports = append(s.Ports, p)
		}
	}
	// A far end listed by its own block and by its neighbour's appears
	// twice; keep one port per key (the first, which has its own LID).
	seen := map[PortKey]bool{}
	ports := s.Ports[:0]
	for _, p := range s.Ports {
		if !seen[p.Key()] {
			seen[p.Key()] = true
			ports = append(ports, p)
		}
	}
	s.Ports = ports
	s.Resolve()
	return s
}

// FromIBLinkInfo makes a snapshot of what an iblinkinfo output says.
func FromIBLinkInfo(text, source string) (*Snapshot, error) {
	ps, bad, err := ParseIBLinkInfo(text)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		if len(bad) > 0 {
			return nil, fmt.Errorf("no port line of the iblinkinfo output could be read (line %d: %s)", bad[0].Line, bad[0].Reason)
		}
		return nil, fmt.Errorf("no port lines in iblinkinfo output")
	}
	s := &Snapshot{SchemaVersion: SchemaVersion, Source: source, Read: []Tool{IBLinkInfo}, Ports: ps, Unreadable: bad, CollectedAt: time.Time{}}
	s.Resolve()
	return s, nil
}

var portsLineRE = lazyre.New(`^\s*(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]{1,16})\s+(\d+)x\s+(\S+)\s*(?:-\s+(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]{1,16})\s+\(\s*'(.*?)'\s+-\s+'(.*?)'\s*\)|'(.*?)'|(\S.*?))\s*$`)

var portsStartRE = lazyre.New(`^\s*(CA|SW|RT)\s+\d`)

var portsType = map[string]NodeType{"CA": CA, "SW": Switch, "RT": Router}

// FromIBNetDiscoverPorts reads `ibnetdiscover -p` (one line per port:
// type, LID, port, GUID, width and speed, and the far end when linked)
// into a snapshot. Ports without a far end are listed, not linked.
func FromIBNetDiscoverPorts(text, source string) (*Snapshot, error) {
	s := &Snapshot{SchemaVersion: SchemaVersion, Source: source, Read: []Tool{IBNetDiscover}}
	var bad *ParseError // the first line that is no port line
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := portsLineRE().FindStringSubmatch(line)
		if m == nil {
			// A line that starts as a port line and does not read is that
			// port unknown; anything else (a prompt, a banner) is no port.
			if portsStartRE().MatchString(line) {
				s.Unreadable = append(s.Unreadable, Unreadable{"ibnetdiscover -p", n, line, "a port line whose fields do not read (type, LID, port, GUID, width and speed, then the far end or a description)"})
				continue
			}
			if bad == nil {
				bad = &ParseError{"ibnetdiscover -p", n, line, "not a port line"}
			}
			continue
		}
		p := Port{NodeType: portsType[m[1]], NodeGUID: guid(m[4]), Width: m[5] + "X"}
		p.LID, _ = strconv.Atoi(m[2])
		p.Num, _ = strconv.Atoi(m[3])
		if sp, ok := linkrate.SpeedByName(m[6]); ok {
			p.Speed, p.LaneGbps = sp.Name, sp.SignalGbps
			p.RateGbps = linkrate.IBRateGbps(p.Width, p.Speed)
		}
		if m[7] != "" {
			p.NodeDesc = strings.TrimSpace(m[11])
			p.PhysState = portstate.LinkUp
			r := &End{NodeGUID: guid(m[10]), NodeDesc: strings.TrimSpace(m[12])}
			r.LID, _ = strconv.Atoi(m[8])
			r.Port, _ = strconv.Atoi(m[9])
			p.Remote = r
		} else {
			p.NodeDesc = strings.TrimSpace(m[13] + m[14])
		}
		s.Ports = append(s.Ports, p)
	}
	if len(s.Ports) == 0 {
		if bad != nil {
			return nil, bad
		}
		return nil, fmt.Errorf("no port lines in ibnetdiscover -p output")
	}
	s.Resolve()
	return s, sc.Err()
}

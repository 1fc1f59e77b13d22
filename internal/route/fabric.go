package route

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
)

// PortKey names a physical port by the GUID it answers to and its number:
// for a switch port the switch's GUID (every switch port shares it), for a
// CA port that port's own GUID. These are the GUIDs the forwarding table
// dumps, iblinkinfo and the hosts' sysfs print.
type PortKey struct {
	GUID host.GUID `json:"guid"`
	Port int       `json:"port"`
}

func (k PortKey) String() string { return fmt.Sprintf("%s/%d", k.GUID, k.Port) }

// Link is one direction of a cable: traffic leaving From, arriving at To.
type Link struct {
	From PortKey `json:"from"`
	To   PortKey `json:"to"`
}

// Port is one cabled port as an input to New.
type Port struct {
	Key    PortKey
	Node   string // the node's description ("leaf03", "gpu017 HCA-1")
	Switch bool
	LID    int // a CA port's LID (ignored for switch ports)
	Remote PortKey
}

// CA is a host channel-adapter port: a place traffic starts and ends.
type CA struct {
	Key  PortKey `json:"key"`
	Name string  `json:"name"` // node description, with " port N" when the CA has several ports
	LID  int     `json:"lid"`
}

// Fabric is the cabling plus the forwarding tables, in dense form so that
// walking a million paths takes milliseconds.
type Fabric struct {
	CAs   []CA   // sorted by name
	Links []Link // every directed link between cabled ports, sorted

	ports  []portRec
	byKey  map[PortKey]int32
	linkOf []int32 // port index → link index of the link leaving it (-1: none)
	// per switch node: port number → port index, and LID → out port
	swPorts map[host.GUID][]int32
	lft     map[host.GUID][]int16
	caPort  []int32 // CA index → port index
	// the same, dense, for walking: port index → switch index (-1: a CA)
	swOf     []int32
	swPortsD [][]int32
	lftD     [][]int16
	lidToCA  map[int]int32
	// Problems found while joining cabling and tables; paths that hit
	// them are unrouted, the rest still stands.
	Problems []string
}

type portRec struct {
	key    PortKey
	node   string
	sw     bool
	remote int32 // port index, -1 when the far end is unknown
}

// New joins cabled ports and forwarding tables. Every port must name its
// far end; a far end not in ports is an error. Switch ports without a
// table make the paths through them unrouted (listed, not hidden).
func New(ports []Port, lfts []LFT) (*Fabric, error) {
	f := &Fabric{byKey: map[PortKey]int32{}, swPorts: map[host.GUID][]int32{}, lft: map[host.GUID][]int16{}, lidToCA: map[int]int32{}}
	for _, p := range ports {
		if _, dup := f.byKey[p.Key]; dup {
			return nil, fmt.Errorf("port %s (%s) listed twice", p.Key, p.Node)
		}
		f.byKey[p.Key] = int32(len(f.ports))
		f.ports = append(f.ports, portRec{key: p.Key, node: p.Node, sw: p.Switch, remote: -1})
	}
	for i, p := range ports {
		r, ok := f.byKey[p.Remote]
		if !ok {
			return nil, fmt.Errorf("port %s (%s port %d) is cabled to %s, which the fabric does not list", p.Key, p.Node, p.Key.Port, p.Remote)
		}
		if back := ports[r].Remote; back != p.Key {
			return nil, fmt.Errorf("cabling disagrees: %s says its far end is %s, which says its far end is %s", p.Key, p.Remote, back)
		}
		f.ports[i].remote = r
	}
	// directed links, sorted by (from, to) for stable output
	order := make([]int32, len(f.ports))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmpKey(f.ports[a].key, f.ports[b].key)
	})
	f.linkOf = make([]int32, len(f.ports))
	for _, i := range order {
		f.linkOf[i] = int32(len(f.Links))
		f.Links = append(f.Links, Link{From: f.ports[i].key, To: f.ports[f.ports[i].remote].key})
	}
	// CAs: named by description, with the port when a description repeats
	names := map[string]int{}
	for _, p := range ports {
		if !p.Switch {
			names[p.Node]++
		}
	}
	for i, p := range ports {
		if p.Switch {
			sw := f.swPorts[p.Key.GUID]
			for len(sw) <= p.Key.Port {
				sw = append(sw, -1)
			}
			sw[p.Key.Port] = int32(i)
			f.swPorts[p.Key.GUID] = sw
			continue
		}
		name := p.Node
		if names[p.Node] > 1 {
			name = fmt.Sprintf("%s port %d", p.Node, p.Key.Port)
		}
		f.CAs = append(f.CAs, CA{Key: p.Key, Name: name, LID: p.LID})
	}
	slices.SortFunc(f.CAs, func(a, b CA) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmpKey(a.Key, b.Key)) })
	for i, c := range f.CAs {
		f.caPort = append(f.caPort, f.byKey[c.Key])
		if c.LID <= 0 {
			f.Problems = append(f.Problems, fmt.Sprintf("%s has no LID: no traffic can be routed to it", c.Name))
			continue
		}
		if j, dup := f.lidToCA[c.LID]; dup {
			return nil, fmt.Errorf("LID %d is both %s and %s", c.LID, f.CAs[j].Name, c.Name)
		}
		f.lidToCA[c.LID] = int32(i)
	}
	for _, t := range lfts {
		if _, ok := f.swPorts[t.Switch]; !ok {
			continue // a switch with no cabled port here: nothing routes through it
		}
		top := 0
		for l := range t.Out {
			top = max(top, l)
		}
		dense := make([]int16, top+1)
		for i := range dense {
			dense[i] = -1
		}
		for l, p := range t.Out {
			if l >= 0 {
				dense[l] = int16(p)
			}
		}
		f.lft[t.Switch] = dense
	}
	swIdx := map[host.GUID]int32{}
	f.swOf = make([]int32, len(f.ports))
	for i, p := range f.ports {
		f.swOf[i] = -1
		if !p.sw {
			continue
		}
		j, ok := swIdx[p.key.GUID]
		if !ok {
			j = int32(len(f.swPortsD))
			swIdx[p.key.GUID] = j
			f.swPortsD = append(f.swPortsD, f.swPorts[p.key.GUID])
			f.lftD = append(f.lftD, f.lft[p.key.GUID]) // nil: no table
		}
		f.swOf[i] = j
	}
	var missing []string
	for g, sw := range f.swPorts {
		if _, ok := f.lft[g]; !ok {
			missing = append(missing, f.ports[firstPort(sw)].node+" ("+g.String()+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		f.Problems = append(f.Problems, "no forwarding table for switch "+m)
	}
	return f, nil
}

func firstPort(sw []int32) int32 {
	for _, p := range sw {
		if p >= 0 {
			return p
		}
	}
	return 0
}

func cmpKey(a, b PortKey) int {
	return cmp.Or(cmp.Compare(a.GUID, b.GUID), cmp.Compare(a.Port, b.Port))
}

// PortName is how people name a port: `leaf03 port 5`.
func (f *Fabric) PortName(k PortKey) string {
	if i, ok := f.byKey[k]; ok {
		return fmt.Sprintf("%s port %d", f.ports[i].node, k.Port)
	}
	return k.String()
}

// LinkName is `leaf03 port 5 → spine02 port 3`.
func (f *Fabric) LinkName(l int) string {
	return f.PortName(f.Links[l].From) + " → " + f.PortName(f.Links[l].To)
}

// Reverse is the other direction of link l's cable.
func (f *Fabric) Reverse(l int) int {
	from := f.byKey[f.Links[l].From]
	return int(f.linkOf[f.ports[from].remote])
}

// HostLink reports whether link l has a CA at one end.
func (f *Fabric) HostLink(l int) bool {
	return !f.ports[f.byKey[f.Links[l].From]].sw || !f.ports[f.byKey[f.Links[l].To]].sw
}

// CAIndex finds a CA by name.
func (f *Fabric) CAIndex(name string) (int, bool) {
	i, ok := slices.BinarySearchFunc(f.CAs, name, func(c CA, n string) int { return strings.Compare(c.Name, n) })
	return i, ok
}

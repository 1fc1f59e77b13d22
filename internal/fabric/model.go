// Package fabric is the InfiniBand fabric model: what the standard
// infiniband-diags tools (ibnetdiscover, iblinkinfo, ibqueryerrors, sminfo,
// saquery) report about every node, port, link and subnet manager reachable
// from one HCA, parsed into a versioned JSON snapshot; the parsers for those
// tools' outputs; the scan that runs them; and the intended topology a
// fabric is compared with. Judging the fabric lives in package fabriccheck.
//
// Identity is the GUID: nodes by node GUID, ports by PortKey (node GUID and
// port number). Real fabrics give many switches the same factory
// description ("SwitchIB Mellanox Technologies") and many hosts the same
// "HCA-1", so descriptions are for display only (see Names).
package fabric

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// SchemaVersion is bumped on any change that removes or re-types a field.
// Version 2: GUIDs typed, a link's far end by node GUID (End.NodeGUID),
// node vendor/device ids, the tools read (Read), counter read errors.
const SchemaVersion = 2

// NodeType is what a node is.
type NodeType string

// Node types as infiniband-diags names them.
const (
	Switch NodeType = "Switch"
	CA     NodeType = "CA"
	Router NodeType = "Router"
)

// Tool names a diagnostic whose output a snapshot holds.
type Tool string

// The tools a scan runs.
const (
	IBNetDiscover Tool = "ibnetdiscover"
	IBLinkInfo    Tool = "iblinkinfo"
	IBQueryErrors Tool = "ibqueryerrors"
	SMInfo        Tool = "sminfo"
)

// AllTools is what a live scan runs.
var AllTools = []Tool{IBNetDiscover, IBLinkInfo, IBQueryErrors, SMInfo}

// Snapshot is one scan of a fabric.
type Snapshot struct {
	SchemaVersion int       `json:"schema_version"`
	CollectedAt   time.Time `json:"collected_at"`
	// Source says how it was read: the commands run, or the file judged.
	Source string `json:"source"`
	// Read lists the tools whose output this snapshot holds. A rule whose
	// tool was never run says nothing; one whose tool failed is unknown.
	Read  []Tool `json:"read"`
	Nodes []Node `json:"nodes"`
	Ports []Port `json:"ports"`
	SMs   []SM   `json:"subnet_managers"`
	// SMQueryError is set when sminfo could not reach a subnet manager.
	SMQueryError string `json:"sm_query_error,omitempty"`
	// SMNoAnswer is set when sminfo ran and asked, and no subnet manager
	// answered (its query failed or timed out): evidence there is none.
	// Unset with SMQueryError, sminfo could not ask at all (not
	// installed, no local port): the question is open.
	SMNoAnswer bool `json:"sm_no_answer,omitempty"`
	// SMRecordsError is set when saquery SMIR (every SM, standbys too)
	// failed: only the master is known, so a priority clash cannot be seen.
	SMRecordsError string `json:"sm_records_error,omitempty"`
	// CounterError is set when the error counters could not be read
	// (ibqueryerrors failed, or printed an error and exited 0): the
	// counters are unknown, not zero.
	CounterError string `json:"counter_error,omitempty"`
	// IntervalSeconds is the time between the two counter samples when the
	// scan sampled twice; Port.CounterRates are per second over it.
	IntervalSeconds float64 `json:"interval_seconds,omitempty"`
	// Errors lists what could not be read; the rest still stands.
	Errors []string `json:"errors,omitempty"`
	// Unreadable lists the tool output lines that could not be read (a
	// node description holding the tool's own syntax, a damaged line):
	// what they describe is unknown, never guessed, and nothing else.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Has reports whether the snapshot holds a tool's output.
func (s *Snapshot) Has(t Tool) bool { return slices.Contains(s.Read, t) }

// Node is a switch, CA or router.
type Node struct {
	GUID         host.GUID `json:"guid"`
	Type         NodeType  `json:"type"`
	Desc         string    `json:"desc"` // node description ("gpu017 HCA-1", "SwitchIB Mellanox Technologies")
	Ports        int       `json:"ports"`
	SysImageGUID host.GUID `json:"sys_image_guid,omitempty"`
	LID          int       `json:"lid,omitempty"` // a switch's base LID (port 0)
	// VendorID and DeviceID are the IB vendid/devid ibnetdiscover prints
	// (0x2c9, 0xcb20): with linkrate.ModelOf they say what the node can do.
	VendorID string `json:"vendor_id,omitempty"`
	DeviceID string `json:"device_id,omitempty"`
}

// PortKey identifies a physical port: its node's GUID and the port number.
type PortKey struct {
	Node host.GUID `json:"node_guid"`
	Port int       `json:"port"`
}

func (k PortKey) String() string { return fmt.Sprintf("%s port %d", k.Node, k.Port) }

// Port is one physical port and what it is cabled to.
type Port struct {
	NodeGUID host.GUID `json:"node_guid"`
	NodeDesc string    `json:"node_desc"`
	NodeType NodeType  `json:"node_type"`
	Num      int       `json:"port"`
	PortGUID host.GUID `json:"port_guid,omitempty"`
	LID      int       `json:"lid"` // the port's LID (a switch's base LID for its ports)
	// State and PhysState are unknown (zero; absent and "" in the JSON)
	// when the source does not say (an ibnetdiscover dump lists linked
	// ports without their state); spelt as iblinkinfo prints them.
	State     portstate.State `json:"state,omitempty"`
	PhysState portstate.Phys  `json:"phys_state"`
	// Width ("4X") and Speed ("HDR") are active values; LaneGbps is the
	// signalling rate per lane iblinkinfo prints (53.125 for HDR).
	Width    string  `json:"width,omitempty"`
	Speed    string  `json:"speed,omitempty"`
	LaneGbps float64 `json:"lane_gbps,omitempty"`
	RateGbps float64 `json:"rate_gbps,omitempty"` // width × nominal lane rate (4X HDR = 200)
	// CouldBeWidth/CouldBeSpeed are set when iblinkinfo says the link could
	// run faster. It is a hint: ibsim, and some real devices, advertise
	// every width and speed; fabriccheck caps it by the device model.
	CouldBeWidth string `json:"could_be_width,omitempty"`
	CouldBeSpeed string `json:"could_be_speed,omitempty"`
	Remote       *End   `json:"remote,omitempty"`
	// Counters are the PortCounters ibqueryerrors reported non-zero.
	Counters map[string]uint64 `json:"counters,omitempty"`
	// CounterError is set when this port's PMA did not answer (a dropped
	// MAD): its counters are unknown, not zero; other ports are read.
	CounterError string             `json:"counter_error,omitempty"`
	CounterRates map[string]float64 `json:"counter_rates_per_s,omitempty"`
}

// Key is the port's identity.
func (p *Port) Key() PortKey { return PortKey{p.NodeGUID, p.Num} }

// End is the far end of a link.
type End struct {
	// NodeGUID is the far node; zero when no source could tell it.
	NodeGUID host.GUID `json:"node_guid"`
	// PortGUID is what iblinkinfo --line prints for the far end (a CA's
	// port GUID, a switch's node GUID).
	PortGUID host.GUID `json:"port_guid,omitempty"`
	NodeDesc string    `json:"node_desc"`
	Port     int       `json:"port"`
	LID      int       `json:"lid"`
}

// Key is the far port's identity.
func (e *End) Key() PortKey { return PortKey{e.NodeGUID, e.Port} }

// SM is one subnet manager.
type SM struct {
	LID      int       `json:"lid"`
	GUID     host.GUID `json:"guid"`
	Priority int       `json:"priority"`
	State    string    `json:"state"` // MASTER, STANDBY, DISCOVERING, NOTACTIVE
	ActCount uint64    `json:"activity_count,omitempty"`
}

// Linked reports whether the port has a physical link.
func (p Port) Linked() bool { return p.PhysState == portstate.LinkUp && p.Remote != nil }

// Link is a pair of cabled ports, A before B in a stable order (the CA end
// first; else the lower key).
type Link struct {
	A, B *Port
}

// Class is the kind of link for peer comparison: "CA↔Switch",
// "Switch↔Switch", "CA↔CA".
func (l Link) Class() string {
	a, b := cmp.Or(l.A.NodeType, "?"), cmp.Or(l.B.NodeType, "?")
	if b < a {
		a, b = b, a
	}
	return string(a) + "↔" + string(b)
}

// Links pairs every linked port with its far end, once per cable, by
// PortKey; a far end the source did not list (a CA seen only from its
// switch) is represented from what the near end says about it.
func (s *Snapshot) Links() []Link {
	byKey := map[PortKey]*Port{}
	for i := range s.Ports {
		p := &s.Ports[i]
		byKey[p.Key()] = p
	}
	nodes := map[host.GUID]*Node{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].GUID] = &s.Nodes[i]
	}
	seen := map[*Port]bool{}
	var out []Link
	for i := range s.Ports {
		p := &s.Ports[i]
		if !p.Linked() || seen[p] {
			continue
		}
		r := byKey[p.Remote.Key()]
		if r == nil {
			r = &Port{NodeGUID: p.Remote.NodeGUID, NodeDesc: p.Remote.NodeDesc, Num: p.Remote.Port, LID: p.Remote.LID, PortGUID: p.Remote.PortGUID,
				State: p.State, PhysState: p.PhysState, Width: p.Width, Speed: p.Speed, LaneGbps: p.LaneGbps, RateGbps: p.RateGbps}
			if n := nodes[p.Remote.NodeGUID]; n != nil {
				r.NodeType = n.Type
			}
		}
		seen[p], seen[r] = true, true
		a, b := p, r
		if b.NodeType == CA && a.NodeType != CA || (a.NodeType == b.NodeType && keyLess(b.Key(), a.Key())) {
			a, b = b, a
		}
		out = append(out, Link{A: a, B: b})
	}
	slices.SortFunc(out, func(x, y Link) int {
		return cmp.Or(cmp.Compare(x.A.NodeDesc, y.A.NodeDesc), cmp.Compare(x.A.NodeGUID, y.A.NodeGUID), cmp.Compare(x.A.Num, y.A.Num))
	})
	return out
}

func keyLess(a, b PortKey) bool { return a.Node < b.Node || a.Node == b.Node && a.Port < b.Port }

// Node returns the node with this GUID, or nil.
func (s *Snapshot) Node(guid host.GUID) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].GUID == guid {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Resolve gives every port and far end its node GUID and type from what
// the snapshot knows: the node list, port GUIDs, and (for iblinkinfo's
// default mode, which prints no GUID for the far end) the far end's LID
// and port number. A port whose node GUID no source gives keeps its port
// GUID as identity. Nodes missing from the list are added from the ports.
func (s *Snapshot) Resolve() {
	nodeOf := map[host.GUID]host.GUID{} // port GUID → node GUID
	nodes := map[host.GUID]*Node{}
	for i, n := range s.Nodes {
		nodeOf[n.GUID] = n.GUID // a switch's port GUID is its node GUID
		nodes[n.GUID] = &s.Nodes[i]
	}
	for _, p := range s.Ports {
		if !p.PortGUID.IsZero() && !p.NodeGUID.IsZero() {
			nodeOf[p.PortGUID] = p.NodeGUID
		}
		if p.Remote != nil && !p.Remote.PortGUID.IsZero() && !p.Remote.NodeGUID.IsZero() {
			nodeOf[p.Remote.PortGUID] = p.Remote.NodeGUID
		}
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.NodeGUID.IsZero() {
			if g, ok := nodeOf[p.PortGUID]; ok {
				p.NodeGUID = g
			} else {
				p.NodeGUID = p.PortGUID
			}
		}
	}
	// Without a node list, a GUID that several ports share is a switch.
	count := map[host.GUID]int{}
	for _, p := range s.Ports {
		count[p.NodeGUID]++
	}
	byLIDPort := map[[2]int]*Port{}
	switchOfLID := map[int]host.GUID{} // all of a switch's ports share its LID
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.NodeType == "" {
			if n := nodes[p.NodeGUID]; n != nil {
				p.NodeType = n.Type
			} else if count[p.NodeGUID] > 1 {
				p.NodeType = Switch
			}
		}
		if p.LID > 0 {
			byLIDPort[[2]int{p.LID, p.Num}] = p
			if p.NodeType == Switch {
				switchOfLID[p.LID] = p.NodeGUID
			}
		}
	}
	for _, n := range s.Nodes {
		if n.Type == Switch && n.LID > 0 {
			switchOfLID[n.LID] = n.GUID
		}
	}
	for i := range s.Ports {
		r := s.Ports[i].Remote
		if r == nil || !r.NodeGUID.IsZero() {
			continue
		}
		if g, ok := nodeOf[r.PortGUID]; ok {
			r.NodeGUID = g
		} else if q := byLIDPort[[2]int{r.LID, r.Port}]; q != nil && r.LID > 0 {
			r.NodeGUID = q.NodeGUID
		} else if g, ok := switchOfLID[r.LID]; ok && r.LID > 0 {
			r.NodeGUID = g // a switch port the output did not list
		} else {
			r.NodeGUID = r.PortGUID
		}
	}
	// Ports seen only as far ends of a CA are CAs when nothing says more.
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.NodeType == "" {
			p.NodeType = CA
		}
	}
	added := map[host.GUID]int{}
	for _, p := range s.Ports {
		if nodes[p.NodeGUID] != nil || p.NodeGUID.IsZero() {
			continue
		}
		i, ok := added[p.NodeGUID]
		if !ok {
			s.Nodes = append(s.Nodes, Node{GUID: p.NodeGUID, Type: p.NodeType, Desc: p.NodeDesc, LID: switchLID(p)})
			i = len(s.Nodes) - 1
			added[p.NodeGUID] = i
		}
		s.Nodes[i].Ports = max(s.Nodes[i].Ports, p.Num)
	}
}

func switchLID(p Port) int {
	if p.NodeType == Switch {
		return p.LID
	}
	return 0
}

// Names turns identities into what people read: the node description,
// and when several nodes share it, the description with GUID and LID
// ("SwitchIB Mellanox Technologies [0x7cfe900300a5f7c0 lid 12] port 11").
type Names struct {
	nodes map[host.GUID]nameInfo
	dup   map[string]bool
}

type nameInfo struct {
	desc string
	lid  int
}

// Names indexes the snapshot's descriptions.
func (s *Snapshot) Names() *Names {
	n := &Names{nodes: map[host.GUID]nameInfo{}, dup: map[string]bool{}}
	add := func(g host.GUID, desc string, lid int) {
		if g.IsZero() {
			return
		}
		if cur, ok := n.nodes[g]; ok {
			if cur.lid == 0 && lid > 0 {
				cur.lid = lid
				n.nodes[g] = cur
			}
			return
		}
		n.nodes[g] = nameInfo{desc, lid}
	}
	for _, nd := range s.Nodes {
		add(nd.GUID, nd.Desc, nd.LID)
	}
	for _, p := range s.Ports {
		add(p.NodeGUID, p.NodeDesc, p.LID)
		if p.Remote != nil {
			add(p.Remote.NodeGUID, p.Remote.NodeDesc, p.Remote.LID)
		}
	}
	by := map[string]int{}
	for _, i := range n.nodes {
		by[i.desc]++
	}
	for d, c := range by {
		n.dup[d] = c > 1
	}
	return n
}

// ByDesc lists the GUIDs of the nodes carrying a description.
func (n *Names) ByDesc(desc string) []host.GUID {
	var out []host.GUID
	for g, i := range n.nodes {
		if i.desc == desc {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// Known reports whether the snapshot knows a node by this GUID.
func (n *Names) Known(g host.GUID) bool { _, ok := n.nodes[g]; return ok }

// Node is how a node is named.
func (n *Names) Node(g host.GUID) string {
	i, ok := n.nodes[g]
	if !ok {
		return g.String()
	}
	desc := i.desc
	if desc == "" {
		desc = "(no description)"
	}
	if !n.dup[i.desc] && i.desc != "" {
		return desc
	}
	if i.lid > 0 {
		return fmt.Sprintf("%s [%s lid %d]", desc, g, i.lid)
	}
	return fmt.Sprintf("%s [%s]", desc, g)
}

// Port is how a port is named: "leaf03 port 14".
func (n *Names) Port(k PortKey) string { return fmt.Sprintf("%s port %d", n.Node(k.Node), k.Port) }

// PortOf names a port, also one whose node GUID no source gave (a far
// end iblinkinfo's default mode shows only by description and LID).
func (n *Names) PortOf(p *Port) string {
	if p.NodeGUID.IsZero() {
		return fmt.Sprintf("%s [GUID unknown, lid %d] port %d", p.NodeDesc, p.LID, p.Num)
	}
	return n.Port(p.Key())
}

// Link is "gpu017 HCA-1 port 1 ↔ leaf03 port 14".
func (n *Names) Link(l Link) string { return n.PortOf(l.A) + " ↔ " + n.PortOf(l.B) }

// Package fabric is the InfiniBand fabric model: what the standard
// infiniband-diags tools (ibnetdiscover, iblinkinfo, ibqueryerrors, sminfo,
// saquery) report about every node, port, link and subnet manager reachable
// from one HCA, parsed into a versioned JSON snapshot; the parsers for those
// tools' outputs; the scan that runs them; and the intended topology a
// fabric is compared with. Judging the fabric lives in package fabriccheck.
package fabric

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// SchemaVersion is bumped on any change that removes or re-types a field.
const SchemaVersion = 1

// Snapshot is one scan of a fabric.
type Snapshot struct {
	SchemaVersion int       `json:"schema_version"`
	CollectedAt   time.Time `json:"collected_at"`
	// Source says how it was read: the commands run, or "file".
	Source string `json:"source"`
	Nodes  []Node `json:"nodes"`
	Ports  []Port `json:"ports"`
	SMs    []SM   `json:"subnet_managers"`
	// SMQueryError is set when sminfo could not reach a subnet manager.
	SMQueryError string `json:"sm_query_error,omitempty"`
	// IntervalSeconds is the time between the two counter samples when the
	// scan sampled twice; Port.CounterRates are per second over it.
	IntervalSeconds float64 `json:"interval_seconds,omitempty"`
	// Errors lists what could not be read; the rest still stands.
	Errors []string `json:"errors,omitempty"`
}

// Node is a switch, CA or router.
type Node struct {
	GUID         string `json:"guid"` // node GUID, 0x-prefixed, 16 hex digits
	Type         string `json:"type"` // Switch, CA, Router
	Desc         string `json:"desc"` // node description ("gpu017 HCA-1", "leaf03")
	Ports        int    `json:"ports"`
	SysImageGUID string `json:"sys_image_guid,omitempty"`
	LID          int    `json:"lid,omitempty"` // a switch's base LID (port 0)
}

// Port is one physical port and what it is cabled to.
type Port struct {
	NodeGUID  string `json:"node_guid"`
	NodeDesc  string `json:"node_desc"`
	NodeType  string `json:"node_type"`
	Num       int    `json:"port"`
	PortGUID  string `json:"port_guid,omitempty"`
	LID       int    `json:"lid"` // the port's LID (a switch's base LID for its ports)
	State     string `json:"state"`
	PhysState string `json:"phys_state"`
	// Width ("4X") and Speed ("HDR") are active values; LaneGbps is the
	// signalling rate per lane iblinkinfo prints (53.125 for HDR).
	Width    string  `json:"width,omitempty"`
	Speed    string  `json:"speed,omitempty"`
	LaneGbps float64 `json:"lane_gbps,omitempty"`
	RateGbps float64 `json:"rate_gbps,omitempty"` // width × nominal lane rate (4X HDR = 200)
	// CouldBeWidth/CouldBeSpeed are set when iblinkinfo says the link could
	// run faster: both ends support (and enable) more than it trained at.
	CouldBeWidth string `json:"could_be_width,omitempty"`
	CouldBeSpeed string `json:"could_be_speed,omitempty"`
	Remote       *End   `json:"remote,omitempty"`
	// Counters are the PortCounters ibqueryerrors reported non-zero.
	Counters     map[string]uint64  `json:"counters,omitempty"`
	CounterRates map[string]float64 `json:"counter_rates_per_s,omitempty"`
}

// End is the far end of a link.
type End struct {
	GUID     string `json:"guid"` // port GUID as iblinkinfo prints it
	NodeDesc string `json:"node_desc"`
	Port     int    `json:"port"`
	LID      int    `json:"lid"`
}

// SM is one subnet manager.
type SM struct {
	LID      int    `json:"lid"`
	GUID     string `json:"guid"`
	Priority int    `json:"priority"`
	State    string `json:"state"` // MASTER, STANDBY, DISCOVERING, NOTACTIVE
	ActCount uint64 `json:"activity_count,omitempty"`
}

// Name is how findings name a port: `gpu017 HCA-1 port 1`.
func (p Port) Name() string { return fmt.Sprintf("%s port %d", p.NodeDesc, p.Num) }

// Linked reports whether the port has a physical link.
func (p Port) Linked() bool { return p.PhysState == "LinkUp" && p.Remote != nil }

// Link is a pair of cabled ports, A before B in a stable order.
type Link struct {
	A, B *Port
}

// Name is `gpu017 HCA-1 port 1 ↔ leaf03 port 14`.
func (l Link) Name() string { return l.A.Name() + " ↔ " + l.B.Name() }

// Links pairs every linked port with its far end, once per cable; a far end
// the scan did not list (a CA seen only from its switch) is represented
// from what the near end says about it.
func (s *Snapshot) Links() []Link {
	byEnd := map[string]*Port{}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.PortGUID != "" {
			byEnd[fmt.Sprintf("%s/%d", p.PortGUID, p.Num)] = p
		}
		byEnd[fmt.Sprintf("%s/%d", p.NodeGUID, p.Num)] = p
	}
	seen := map[*Port]bool{}
	var out []Link
	for i := range s.Ports {
		p := &s.Ports[i]
		if !p.Linked() || seen[p] {
			continue
		}
		r := byEnd[fmt.Sprintf("%s/%d", p.Remote.GUID, p.Remote.Port)]
		if r == nil {
			r = &Port{NodeGUID: p.Remote.GUID, NodeDesc: p.Remote.NodeDesc, Num: p.Remote.Port, LID: p.Remote.LID,
				State: p.State, PhysState: p.PhysState, Width: p.Width, Speed: p.Speed, LaneGbps: p.LaneGbps, RateGbps: p.RateGbps}
		}
		seen[p], seen[r] = true, true
		a, b := p, r
		if b.NodeType == "CA" && a.NodeType != "CA" || (a.NodeType == b.NodeType && b.Name() < a.Name()) {
			a, b = b, a
		}
		out = append(out, Link{A: a, B: b})
	}
	slices.SortFunc(out, func(x, y Link) int { return cmp.Compare(x.Name(), y.Name()) })
	return out
}

// Node returns the node with this GUID, or nil.
func (s *Snapshot) Node(guid string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].GUID == guid {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Load reads a fabric snapshot file.
func Load(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Decode reads a snapshot and refuses a schema it does not know.
func Decode(r io.Reader) (*Snapshot, error) {
	var s Snapshot
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("not a fabric snapshot: %w", err)
	}
	if s.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("fabric snapshot schema_version %d, this rdmalab reads %d", s.SchemaVersion, SchemaVersion)
	}
	return &s, nil
}

// Encode writes the snapshot as indented JSON.
func (s *Snapshot) Encode(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}

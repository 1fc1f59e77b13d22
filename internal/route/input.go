package route

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
)

// FromSnapshot joins a fabric scan (GUIDs, port numbers and LIDs for every
// cabled port) with forwarding tables. This is the exact join: nothing is
// matched by name.
func FromSnapshot(s *fabric.Snapshot, lfts []LFT) (*Fabric, error) {
	switches := map[host.GUID]bool{}
	for _, t := range lfts {
		switches[t.Switch] = true
	}
	for _, n := range s.Nodes {
		if n.Type == fabric.Switch && !n.GUID.IsZero() {
			switches[n.GUID] = true
		}
	}
	names := s.Names()
	var ports []Port
	seen := map[PortKey]bool{}
	add := func(p Port) {
		if !seen[p.Key] {
			seen[p.Key] = true
			ports = append(ports, p)
		}
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if !p.Linked() {
			continue
		}
		// Switch ports by the switch's GUID, CA ports by their own port
		// GUID: the identities the forwarding tables use.
		g := p.PortGUID
		if g.IsZero() || p.NodeType == fabric.Switch {
			g = p.NodeGUID
		}
		if g.IsZero() {
			return nil, fmt.Errorf("%s: no GUID", names.PortOf(p))
		}
		rg := p.Remote.PortGUID
		if rg.IsZero() {
			rg = p.Remote.NodeGUID
		}
		if rg.IsZero() {
			return nil, fmt.Errorf("%s: far end has no GUID", names.PortOf(p))
		}
		sw := p.NodeType == fabric.Switch || switches[g]
		near := PortKey{g, p.Num}
		far := PortKey{rg, p.Remote.Port}
		add(Port{Key: near, Node: names.Node(p.NodeGUID), Switch: sw, LID: p.LID, Remote: far})
		// a far end the scan did not list is known from this side
		add(Port{Key: far, Node: p.Remote.NodeDesc, Switch: switches[rg], LID: p.Remote.LID, Remote: near})
	}
	return New(ports, lfts)
}

// FromTopology joins a topology file (an ibnetdiscover dump or an ibsim
// netlist, which name ports by node description) with forwarding tables,
// whose comments give each switch's GUID and each CA port's GUID and LID by
// the same descriptions. Descriptions must therefore be unique; when they
// are not (real fabrics often repeat a switch's factory description), the
// error says so and a fabric snapshot is the way.
func FromTopology(t *fabric.Topology, lfts []LFT) (*Fabric, error) {
	types := map[string]fabric.NodeType{}
	dupNodes := map[string]bool{}
	for _, n := range t.Nodes {
		if _, dup := types[n.Desc]; dup {
			dupNodes[n.Desc] = true
		}
		types[n.Desc] = n.Type
	}
	swGUID := map[string]host.GUID{}
	caDest := map[string]map[host.GUID]int{} // name → port GUID → LID
	for _, tb := range lfts {
		if g, ok := swGUID[tb.Name]; ok && g != tb.Switch {
			dupNodes[tb.Name] = true
		}
		swGUID[tb.Name] = tb.Switch
		for lid, d := range tb.Dest {
			if d.Type != "Channel Adapter" {
				continue
			}
			if caDest[d.Name] == nil {
				caDest[d.Name] = map[host.GUID]int{}
			}
			caDest[d.Name][d.PortGUID] = lid
		}
	}
	// how many cabled ports each CA has in the topology
	caPorts := map[string]int{}
	for _, l := range t.Links {
		for _, e := range []fabric.TopoEnd{l.A, l.B} {
			if types[e.Node] == "CA" {
				caPorts[e.Node]++
			}
		}
	}
	var problems []string
	keyOf := func(e fabric.TopoEnd) (PortKey, bool, int, bool) {
		if dupNodes[e.Node] {
			problems = append(problems, fmt.Sprintf("%q names more than one node", e.Node))
			return PortKey{}, false, 0, false
		}
		switch types[e.Node] {
		case "Switch":
			g, ok := swGUID[e.Node]
			if !ok {
				problems = append(problems, fmt.Sprintf("switch %q has no forwarding table in the dump", e.Node))
			}
			return PortKey{g, e.Port}, true, 0, ok
		case "CA":
			d := caDest[e.Node]
			if len(d) == 0 {
				problems = append(problems, fmt.Sprintf("CA %q is no switch's destination in the forwarding tables", e.Node))
				return PortKey{}, false, 0, false
			}
			if len(d) > 1 || caPorts[e.Node] > 1 {
				problems = append(problems, fmt.Sprintf("CA %q has %d cabled ports and %d port GUIDs in the tables: which is which is unknown by name", e.Node, caPorts[e.Node], len(d)))
				return PortKey{}, false, 0, false
			}
			for g, lid := range d {
				return PortKey{g, e.Port}, false, lid, true
			}
		}
		problems = append(problems, fmt.Sprintf("%q is not a node of the topology", e.Node))
		return PortKey{}, false, 0, false
	}
	var ports []Port
	for _, l := range t.Links {
		a, aSw, aLID, okA := keyOf(l.A)
		b, bSw, bLID, okB := keyOf(l.B)
		if !okA || !okB {
			continue
		}
		ports = append(ports,
			Port{Key: a, Node: l.A.Node, Switch: aSw, LID: aLID, Remote: b},
			Port{Key: b, Node: l.B.Node, Switch: bSw, LID: bLID, Remote: a})
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		problems = slices.Compact(problems)
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return nil, fmt.Errorf("cannot join the topology with the forwarding tables by node description: %s (a fabric snapshot from 'rdmalab fabric scan --output json' joins by GUID)", strings.Join(problems, "; "))
	}
	return New(ports, lfts)
}

// ScanLFTs reads every switch's forwarding table from the live fabric with
// dump_fts (infiniband-diags' successor of dump_lfts.sh).
func ScanLFTs(ctx context.Context, r fabric.Runner) ([]LFT, error) {
	out, err := r.Run(ctx, "dump_fts")
	if err != nil {
		return nil, fmt.Errorf("read forwarding tables: %w", err)
	}
	lfts, err := ParseLFTs(bytes.NewReader(out.Stdout))
	if err != nil {
		return nil, err
	}
	if len(lfts) == 0 {
		return nil, fmt.Errorf("dump_fts printed no forwarding table")
	}
	return lfts, nil
}

package fabriccheck

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
)

// AmbiguousNameError is a plan that names a node by a description several
// nodes of the fabric carry: which one it means cannot be known.
type AmbiguousNameError struct {
	Name  string
	GUIDs []host.GUID
	Line  int
}

func (e *AmbiguousNameError) Error() string {
	var gs []string
	for i, g := range e.GUIDs {
		if i == 4 {
			gs = append(gs, "…")
			break
		}
		gs = append(gs, g.String())
	}
	where := ""
	if e.Line > 0 {
		where = fmt.Sprintf("line %d: ", e.Line)
	}
	return fmt.Sprintf("%sthe plan names node %q, but %d nodes in the fabric are called that (%s): name them by guid in the plan",
		where, e.Name, len(e.GUIDs), strings.Join(gs, ", "))
}

// planEnd is a plan's cable end resolved to the fabric.
type planEnd struct {
	key   fabric.PortKey
	found bool // the node is in the fabric
	name  string
	node  string // the node alone, for "not found"
}

// Diff compares a scanned fabric with the intended topology by port
// identity: an end the plan gives by GUID is that node's port; an end
// given by name is the one node of the fabric with that description (a
// name several nodes share is an *AmbiguousNameError). It reports planned
// cables that are down, moved, or whose node is missing, and cables
// nobody planned.
func Diff(s *fabric.Snapshot, plan *fabric.Topology) ([]check.Finding, error) {
	names := s.Names()
	nodeOfPort := map[host.GUID]host.GUID{}
	for _, p := range s.Ports {
		if !p.PortGUID.IsZero() {
			nodeOfPort[p.PortGUID] = p.NodeGUID
		}
	}
	resolve := func(e fabric.TopoEnd, line int) (planEnd, error) {
		pe := planEnd{name: e.String(), node: e.Node}
		if pe.node == "" {
			pe.node = e.GUID.String()
		}
		if !e.GUID.IsZero() {
			g := e.GUID
			if !names.Known(g) {
				if n, ok := nodeOfPort[g]; ok {
					g = n
				}
			}
			pe.key, pe.found = fabric.PortKey{Node: g, Port: e.Port}, names.Known(g)
			if pe.found {
				pe.name = names.Port(pe.key)
			}
			return pe, nil
		}
		gs := names.ByDesc(e.Node)
		switch len(gs) {
		case 0:
			return pe, nil
		case 1:
			pe.key, pe.found = fabric.PortKey{Node: gs[0], Port: e.Port}, true
			return pe, nil
		}
		return pe, &AmbiguousNameError{Name: e.Node, GUIDs: gs, Line: line}
	}

	found := map[fabric.PortKey]fabric.PortKey{}
	ports := map[fabric.PortKey]fabric.Port{}
	for _, p := range s.Ports {
		ports[p.Key()] = p
	}
	links := s.Links()
	for _, l := range links {
		a, b := l.A.Key(), l.B.Key()
		found[a], found[b] = b, a
	}
	type planned struct{ a, b planEnd }
	var plans []planned
	inPlan := map[fabric.PortKey]bool{}
	for _, l := range plan.Links {
		a, err := resolve(l.A, l.Line)
		if err != nil {
			return nil, err
		}
		b, err := resolve(l.B, l.Line)
		if err != nil {
			return nil, err
		}
		plans = append(plans, planned{a, b})
		if a.found {
			inPlan[a.key] = true
		}
		if b.found {
			inPlan[b.key] = true
		}
	}

	var fs []check.Finding
	ok := 0
	for _, pl := range plans {
		a, b := pl.a, pl.b
		subject := a.name + " ↔ " + b.name
		if a.found && b.found {
			if got, linked := found[a.key]; linked && got == b.key {
				ok++
				continue
			}
		}
		var absent []string
		for _, e := range []planEnd{a, b} {
			if !e.found {
				absent = append(absent, e.node)
			}
		}
		if len(absent) > 0 && !a.found && !b.found {
			fs = append(fs, find(missingEntry, check.Fail, subject,
				"planned, but %s not found in the fabric", strings.Join(absent, " and ")))
			continue
		}
		var moved []string
		var ev []check.Evidence
		for _, e := range []planEnd{a, b} {
			if !e.found {
				continue
			}
			if got, linked := found[e.key]; linked {
				moved = append(moved, fmt.Sprintf("%s ↔ %s", names.Port(e.key), names.Port(got)))
				ev = append(ev, check.Evidence{What: names.Port(e.key), Value: fmt.Sprintf("cabled to %s (GUID %s port %d)", names.Port(got), got.Node, got.Port), Source: "iblinkinfo"})
			}
		}
		if len(moved) > 0 {
			f := find(miswiredEntry, check.Fail, subject, "planned, but found %s", strings.Join(moved, " and "))
			f.Evidence = ev
			fs = append(fs, f)
			continue
		}
		unreachable := ""
		if len(absent) == 1 {
			unreachable = "; " + absent[0] + " is not reachable through it"
		}
		f := find(portDownEntry, check.Fail, subject, "planned, but not linked%s", unreachable)
		var seen []*fabric.Port
		for _, e := range []planEnd{a, b} {
			if p, ok := ports[e.key]; ok && e.found {
				f.Evidence = append(f.Evidence, check.Evidence{What: names.Port(e.key), Value: fmt.Sprintf("GUID %s, %s/%s", p.NodeGUID, p.State, p.PhysState), Source: "iblinkinfo"})
				seen = append(seen, &p)
			}
		}
		// ibportstate enables switch ports only.
		fs = append(fs, filled(f, switchPorts(seen)...))
	}
	for _, l := range links {
		if inPlan[l.A.Key()] || inPlan[l.B.Key()] {
			continue // a planned cable found elsewhere is reported as miswired
		}
		fs = append(fs, find(extraEntry, check.Warn, names.Link(l), "linked, but not in the plan"))
	}
	if ok == len(plan.Links) {
		fs = append(fs, find(miswiredEntry, check.Pass, "plan", "all %d planned cables found where planned", ok))
	}
	return fs, nil
}

package fabriccheck

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

// Diff compares a scanned fabric with the intended topology, by node
// description and port: planned cables that are down, moved, or whose node
// is missing, and cables nobody planned.
func Diff(s *fabric.Snapshot, plan *fabric.Topology) []check.Finding {
	found := map[fabric.TopoEnd]fabric.TopoEnd{}
	ports := map[fabric.TopoEnd]fabric.Port{}
	present := map[string]bool{}
	for _, n := range s.Nodes {
		present[n.Desc] = true
	}
	for _, p := range s.Ports {
		present[p.NodeDesc] = true
		ports[fabric.TopoEnd{Node: p.NodeDesc, Port: p.Num}] = p
	}
	for _, l := range s.Links() {
		a, b := fabric.TopoEnd{Node: l.A.NodeDesc, Port: l.A.Num}, fabric.TopoEnd{Node: l.B.NodeDesc, Port: l.B.Num}
		found[a], found[b] = b, a
		present[b.Node] = true
	}
	planned := map[fabric.TopoEnd]bool{}
	for _, l := range plan.Links {
		planned[l.A], planned[l.B] = true, true
	}

	var fs []check.Finding
	ok := 0
	for _, l := range plan.Links {
		a, b := l.A, l.B
		subject := a.String() + " ↔ " + b.String()
		if got, linked := found[a]; linked && got == b {
			ok++
			continue
		}
		var absent []string
		for _, n := range []string{a.Node, b.Node} {
			if !present[n] {
				absent = append(absent, n)
			}
		}
		_, knowA := ports[a]
		_, knowB := ports[b]
		if len(absent) == 2 || (len(absent) == 1 && !knowA && !knowB) {
			fs = append(fs, find("fabric.topology.missing", check.Fail, subject,
				"planned, but %s not found in the fabric", strings.Join(absent, " and ")))
			continue
		}
		var moved []string
		var ev []check.Evidence
		for _, e := range []fabric.TopoEnd{a, b} {
			if got, linked := found[e]; linked {
				moved = append(moved, fmt.Sprintf("%s ↔ %s", e, got))
				ev = append(ev, check.Evidence{What: e.String(), Value: "cabled to " + got.String(), Source: "iblinkinfo"})
			}
		}
		if len(moved) > 0 {
			f := find("fabric.topology.miswired", check.Fail, subject, "planned, but found %s", strings.Join(moved, " and "))
			f.Evidence = ev
			fs = append(fs, f)
			continue
		}
		unreachable := ""
		if len(absent) == 1 {
			unreachable = "; " + absent[0] + " is not reachable through it"
		}
		f := find("fabric.port.down", check.Fail, subject, "planned, but not linked%s", unreachable)
		for _, e := range []fabric.TopoEnd{a, b} {
			if p, ok := ports[e]; ok {
				f.Evidence = append(f.Evidence, check.Evidence{What: e.String(), Value: p.State + "/" + p.PhysState, Source: "iblinkinfo"})
			}
		}
		fs = append(fs, f)
	}
	for _, l := range s.Links() {
		a, b := fabric.TopoEnd{Node: l.A.NodeDesc, Port: l.A.Num}, fabric.TopoEnd{Node: l.B.NodeDesc, Port: l.B.Num}
		if planned[a] || planned[b] {
			continue // a planned cable found elsewhere is reported as miswired
		}
		fs = append(fs, find("fabric.topology.extra", check.Warn, l.Name(), "linked, but not in the plan"))
	}
	if ok == len(plan.Links) {
		fs = append(fs, find("fabric.topology.miswired", check.Pass, "plan", "all %d planned cables found where planned", ok))
	}
	return fs
}

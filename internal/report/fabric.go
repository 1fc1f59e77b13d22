package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Fabric is the ten-second summary of a fabric: what is there, the subnet
// manager, link rates by count, then the worst links first. Nodes are
// named by description, with GUID and LID where descriptions collide.
func Fabric(w io.Writer, s *fabric.Snapshot, fs []check.Finding) {
	names := s.Names()
	types := map[fabric.NodeType]int{}
	for _, n := range s.Nodes {
		types[n.Type]++
	}
	links := s.Links()
	when := "saved output"
	if !s.CollectedAt.IsZero() {
		when = s.CollectedAt.Format("2006-01-02 15:04 MST")
	}
	fmt.Fprintf(w, "Fabric: %d switch(es), %d CA(s), %d link(s), %d port(s) · %s\n", types[fabric.Switch], types[fabric.CA], len(links), len(s.Ports), when)
	if s.Has(fabric.SMInfo) {
		fmt.Fprintf(w, "Subnet manager: %s\n", userfile.Line(smText(s, names)))
	}

	rates := map[string]int{}
	for _, l := range links {
		rates[linkRate(l.A)]++
	}
	var keys []string
	for k := range rates {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d at %s", rates[k], k))
	}
	fmt.Fprintf(w, "Links: %s\n", orNone(strings.Join(parts, ", ")))
	if fs != nil {
		c := check.Count(fs)
		fmt.Fprintf(w, "Checks: %d fail · %d warn · %d unknown · %d pass\n", c[check.Fail], c[check.Warn], c[check.Unknown], c[check.Pass])
	}
	fmt.Fprintln(w)

	// Worst links: those a finding names, slowest first.
	bad := map[string]string{}
	for _, f := range fs {
		if (f.Outcome == check.Fail || f.Outcome == check.Warn) && strings.HasPrefix(f.Check, "fabric.link.") {
			what := strings.TrimPrefix(f.Check, "fabric.link.")
			if prev := bad[f.Subject]; prev != "" {
				what = prev + ", " + what
			}
			bad[f.Subject] = what
		}
	}
	var worst []fabric.Link
	for _, l := range links {
		if _, ok := bad[names.Link(l)]; ok {
			worst = append(worst, l)
		}
	}
	slices.SortStableFunc(worst, func(a, b fabric.Link) int { return cmp.Compare(a.A.RateGbps, b.A.RateGbps) })
	if len(worst) > 0 {
		t := newTable(w, "Worst links first")
		t.AppendHeader(table.Row{"Link", "Now", "Problem"})
		for _, l := range worst {
			t.AppendRow(table.Row{names.Link(l), linkRate(l.A), bad[names.Link(l)]})
		}
		t.Render()
		fmt.Fprintln(w)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "could not read: %s\n", e)
	}
}

// FabricLinks lists every link: both ends, the rate and the port states.
func FabricLinks(w io.Writer, s *fabric.Snapshot) {
	names := s.Names()
	links := s.Links()
	if len(links) == 0 {
		return
	}
	t := newTable(w, "Links")
	t.AppendHeader(table.Row{"A", "B", "Rate", "State"})
	for _, l := range links {
		state := l.A.State.String()
		if state == "" {
			state = "-"
		}
		t.AppendRow(table.Row{names.Port(l.A.Key()), names.Port(l.B.Key()), linkRate(l.A), state})
	}
	t.Render()
	fmt.Fprintln(w)
}

func linkRate(p *fabric.Port) string {
	if p.Width == "" {
		return "rate not given"
	}
	return fmt.Sprintf("%s %s (%g Gb/s)", p.Width, p.Speed, p.RateGbps)
}

func smText(s *fabric.Snapshot, names *fabric.Names) string {
	if len(s.SMs) == 0 {
		switch {
		case s.SMQueryError != "" && s.SMNoAnswer:
			return "none answers (" + s.SMQueryError + ")"
		case s.SMQueryError != "":
			// sminfo could not ask: nothing is known of the SM.
			return "not known: sminfo could not ask (" + s.SMQueryError + ")"
		}
		return "none"
	}
	byLID := map[int]string{}
	for _, p := range s.Ports {
		if p.LID > 0 && (p.NodeType != fabric.Switch || byLID[p.LID] == "") {
			byLID[p.LID] = names.Node(p.NodeGUID)
		}
	}
	var parts []string
	for _, sm := range s.SMs {
		name := byLID[sm.LID]
		if name == "" {
			name = sm.GUID.String()
		}
		parts = append(parts, fmt.Sprintf("%s (LID %d) %s priority %d", name, sm.LID, sm.State, sm.Priority))
	}
	return strings.Join(parts, "; ")
}

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
)

// Fabric is the ten-second summary of a fabric: what is there, the subnet
// manager, link rates by count, then the worst links first.
func Fabric(w io.Writer, s *fabric.Snapshot, fs []check.Finding) {
	types := map[string]int{}
	for _, n := range s.Nodes {
		types[n.Type]++
	}
	links := s.Links()
	fmt.Fprintf(w, "Fabric: %d switch(es), %d CA(s), %d link(s), %d port(s) · %s\n", types["Switch"], types["CA"], len(links), len(s.Ports), s.CollectedAt.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "Subnet manager: %s\n", smText(s))

	rates := map[string]int{}
	for _, l := range links {
		rates[fmt.Sprintf("%s %s (%g Gb/s)", l.A.Width, l.A.Speed, l.A.RateGbps)]++
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
	c := check.Count(fs)
	fmt.Fprintf(w, "Checks: %d fail · %d warn · %d unknown · %d pass\n\n", c[check.Fail], c[check.Warn], c[check.Unknown], c[check.Pass])

	// Worst links: those a finding names, slowest first.
	bad := map[string]string{}
	for _, f := range fs {
		if f.Outcome == check.Fail && strings.HasPrefix(f.Check, "fabric.link.") {
			what := strings.TrimPrefix(f.Check, "fabric.link.")
			if prev := bad[f.Subject]; prev != "" {
				what = prev + ", " + what
			}
			bad[f.Subject] = what
		}
	}
	var worst []fabric.Link
	for _, l := range links {
		if _, ok := bad[l.Name()]; ok {
			worst = append(worst, l)
		}
	}
	slices.SortStableFunc(worst, func(a, b fabric.Link) int { return cmp.Compare(a.A.RateGbps, b.A.RateGbps) })
	if len(worst) > 0 {
		t := newTable(w, "Worst links first")
		t.AppendHeader(table.Row{"Link", "Now", "Could be", "Problem"})
		for _, l := range worst {
			could := strings.TrimSpace(cmp.Or(l.A.CouldBeWidth, l.B.CouldBeWidth) + " " + cmp.Or(l.A.CouldBeSpeed, l.B.CouldBeSpeed))
			t.AppendRow(table.Row{l.Name(), fmt.Sprintf("%s %s %g Gb/s", l.A.Width, l.A.Speed, l.A.RateGbps), orDash(could), bad[l.Name()]})
		}
		t.Render()
		fmt.Fprintln(w)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "could not read: %s\n", e)
	}
}

func smText(s *fabric.Snapshot) string {
	if len(s.SMs) == 0 {
		if s.SMQueryError != "" {
			return "none answers (" + s.SMQueryError + ")"
		}
		return "none"
	}
	byLID := map[int]string{}
	for _, p := range s.Ports {
		if p.LID > 0 {
			byLID[p.LID] = p.NodeDesc
		}
	}
	var parts []string
	for _, sm := range s.SMs {
		name := byLID[sm.LID]
		if name == "" {
			name = sm.GUID
		}
		parts = append(parts, fmt.Sprintf("%s (LID %d) %s priority %d", name, sm.LID, sm.State, sm.Priority))
	}
	return strings.Join(parts, "; ")
}

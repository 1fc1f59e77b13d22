package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/compare"
)

// Compare renders two runs side by side: every compared direction with
// each metric in both runs, its change and the noise it was judged
// against, then each node's sides, then the findings.
func Compare(w io.Writer, r *compare.Result) {
	fmt.Fprintf(w, "%s → %s: %s, %d direction(s) compared; a change inside the runs' own noise (at least %.0f%%) is no change\n",
		r.A, r.B, r.What, len(r.Directions), 100*compare.Floor)
	if r.Self {
		fmt.Fprintf(w, "these are one run given twice: nothing can have changed, and nothing is proven\n")
	}
	fmt.Fprintln(w)
	t := newTable(w, "Directions")
	t.AppendHeader(table.Row{"Direction", "Metric", "A", "B", "Change", "Noise", "Verdict"})
	for _, d := range r.Directions {
		for i, c := range d.Changes {
			subject := d.Subject
			if i > 0 {
				subject = ""
			}
			t.AppendRow(table.Row{subject, c.Metric, fmt.Sprintf("%.2f %s", c.A, c.Unit), fmt.Sprintf("%.2f %s", c.B, c.Unit),
				fmt.Sprintf("%+.0f%%", 100*c.Delta), fmt.Sprintf("%.0f%%", 100*c.Noise), c.Verdict})
		}
	}
	t.Render()
	if len(r.Nodes) > 0 {
		fmt.Fprintln(w)
		t = newTable(w, "Nodes")
		t.AppendHeader(table.Row{"Node", "Side", "Worse", "Verdict"})
		for _, n := range r.Nodes {
			v := compare.NoChange
			switch {
			case n.Named:
				v = "worse: named"
			case n.Worse > 0:
				v = "a direction worse"
			}
			t.AppendRow(table.Row{n.Name, n.Side, fmt.Sprintf("%d/%d", n.Worse, n.Total), v})
		}
		t.Render()
	}
	for _, o := range []struct {
		run  string
		dirs []string
	}{{r.A, r.OnlyInA}, {r.B, r.OnlyInB}} {
		if len(o.dirs) > 0 {
			fmt.Fprintf(w, "Only in %s: %s\n", o.run, strings.Join(o.dirs, ", "))
		}
	}
	fmt.Fprintln(w)
	check.Sort(r.Findings)
	Findings(w, r.Findings, false)
}

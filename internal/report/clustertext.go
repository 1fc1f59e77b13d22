package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Cluster prints the verdict of a cluster report, the findings that decide
// it, a line per node and per bench test: the terminal face of the page
// 'rdmalab report --html' writes. Quiet stops after the verdict.
func Cluster(w io.Writer, v *ClusterView) {
	p := NewPrinter(w)
	o := map[VerdictState]check.Outcome{Ready: check.Pass, NotReady: check.Fail, Unproven: check.Unknown}[v.Verdict.State]
	p.Wrapped("", "  ", p.Outcome(o, strings.ToUpper(string(v.Verdict.State)))+": "+userfile.TermLine(v.Verdict.Why))
	for _, f := range v.Verdict.Deciding {
		msg := findingText(f.Finding)
		if f.Others > 0 {
			msg += fmt.Sprintf(" (and %d more like it)", f.Others)
		}
		p.findingLine(f.Outcome, f.Check, msg)
	}
	if v.Verdict.More > 0 {
		p.Printf("  … and %d more failing check(s)\n", v.Verdict.More)
	}
	p.Printf("%s\n\n", p.counts(v.Counts))
	if len(v.Repeated) > 0 {
		p.Printf("Inputs given more than once:\n")
		for _, r := range v.Repeated {
			p.Wrapped("  ", "    ", userfile.TermLine(r))
		}
		p.Printf("\n")
	}
	if p.St.Quiet {
		return
	}
	if len(v.Nodes) > 0 {
		t := p.Table("Nodes, worst first", Col{Name: "Node"}, Col{Name: "Fail", AlignRight: true}, Col{Name: "Warn", AlignRight: true},
			Col{Name: "Unknown", AlignRight: true}, Col{Name: "Pass", AlignRight: true}, Col{Name: "Host", Drop: 1})
		for _, n := range v.Nodes {
			c := n.Findings.Counts
			t.Row(n.Name, p.nonzero(check.Fail, c.Fail), p.nonzero(check.Warn, c.Warn), p.nonzero(check.Unknown, c.Unknown), c.Pass, n.Summary)
		}
		t.Render()
	}
	for _, f := range v.Fabrics {
		p.Wrapped("", "  ", userfile.TermLine(fmt.Sprintf("Fabric: %s · %d degraded link(s) · %s", f.Summary, f.Degraded, p.counts(f.Findings.Counts))))
	}
	for _, b := range v.Benches {
		var parts []string
		for _, k := range CellStates {
			if n := b.Counts[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
		}
		line := fmt.Sprintf("Bench %s %s: %d nodes, %d directions: %s", b.Engine, b.Test, len(b.Nodes), len(b.Cells), strings.Join(parts, " · "))
		for _, s := range b.Suspects {
			line += fmt.Sprintf(" · suspect %s (%s side, %d/%d bad)", s.Node, s.Side, s.Bad, s.Total)
		}
		p.Wrapped("", "  ", userfile.TermLine(line))
	}
	if len(v.Fabrics)+len(v.Benches) > 0 {
		p.Printf("\n")
	}
	if v.Compare != nil {
		n := map[string]int{}
		for _, d := range v.Compare.Directions {
			n[d.Verdict]++
		}
		p.Wrapped("", "  ", userfile.TermLine(fmt.Sprintf("Compare %s → %s (%s): %d worse · %d better · %d no change (rdmalab compare shows each metric)",
			v.Compare.A, v.Compare.B, v.Compare.What, n[compare.Worse], n[compare.Better], n[compare.NoChange])))
		for _, nd := range v.Compare.Nodes {
			if nd.Named {
				p.Wrapped("  ", "    ", userfile.TermLine(fmt.Sprintf("%s's %s side is worse with %d of %d partners", nd.Name, nd.Side, nd.Worse, nd.Total)))
			}
		}
		p.Printf("\n")
	}
}

// nonzero colours a count when it is not zero.
func (p *Printer) nonzero(o check.Outcome, n int) string {
	if n == 0 {
		return "0"
	}
	return p.Outcome(o, fmt.Sprint(n))
}

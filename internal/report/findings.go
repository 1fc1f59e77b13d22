package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
)

// Findings renders findings grouped by severity, worst first, each with its
// evidence and fix; passes are summarised unless verbose. Quiet keeps the
// counts and the failures.
func Findings(w io.Writer, fs []check.Finding, verbose bool) {
	p := NewPrinter(w)
	v := NewFindingsView(fs)
	p.Printf("%s\n", p.counts(v.Counts))
	for _, g := range v.Groups {
		if (g.Outcome == check.Pass && !verbose) || (p.St.Quiet && g.Outcome != check.Fail) {
			continue
		}
		p.Printf("\n%s\n", p.Outcome(g.Outcome, fmt.Sprintf("%s (%d)", strings.ToUpper(string(g.Outcome)), len(g.Findings))))
		for _, f := range g.Findings {
			who := f.Subject
			if f.Host != "" {
				who = f.Host + " " + f.Subject
			}
			p.findingLine(g.Outcome, f.Check, who+": "+f.Message)
			if g.Outcome == check.Pass {
				continue
			}
			for _, e := range f.Evidence {
				src := ""
				if e.Source != "" {
					src = "  (" + e.Source + ")"
				}
				p.Wrapped("      ", "        ", e.What+" = "+e.Value+src)
			}
			for _, fix := range f.Fix {
				p.Printf("      fix: %s\n", fix) // a command: never wrapped
			}
		}
	}
	if !verbose && v.Counts.Pass > 0 {
		p.Printf("\n%d checks passed (--verbose lists them)\n", v.Counts.Pass)
	}
	if p.St.Quiet && v.Counts.Warn+v.Counts.Unknown > 0 {
		p.Printf("%d warning(s) and %d unknown(s) not shown (--quiet)\n", v.Counts.Warn, v.Counts.Unknown)
	}
}

// findingLine prints "  check-id   subject: message": on a wide terminal
// in two columns, on a narrow one the id on its own line and the text
// wrapped under it.
func (p *Printer) findingLine(o check.Outcome, id, msg string) {
	const idWidth = 26
	if p.St.Width == 0 || p.St.Width >= 100 {
		pad := strings.Repeat(" ", max(1, idWidth+1-len(id)))
		p.Wrapped("  "+p.Outcome(o, id)+pad, strings.Repeat(" ", 3+idWidth), msg)
		return
	}
	p.Printf("  %s\n", p.Outcome(o, id))
	p.Wrapped("    ", "    ", msg)
}

// counts prints "1 fail · 2 warn · 0 unknown · 9 pass", colouring the
// outcomes that occur.
func (p *Printer) counts(c Counts) string {
	part := func(o check.Outcome, n int) string {
		s := fmt.Sprintf("%d %s", n, o)
		if n == 0 {
			return s
		}
		return p.Outcome(o, s)
	}
	return p.Text(part(check.Fail, c.Fail) + " · " + part(check.Warn, c.Warn) + " · " + part(check.Unknown, c.Unknown) + " · " + part(check.Pass, c.Pass))
}

// NHC prints one line per failure, the way LBNL NHC reports to Slurm, and
// for an unproven run one line saying so (the exit code is 3: a node
// health check must not read silence as healthy).
func NHC(w io.Writer, fs []check.Finding, v check.Verdict) {
	for _, f := range fs {
		if f.Outcome == check.Fail {
			fmt.Fprintf(w, "ERROR: rdmalab: %s: %s: %s\n", f.Check, strings.TrimSpace(f.Host+" "+f.Subject), f.Message)
		}
	}
	if v.Status == check.Unproven {
		fmt.Fprintf(w, "UNPROVEN: rdmalab: %s\n", strings.TrimSpace(v.Reason+"; "+v.Answer))
	}
}

// VerdictLine prints the run's verdict last, as every judging command
// does: the status, the question and what decided it, and for an
// unproven run what would answer it.
func VerdictLine(w io.Writer, v check.Verdict) {
	p := NewPrinter(w)
	o := map[check.Status]check.Outcome{check.Healthy: check.Pass, check.Failing: check.Fail, check.Unproven: check.Unknown}[v.Status]
	word := map[check.Status]string{check.Healthy: "HEALTHY", check.Failing: "FAILED", check.Unproven: "UNPROVEN"}[v.Status]
	p.Printf("\n")
	p.Wrapped("", "  ", p.Outcome(o, "verdict: "+word)+" — "+v.Question+" "+v.Reason)
	if v.Answer != "" {
		p.Wrapped("  to answer it: ", "    ", v.Answer)
	}
}

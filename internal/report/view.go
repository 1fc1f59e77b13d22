package report

import (
	"github.com/rdmalab/rdmalab/internal/check"
)

// View models: what every renderer (text, HTML) shows, computed once here so
// the renderers only lay it out and cannot disagree.

// Counts tallies findings by outcome.
type Counts struct {
	Fail, Warn, Unknown, Pass int
}

// CountOf counts findings.
func CountOf(fs []check.Finding) Counts {
	c := check.Count(fs)
	return Counts{Fail: c[check.Fail], Warn: c[check.Warn], Unknown: c[check.Unknown], Pass: c[check.Pass]}
}

// Total is the number of findings.
func (c Counts) Total() int { return c.Fail + c.Warn + c.Unknown + c.Pass }

// Of returns the count of one outcome.
func (c Counts) Of(o check.Outcome) int {
	switch o {
	case check.Fail:
		return c.Fail
	case check.Warn:
		return c.Warn
	case check.Unknown:
		return c.Unknown
	case check.Pass:
		return c.Pass
	}
	return 0
}

// Outcomes lists outcomes worst first.
var Outcomes = []check.Outcome{check.Fail, check.Warn, check.Unknown, check.Pass}

// FindingsView is findings grouped by severity, worst first.
type FindingsView struct {
	Counts Counts
	Groups []FindingGroup // only outcomes that occur, worst first
}

// FindingGroup is the findings of one outcome, sorted.
type FindingGroup struct {
	Outcome  check.Outcome
	Findings []check.Finding
}

// NewFindingsView sorts a copy of fs and groups it by outcome.
func NewFindingsView(fs []check.Finding) FindingsView {
	sorted := append([]check.Finding(nil), fs...)
	check.Sort(sorted)
	v := FindingsView{Counts: CountOf(sorted)}
	for _, o := range Outcomes {
		var g []check.Finding
		for _, f := range sorted {
			if f.Outcome == o {
				g = append(g, f)
			}
		}
		if len(g) > 0 {
			v.Groups = append(v.Groups, FindingGroup{Outcome: o, Findings: g})
		}
	}
	return v
}

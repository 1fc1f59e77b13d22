// Package check holds the one Finding shape every check in rdmalab reports
// (doctor, fabric, bench), the outcomes, and the catalog of checks. Rules are
// pure functions of snapshots: they never read a filesystem and never print.
package check

import (
	"cmp"
	"slices"
)

// Outcome is what a check concluded.
type Outcome string

// Outcomes, from worst to best. A rule that cannot read its inputs says
// Unknown, never Pass.
const (
	Fail    Outcome = "fail"
	Warn    Outcome = "warn"
	Unknown Outcome = "unknown"
	Pass    Outcome = "pass"
)

// Rank orders outcomes worst first.
func (o Outcome) Rank() int { return slices.Index([]Outcome{Fail, Warn, Unknown, Pass}, o) }

// Evidence is one value a finding rests on, and where it was read.
type Evidence struct {
	What   string `json:"what"`
	Value  string `json:"value"`
	Source string `json:"source,omitempty"` // a sysfs path, a command
}

// Finding is one check's conclusion about one subject.
type Finding struct {
	Check    string     `json:"check"` // stable id, e.g. port.rate.below-expected
	Outcome  Outcome    `json:"outcome"`
	Host     string     `json:"host,omitempty"`
	Subject  string     `json:"subject"` // "mlx5_0 port 1", "0000:41:00.0", "kernel"
	Message  string     `json:"message"`
	Evidence []Evidence `json:"evidence,omitempty"`
	Fix      []string   `json:"fix,omitempty"` // commands or config lines, in order
}

// Sort orders findings worst first, then by check, host and subject.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Outcome.Rank(), b.Outcome.Rank()), cmp.Compare(a.Check, b.Check), cmp.Compare(a.Host, b.Host), cmp.Compare(a.Subject, b.Subject))
	})
}

// Count tallies findings by outcome.
func Count(fs []Finding) map[Outcome]int {
	m := map[Outcome]int{}
	for _, f := range fs {
		m[f.Outcome]++
	}
	return m
}

// Entry describes a check in the catalog (docs/checks.md is kept equal to it).
type Entry struct {
	ID     string
	Title  string
	Why    string
	Source string
	// Fixes are what to do, in order: commands or config lines, one each.
	Fixes []string
	// Fix is the old single-string spelling, kept only so entries written
	// before Fixes still compile while branches merge; TestChecksDoc
	// (internal/cli) fails on any entry that sets it.
	//
	// Deprecated: write Fixes: []string{"a", "b"} for Fix: "a; b".
	Fix string
	// Needs says what the check must read to be sure; UnknownWhen what
	// makes it say unknown instead of pass or fail.
	Needs       string
	UnknownWhen string
}

// Failed is the one predicate that decides exit code 1 everywhere: any
// finding failed. Warnings and unknowns are reported, not failed.
func Failed(fs []Finding) bool {
	for _, f := range fs {
		if f.Outcome == Fail {
			return true
		}
	}
	return false
}

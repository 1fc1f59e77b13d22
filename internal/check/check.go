// Package check holds the one Finding shape every check in rdmalab reports
// (doctor, fabric, bench), the outcomes, and the catalog of checks. Rules are
// pure functions of snapshots: they never read a filesystem and never print.
package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
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
	// Needs says what the check must read to be sure; UnknownWhen what
	// makes it say unknown instead of pass or fail.
	Needs       string
	UnknownWhen string
	// Decides marks a check whose answer the command's central question
	// rests on (a port's state and rate for doctor, a link's rate for
	// fabric check, a direction's bandwidth for bench): an unknown here
	// leaves the question open, so the run is unproven (exit 3), never OK.
	// An unknown on any other check is reported and read, not deciding.
	Decides bool
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

// Status is a run's answer to its central question.
type Status string

// Statuses, and the exit code each maps to (cli).
const (
	Healthy  Status = "healthy"  // proven: exit 0
	Failing  Status = "failed"   // a failure found: exit 1
	Unproven Status = "unproven" // the question could not be answered: exit 3
)

// Verdict is the one answer a run gives, rendered the same way in text,
// JSON, HTML and the NHC line, and deciding the exit code.
type Verdict struct {
	Status Status `json:"status"`
	// Question is what the command was asked (doctor: are the RDMA ports
	// meant to carry traffic up at their rate, and is the host ready?).
	Question string `json:"question"`
	// Reason says what decided it, naming the first deciding findings.
	Reason string `json:"reason"`
	// Answer is, for an unproven run, the input or flag that would answer
	// the question (taken from the deciding unknown's fix or catalog).
	Answer string `json:"answer,omitempty"`
}

// Decide is the one verdict rule: any failure fails; otherwise an unknown
// on a deciding check (decides reports whether a check id decides), or a
// run in which nothing passed, is unproven; otherwise the run is healthy.
// answer gives, for a deciding unknown, what would answer it (its fix or
// the catalog's UnknownWhen); it may be nil.
func Decide(question string, fs []Finding, decides func(id string) bool, answer func(Finding) string) Verdict {
	v := Verdict{Question: question}
	var fails, open []Finding
	pass := 0
	for _, f := range fs {
		switch {
		case f.Outcome == Fail:
			fails = append(fails, f)
		case f.Outcome == Unknown && decides != nil && decides(f.Check):
			open = append(open, f)
		case f.Outcome == Pass:
			pass++
		}
	}
	switch {
	case len(fails) > 0:
		// The failures are listed with the findings; the verdict counts them.
		v.Status, v.Reason = Failing, fmt.Sprintf("%d check(s) failed", len(fails))
	case len(open) > 0:
		v.Status, v.Reason = Unproven, fmt.Sprintf("%d deciding check(s) could not be judged: %s", len(open), name(open))
		if answer != nil {
			v.Answer = answer(open[0])
		}
	case pass == 0:
		v.Status, v.Reason = Unproven, "nothing was proven: no check passed"
	default:
		v.Status, v.Reason = Healthy, fmt.Sprintf("%d check(s) passed, no failure and no deciding unknown", pass)
	}
	return v
}

// name lists the first few findings as "check host subject".
func name(fs []Finding) string {
	const shown = 3
	var parts []string
	for i, f := range fs {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-shown))
			break
		}
		parts = append(parts, strings.TrimSpace(f.Check+" "+f.Host+" "+f.Subject))
	}
	return strings.Join(parts, "; ")
}

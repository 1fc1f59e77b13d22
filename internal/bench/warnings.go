package bench

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
)

// perftestWarning is one kind of perftest warning: the lines that say it
// (whatever their case and numbers), why it matters, its fix, and what it
// means when the link was saturated anyway.
type perftestWarning struct {
	kind  string
	match *regexp.Regexp
	why   string
	fix   string
	// saturated is what the warning means when the run reached the
	// link's ceiling; harmless makes it a pass then.
	saturated string
	harmless  bool
}

var perftestWarnings = []perftestWarning{
	{
		kind:  "CPU frequency not max",
		match: regexp.MustCompile(`(?i)cpu frequency`),
		why:   "perftest times the run in CPU cycles and the clock changed during it, so its figures can be off (results above the link's ceiling are typical)",
		fix:   "cpupower frequency-set -g performance   # on both nodes, then run again",
		// Seed 003: "We still see CPU Frequency is not max, however this
		// is non issue as we have already saturated our links."
		saturated: "harmless here: the link is saturated, so the clock did not limit the result (seed 003's conclusion)",
		harmless:  true,
	},
	{
		kind:  "PCIe relaxed ordering not supported",
		match: regexp.MustCompile(`(?i)relaxed ordering|pcie ro\b|disable_pcie_relaxed`),
		why:   "perftest turned PCIe relaxed ordering on, but the CPU does not support it: the run used a setting the platform cannot honour",
		fix:   "run again with --disable_pcie_relaxed on both server and client (rdmalab bench: --perftest-arg=--disable_pcie_relaxed)",
		// Seed 003 re-ran with --disable_pcie_relaxed: "almost identical
		// throughput", so it is not why a saturated run is slow.
		saturated: "the link is saturated anyway, so it cost no bandwidth here; re-run with the fix to measure with a setting the platform supports (seed 003 did: almost identical throughput)",
	},
	{
		kind:      "BW peak not measured",
		match:     regexp.MustCompile(`(?i)won't be measured`),
		why:       "perftest did not measure the peak (run by duration, -D): only the average is meaningful",
		saturated: "the average is what rdmalab judges",
		harmless:  true,
	},
}

// warningKind groups a warning line with the others of its kind.
func warningKind(line string) *perftestWarning {
	for i := range perftestWarnings {
		if perftestWarnings[i].match.MatchString(line) {
			return &perftestWarnings[i]
		}
	}
	return nil
}

// WarningFindings turns perftest's warning lines into one finding per
// kind, with its fix and, when the run's share of the link's ceiling is
// known (saturation > 0), whether it mattered at that saturation: a run
// between healthy and the ceiling was not limited by it; one above the
// ceiling is likely wrong because of it. hosts are the nodes that
// printed them ("" for a saved file); subject names the run.
func WarningFindings(lines []string, hosts, subject string, saturation float64, t cluster.Thresholds) []check.Finding {
	type group struct {
		w     *perftestWarning
		lines []string
	}
	var groups []*group
	byKind := map[string]*group{}
	for _, l := range lines {
		w := warningKind(l)
		key := l
		if w != nil {
			key = w.kind
		}
		g := byKind[key]
		if g == nil {
			g = &group{w: w}
			byKind[key] = g
			groups = append(groups, g)
		}
		if !slices.Contains(g.lines, l) {
			g.lines = append(g.lines, l)
		}
	}
	r := CheckPerftestWarning.Reporter(hosts)
	for _, g := range groups {
		outcome, msg, fix := check.Warn, "perftest warned: "+g.lines[0], []string(nil)
		if g.w != nil {
			msg = fmt.Sprintf("perftest warned: %s (%s): %s", g.w.kind, g.lines[0], g.w.why)
			if g.w.fix != "" {
				fix = []string{g.w.fix}
			}
			switch {
			case g.w.fix == "" && g.w.harmless:
				outcome = check.Pass
				msg += "; " + g.w.saturated
			case saturation > t.AboveCeiling:
				msg += fmt.Sprintf("; the run claims %.0f%% of the link's ceiling, which no link does: this warning is the likely cause, fix it and measure again", 100*saturation)
			case saturation >= t.Healthy:
				msg += fmt.Sprintf("; at %.0f%% of the link's ceiling %s", 100*saturation, g.w.saturated)
				if g.w.harmless {
					outcome = check.Pass
				}
			case saturation > 0:
				msg += fmt.Sprintf("; the run reached only %.0f%% of the link's ceiling, so fix this first and measure again", 100*saturation)
			}
		}
		f := r.Report(outcome, subject, "%s", msg)
		for _, l := range g.lines {
			f.Evidence = append(f.Evidence, check.Evidence{What: "perftest printed", Value: l, Source: cmpOr(subject, "perftest")})
		}
		// Only the warning's own fix: the catalog's (the CPU governor)
		// would be advice for another warning than this one.
		f.Fix = fix
	}
	return r.Findings()
}

// Package compare sets two runs of the same measurement side by side — two
// bench results logs, or two nccl-tests outputs — and says, per direction
// and per node, what changed: bandwidth, and latency at p50, p99 and
// p99.9. A change is judged against each run's own spread (the samples of
// that direction in each run) with a floor for the measurement's
// resolution: a change inside the noise is "no change". Seed 000's
// experiment (optimised vs wrong NUMA vs CPU contention) is what it is for.
package compare

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/nccl"
)

// Floor is the smallest change ever called a change: two runs of the same
// healthy link differ by a few percent whatever their samples say (seed
// 000: 24.2 and 24.1 Gbps are "fully protected"; seed 001: "within 5%").
const Floor = 0.05

// Verdicts of one metric.
const (
	NoChange = "no change"
	Worse    = "worse"
	Better   = "better"
)

// Change is one metric of one direction in both runs.
type Change struct {
	Metric string  `json:"metric"` // bandwidth, p50, p99, p99.9, busbw
	Unit   string  `json:"unit"`   // Gb/s, µs, GB/s
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	// Delta is (B − A) / A; Noise is the change the runs' own spreads
	// allow (at least Floor).
	Delta   float64 `json:"delta"`
	Noise   float64 `json:"noise"`
	Verdict string  `json:"verdict"`
	// higher is better (bandwidth), lower is better (latency).
	higherBetter bool
}

// Direction is one sender → receiver (or one nccl-tests run) in both runs.
type Direction struct {
	From    string   `json:"from,omitempty"`
	To      string   `json:"to,omitempty"`
	Subject string   `json:"subject"`
	Changes []Change `json:"changes"`
	Verdict string   `json:"verdict"`
}

// Node is one node's side over its directions.
type Node struct {
	Name  string `json:"name"`
	Side  string `json:"side"` // send or receive
	Worse int    `json:"worse"`
	Total int    `json:"compared"`
	// Named: most of this side's directions got worse.
	Named bool `json:"named"`
}

// Result is two runs compared.
type Result struct {
	A          string      `json:"a"`
	B          string      `json:"b"`
	Kind       string      `json:"kind"` // bench or nccl-tests
	What       string      `json:"what"` // "perftest ib_write_lat", "all_reduce"
	Directions []Direction `json:"directions"`
	Nodes      []Node      `json:"nodes,omitempty"`
	// OnlyInA / OnlyInB are directions measured in one run only: one
	// that vanished from B (absent, or failed there) got worse.
	OnlyInA []string `json:"only_in_a,omitempty"`
	OnlyInB []string `json:"only_in_b,omitempty"`
	// FailedInB holds, per direction of OnlyInA that B ran and failed,
	// B's error.
	FailedInB map[string]string `json:"failed_in_b,omitempty"`
	// Absurd lists values that are no measurement (not finite, negative,
	// above what any link or GPU carries), with where they are.
	Absurd []string `json:"absurd,omitempty"`
	// Self: the two runs are one run (the same bytes, or every compared
	// direction the same measurement): nothing can have changed.
	Self     bool            `json:"self,omitempty"`
	Findings []check.Finding `json:"-"`
}

// Run compares run B against run A (B is the new one). Both must be the
// same kind: bench results logs, or nccl-tests outputs.
func Run(aName string, a []byte, bName string, b []byte) (*Result, error) {
	aLog, bLog := isLog(a), isLog(b)
	switch {
	case aLog && bLog:
		return compareLogs(aName, a, bName, b)
	case aLog || bLog:
		return nil, fmt.Errorf("%s and %s are not the same kind: compare two bench results logs, or two nccl-tests outputs", aName, bName)
	}
	return compareNCCL(aName, a, bName, b)
}

func isLog(b []byte) bool {
	return bench.Results.Is(bytes.TrimSpace(b))
}

type key struct{ engine, test, from, to string }

// finals are the last measurement of each direction (retests are not the
// run's measurement), and the error of each direction whose last attempt
// failed.
func finals(name string, b []byte) (map[key]bench.Record, map[key]string, error) {
	_, recs, _, err := bench.Results.Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	out, failed := map[key]bench.Record{}, map[key]string{}
	for _, r := range recs {
		if r.Retest {
			continue
		}
		k := key{r.Engine, r.Test, r.From, r.To}
		if r.Failed() {
			delete(out, k)
			failed[k] = cmp.Or(r.Error, r.NotMeasured, "timed out")
			continue
		}
		delete(failed, k)
		out[k] = r
	}
	if len(out)+len(failed) == 0 {
		return nil, nil, fmt.Errorf("%s: no direction was measured", name)
	}
	return out, failed, nil
}

// absurd says why a bandwidth (Gb/s) or latency (µs) is no measurement,
// or "".
func absurd(v, most float64, unit string) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprintf("%v is not a number", v)
	case v < 0:
		return fmt.Sprintf("%g %s is negative", v, unit)
	case most > 0 && v > most:
		return fmt.Sprintf("%g %s is more than any link or GPU carries (%g %s)", v, unit, most, unit)
	}
	return ""
}

// recordAbsurd names a record's values that are no measurement.
func recordAbsurd(run string, r bench.Record) []string {
	var out []string
	check := func(what string, vs []float64, most float64, unit string) {
		for _, v := range vs {
			if why := absurd(v, most, unit); why != "" {
				out = append(out, fmt.Sprintf("%s: %s → %s %s %s", run, r.From, r.To, what, why))
				return
			}
		}
	}
	check("bandwidth", append([]float64{r.Gbps}, r.SamplesGbps...), linkrate.FastestGbps(), "Gb/s")
	check("latency", append([]float64{r.P50Us, r.P99Us, r.P999Us}, slices.Concat(r.SamplesP50Us, r.SamplesP99Us, r.SamplesP999Us)...), 0, "µs")
	return out
}

func compareLogs(aName string, a []byte, bName string, b []byte) (*Result, error) {
	fa, _, err := finals(aName, a)
	if err != nil {
		return nil, err
	}
	fb, failedB, err := finals(bName, b)
	if err != nil {
		return nil, err
	}
	res := &Result{A: aName, B: bName, Kind: "bench", Self: bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))}
	var keys []key
	tests := map[string]bool{}
	for k := range fa {
		if _, ok := fb[k]; ok {
			keys = append(keys, k)
			tests[k.engine+" "+k.test] = true
		} else {
			name := k.from + " → " + k.to + " (" + k.engine + " " + k.test + ")"
			res.OnlyInA = append(res.OnlyInA, name)
			if e, ok := failedB[k]; ok {
				if res.FailedInB == nil {
					res.FailedInB = map[string]string{}
				}
				res.FailedInB[name] = e
			}
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			res.OnlyInB = append(res.OnlyInB, k.from+" → "+k.to+" ("+k.engine+" "+k.test+")")
		}
	}
	slices.Sort(res.OnlyInA)
	slices.Sort(res.OnlyInB)
	// Two logs of different tests are not two runs of one measurement;
	// a newer run of the same test whose every direction failed is.
	if len(keys) == 0 && len(res.FailedInB) == 0 {
		return nil, errors.New(aName + " and " + bName + " have no direction of the same test in common")
	}
	var names []string
	for t := range tests {
		names = append(names, t)
	}
	slices.Sort(names)
	res.What = strings.Join(names, ", ")
	slices.SortFunc(keys, func(x, y key) int {
		return cmp.Or(cmp.Compare(x.engine, y.engine), cmp.Compare(x.test, y.test), cmp.Compare(x.from, y.from), cmp.Compare(x.to, y.to))
	})
	// One run given twice: every compared direction the same measurement
	// (its start time and values), whatever the files' other bytes.
	sameAll := len(keys) > 0 && len(fa) == len(fb)
	for _, k := range keys {
		ra, rb := fa[k], fb[k]
		res.Absurd = append(res.Absurd, recordAbsurd(aName, ra)...)
		res.Absurd = append(res.Absurd, recordAbsurd(bName, rb)...)
		ja, _ := json.Marshal(ra)
		jb, _ := json.Marshal(rb)
		sameAll = sameAll && !ra.Started.IsZero() && bytes.Equal(ja, jb)
	}
	res.Self = res.Self || sameAll
	for _, k := range keys {
		ra, rb := fa[k], fb[k]
		d := Direction{From: k.from, To: k.to, Subject: k.from + " → " + k.to}
		if len(tests) > 1 {
			d.Subject += " (" + k.engine + " " + k.test + ")"
		}
		// A bandwidth in either run is compared: one that fell to 0 (or
		// kept no sample) is a change of −100%, never left out.
		if ra.Gbps > 0 || rb.Gbps > 0 {
			d.Changes = append(d.Changes, change("bandwidth", "Gb/s", true, samples(ra.SamplesGbps, ra.Gbps), samples(rb.SamplesGbps, rb.Gbps)))
		}
		for _, m := range []struct {
			name   string
			a, b   float64
			sa, sb []float64
		}{
			{"p50", ra.P50Us, rb.P50Us, ra.SamplesP50Us, rb.SamplesP50Us},
			{"p99", ra.P99Us, rb.P99Us, ra.SamplesP99Us, rb.SamplesP99Us},
			{"p99.9", ra.P999Us, rb.P999Us, ra.SamplesP999Us, rb.SamplesP999Us},
		} {
			if m.a > 0 || m.b > 0 || len(m.sa)+len(m.sb) > 0 {
				d.Changes = append(d.Changes, change(m.name, "µs", false, samples(m.sa, m.a), samples(m.sb, m.b)))
			}
		}
		if len(d.Changes) == 0 {
			continue
		}
		d.Verdict = overall(d.Changes)
		res.Directions = append(res.Directions, d)
	}
	res.Nodes = nodes(res.Directions)
	res.Findings = findings(res)
	return res, nil
}

// samples are a record's finite positive samples, or its one value when
// it kept none; a run that measured nothing is one sample of 0.
func samples(s []float64, v float64) []float64 {
	var out []float64
	for _, x := range s {
		if x > 0 && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	if len(out) == 0 && v > 0 && !math.IsInf(v, 0) {
		out = []float64{v}
	}
	if len(out) == 0 {
		out = []float64{0}
	}
	return out
}

// spread is (max − min) / median: how much the run moved by itself.
func spread(s []float64) float64 {
	if len(s) < 2 {
		return 0
	}
	return (slices.Max(s) - slices.Min(s)) / math.Max(bench.Median(s), 1e-12)
}

// change judges one metric: its medians' relative change against the
// larger of the two runs' spreads, and never below Floor.
func change(metric, unit string, higherBetter bool, sa, sb []float64) Change {
	c := Change{Metric: metric, Unit: unit, A: bench.Median(sa), B: bench.Median(sb), higherBetter: higherBetter}
	c.Delta = (c.B - c.A) / math.Max(c.A, 1e-12)
	c.Noise = max(Floor, spread(sa), spread(sb))
	switch {
	case c.A > 0 && c.B == 0:
		// Fell to nothing: no measurement is worse, latency included.
		c.Verdict = Worse
	case math.Abs(c.Delta) <= c.Noise:
		c.Verdict = NoChange
	case (c.Delta > 0) == higherBetter:
		c.Verdict = Better
	default:
		c.Verdict = Worse
	}
	return c
}

// overall: worse if any metric is worse, else better if any is, else no
// change.
func overall(cs []Change) string {
	v := NoChange
	for _, c := range cs {
		switch c.Verdict {
		case Worse:
			return Worse
		case Better:
			v = Better
		}
	}
	return v
}

// nodes: each node's send and receive side, named when most of that
// side's compared directions (at least two) got worse.
func nodes(ds []Direction) []Node {
	by := map[string]*Node{}
	var order []string
	side := func(name, s string) *Node {
		k := name + "|" + s
		if by[k] == nil {
			by[k] = &Node{Name: name, Side: s}
			order = append(order, k)
		}
		return by[k]
	}
	for _, d := range ds {
		if d.From == "" {
			continue
		}
		for _, n := range []*Node{side(d.From, bench.Send), side(d.To, bench.Receive)} {
			n.Total++
			if d.Verdict == Worse {
				n.Worse++
			}
		}
	}
	slices.Sort(order)
	var out []Node
	for _, k := range order {
		n := by[k]
		n.Named = n.Worse >= 2 && 2*n.Worse > n.Total
		out = append(out, *n)
	}
	return out
}

// Describe is one change as a person reads it: "p50 1.44 → 1.62 µs
// (+13%, noise 5%): worse".
func (c Change) Describe() string { return c.Metric + " " + c.describe() }

func (c Change) describe() string {
	return fmt.Sprintf("%.2f → %.2f %s (%+.0f%%, noise %.0f%%): %s", c.A, c.B, c.Unit, 100*c.Delta, 100*c.Noise, c.Verdict)
}

func findings(r *Result) []check.Finding {
	node, dir, missing := CheckNode.Reporter(""), CheckDirection.Reporter(""), CheckMissing.Reporter("")
	named := map[string]bool{}
	for _, n := range r.Nodes {
		if !n.Named {
			continue
		}
		named[n.Name+"|"+n.Side] = true
		verb := map[string]string{bench.Send: "sends", bench.Receive: "receives"}[n.Side]
		var ev []check.Evidence
		for _, d := range r.Directions {
			if d.Verdict == Worse && ((n.Side == bench.Send && d.From == n.Name) || (n.Side == bench.Receive && d.To == n.Name)) {
				ev = append(ev, check.Evidence{What: d.Subject, Value: worstChanges(d), Source: r.B + " against " + r.A})
			}
		}
		f := node.On(n.Name).Fail(n.Side+" side", "%s %s worse than in %s: %d of its %d compared %s directions changed beyond their own noise", n.Name, verb, r.A, n.Worse, n.Total, n.Side)
		f.Evidence = ev
		f.Fix = []string{"compare what differs on " + n.Name + " between the runs: CPU load and isolation, NUMA placement (rdmalab doctor), link rate, MTU, error counters"}
	}
	same := 0
	for _, d := range r.Directions {
		switch d.Verdict {
		case NoChange:
			same++
		case Worse:
			msg := fmt.Sprintf("worse than in %s: %s", r.A, worstChanges(d))
			switch {
			case named[d.From+"|"+bench.Send]:
				msg += " (" + d.From + "'s send side is worse with most partners)"
			case named[d.To+"|"+bench.Receive]:
				msg += " (" + d.To + "'s receive side is worse with most partners)"
			}
			f := dir.Fail(d.Subject, "%s", msg)
			f.Evidence = changeEvidence(d, r)
			if d.From != "" { // a direction between two nodes, not a row of a table
				f.Fix = []string{"find what changed between the runs on " + d.From + " and " + d.To + ": CPU load and isolation, NUMA placement, link rate, MTU, error counters"}
			}
		case Better:
			dir.Pass(d.Subject, "better than in %s: %s", r.A, changed(d, Better)).Evidence = changeEvidence(d, r)
		}
	}
	if same > 0 {
		dir.Pass(fmt.Sprintf("%d of %d", same, len(r.Directions)), "%d of %d compared directions: no change (every metric within the runs' own noise, at least %.0f%%)", same, len(r.Directions), 100*Floor)
	}
	// Vanished from the newer run: absent or failed there, it got worse.
	for _, d := range r.OnlyInA {
		msg := fmt.Sprintf("measured in %s, not in %s: it vanished (a direction that no longer carries anything is worse, not left out)", r.A, r.B)
		if e, ok := r.FailedInB[d]; ok {
			msg = fmt.Sprintf("measured in %s, failed in %s: %s", r.A, r.B, e)
		}
		missing.Fail(d, "%s", msg).Fix = []string{"rdmalab bench --resume the run " + r.B + " came from, or find why the direction no longer runs (rdmalab doctor on both ends)"}
	}
	if len(r.OnlyInB) > 0 {
		missing.Warn(fmt.Sprintf("%d direction(s)", len(r.OnlyInB)), "measured only in %s, so not compared: %s", r.B, strings.Join(r.OnlyInB, ", ")).
			Fix = []string{"measure them in the earlier run too (rdmalab bench --resume the run " + r.A + " came from) to compare them"}
	}
	absurd := CheckAbsurd.Reporter("")
	for _, a := range r.Absurd {
		absurd.Fail(strings.SplitN(a, ": ", 2)[0], "no measurement: %s", a)
	}
	self := CheckSelf.Reporter("")
	if r.Self {
		// The unknown's fix is the run's answer (check.Verdict.Answer).
		self.Unknown(r.B, "%s and %s are one run (the same measurements): a run compared with itself cannot show whether anything got worse", r.A, r.B).
			Fix = []string{"give the earlier run as RUN_A and a newer run of the same test as RUN_B"}
	}
	return slices.Concat(node.Findings(), dir.Findings(), missing.Findings(), absurd.Findings(), self.Findings())
}

func worstChanges(d Direction) string { return changed(d, Worse) }

func changed(d Direction, v string) string {
	var s []string
	for _, c := range d.Changes {
		if c.Verdict == v {
			s = append(s, c.Describe())
		}
	}
	return strings.Join(s, "; ")
}

func changeEvidence(d Direction, r *Result) []check.Evidence {
	var ev []check.Evidence
	for _, c := range d.Changes {
		ev = append(ev, check.Evidence{What: c.Metric, Value: c.describe(), Source: "noise: the larger spread of the two runs' samples, at least 5%"})
	}
	return ev
}

// compareNCCL compares two nccl-tests outputs run by run (in order): the
// plateau bus bandwidth (median of the three largest sizes, out of place),
// its noise the spread of those sizes' busbw in each run.
func compareNCCL(aName string, a []byte, bName string, b []byte) (*Result, error) {
	ra, rb := nccl.ParseTests(a), nccl.ParseTests(b)
	for _, x := range []struct {
		name string
		runs []*nccl.TestRun
	}{{aName, ra}, {bName, rb}} {
		if len(x.runs) == 0 {
			return nil, fmt.Errorf("%s: neither a bench results log nor nccl-tests output with a result table", x.name)
		}
	}
	res := &Result{A: aName, B: bName, Kind: "nccl-tests", Self: bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))}
	for _, x := range []struct {
		name string
		runs []*nccl.TestRun
	}{{aName, ra}, {bName, rb}} {
		for i, run := range x.runs {
			for _, row := range run.Rows {
				for _, v := range []float64{row.OutOfPlace.AlgbwGBps, row.OutOfPlace.BusbwGBps, row.InPlace.AlgbwGBps, row.InPlace.BusbwGBps} {
					if why := absurd(v, linkrate.GPUFabricMaxGBps, "GB/s"); why != "" {
						res.Absurd = append(res.Absurd, fmt.Sprintf("%s: run %d size %d B bandwidth %s", x.name, i+1, row.SizeBytes, why))
						break
					}
				}
			}
		}
	}
	var what []string
	for i := range min(len(ra), len(rb)) {
		coll := ra[i].Collective
		if coll == "" {
			coll = rb[i].Collective
		}
		subject := fmt.Sprintf("run %d", i+1)
		if coll != "" {
			subject += " (" + coll + ")"
			what = append(what, coll)
		}
		sa, sb := plateau(ra[i]), plateau(rb[i])
		if len(sa) == 0 && len(sb) == 0 {
			continue
		}
		// A plateau in one run only: the other measured nothing (0).
		sa, sb = samples(sa, 0), samples(sb, 0)
		d := Direction{Subject: subject, Changes: []Change{change("busbw", "GB/s", true, sa, sb)}}
		d.Verdict = overall(d.Changes)
		res.Directions = append(res.Directions, d)
	}
	if len(ra) != len(rb) {
		res.OnlyInA, res.OnlyInB = extra(ra, len(rb)), extra(rb, len(ra))
	}
	if len(res.Directions) == 0 {
		return nil, errors.New(aName + " and " + bName + " have no nccl-tests run with bus bandwidth in common")
	}
	res.What = cmp.Or(strings.Join(slices.Compact(what), ", "), "nccl-tests")
	res.Findings = findings(res)
	return res, nil
}

func extra(runs []*nccl.TestRun, from int) []string {
	var out []string
	for i := from; i < len(runs); i++ {
		out = append(out, fmt.Sprintf("run %d", i+1))
	}
	return out
}

// plateau: the out-of-place busbw of the three largest sizes.
func plateau(r *nccl.TestRun) []float64 {
	rows := slices.Clone(r.Rows)
	slices.SortFunc(rows, func(x, y nccl.Row) int { return cmp.Compare(y.SizeBytes, x.SizeBytes) })
	var out []float64
	for _, row := range rows[:min(3, len(rows))] {
		if v := row.OutOfPlace.BusbwGBps; v > 0 && absurd(v, linkrate.GPUFabricMaxGBps, "GB/s") == "" {
			out = append(out, row.OutOfPlace.BusbwGBps)
		}
	}
	return out
}

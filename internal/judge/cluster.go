package judge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/intake"
)

// Cluster is the judge step of report: it runs the doctor and fabric
// rules on snapshots given without a document of that kind, judges saved
// tool outputs as judge FILE does (default options), judges each results
// log once against the one cluster its records name (unless a bench
// document of the same run was given) and compares two of them, so the
// verdict rests on every input and the report only renders. intake.Load
// only read them.
func Cluster(in *intake.Inputs) error {
	plain := in.Fabrics // judged here unless a fabric check document came
	for _, x := range in.Saved {
		s, err := x.Format.ReadAs(x.Name, x.Data)
		if err != nil {
			return fmt.Errorf("input %w", err)
		}
		r, err := Saved(s, Options{})
		if err != nil {
			return fmt.Errorf("input %w", err)
		}
		if f, ok := s.Model.(*fabric.Snapshot); ok {
			in.Fabrics = append(in.Fabrics, f)
		}
		in.Findings = append(in.Findings, r.Findings...)
		in.Derived = append(in.Derived, fmt.Sprintf("%s: a saved %s output, judged with the rules rdmalab judge applies (default options)", x.Name, s.Format.Name))
	}
	in.Saved = nil
	if len(in.Hosts) > 0 && !in.Judged[envelope.Doctor] {
		in.Findings = append(in.Findings, hostcheck.Doctor(in.Hosts, hostcheck.Options{})...)
		rate := "no expected rate with one host: ports are judged against their NIC's maximum; a doctor document made with --expect-rate says more"
		if len(in.Hosts) > 1 {
			rate = "expected rate: the fleet's majority, where there is one"
		}
		in.Derived = append(in.Derived, "doctor rules on the host snapshots (no doctor results given; "+rate+")")
	}
	if len(plain) > 0 && !in.Judged[envelope.FabricCheck] {
		for _, s := range plain {
			fs, err := fabriccheck.Run(s, fabriccheck.Options{})
			if err != nil { // only a topology plan can fail, and none is given
				panic(err)
			}
			in.Findings = append(in.Findings, fs...)
		}
		in.Derived = append(in.Derived, "fabric check rules on the fabric snapshots (no fabric check results given; default thresholds)")
	}
	for _, l := range in.Logs {
		for _, run := range judgeLog(l) {
			if d := documentOf(in, run); d != "" {
				in.Skipped = append(in.Skipped, fmt.Sprintf("%s: %s %s is the run the bench document %s reports (judged there, with its cluster file)", run.Source, run.Engine, run.Test, d))
				continue
			}
			in.Bench = append(in.Bench, run)
			in.Findings = append(in.Findings, run.Findings...)
			in.Derived = append(in.Derived, fmt.Sprintf("bench verdicts for %s %s from the results log %s: judged here against the peers' median only (no cluster file given, so no declared link rate; default thresholds)", run.Engine, run.Test, run.Source))
		}
	}
	if len(in.Logs) == 2 {
		a, b := in.Logs[0], in.Logs[1]
		if r, err := compare.Run(a.Name, a.Data, b.Name, b.Data); err == nil {
			check.Sort(r.Findings)
			in.Compare = r
		}
	}
	in.Logs = nil
	check.Sort(in.Findings)
	return nil
}

// documentOf names the bench document given for the same run as a test
// judged from a results log, if any.
func documentOf(in *intake.Inputs, run intake.BenchRun) string {
	dup := ""
	for _, d := range in.Bench {
		if !d.FromLog && sameRun(d.Report, run.Report) {
			dup = d.Source
		}
	}
	return dup
}

// judgeLog judges each test of a bench --results log with bench.Analyze
// against a cluster made of the nodes it names: no cluster file, so no
// declared rate and default thresholds (peers only). A torn last line (an
// interrupted run) is left out, as bench --resume does.
func judgeLog(l *intake.Input) []intake.BenchRun {
	h, recs := l.Log.Header, l.Log.Records
	type test struct{ engine, test string }
	var order []test
	byTest := map[test][]bench.Record{}
	for _, r := range recs {
		k := test{r.Engine, r.Test}
		if _, ok := byTest[k]; !ok {
			order = append(order, k)
		}
		byTest[k] = append(byTest[k], r)
	}
	header := check.Evidence{What: "header", Value: fmt.Sprintf("%d nodes, cluster %s", h.Nodes, h.Cluster), Source: l.Name}
	var out []intake.BenchRun
	for _, k := range order {
		rs := byTest[k]
		var names []string
		latency := k.test == "lat" || strings.HasSuffix(k.test, "_lat")
		for _, r := range rs {
			for _, n := range []string{r.From, r.To} {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			if !r.Failed() && r.P50Us > 0 && r.Gbps == 0 {
				latency = true
			}
		}
		slices.Sort(names)
		c := &cluster.Cluster{Thresholds: cluster.DefaultThresholds}
		for _, n := range names {
			c.Nodes = append(c.Nodes, cluster.Node{Name: n})
		}
		rep := bench.Analyze(c, k.engine, k.test, latency, rs, nil, nil)
		run := intake.BenchRun{Report: rep, Source: l.Name, FromLog: true, Findings: rep.Findings}
		if h.Nodes > len(names) {
			f := bench.CheckRun.Reporter("").New(check.Unknown, "cluster", "the results log's cluster has %d nodes but its %s %s records name %d: the others were never measured (an interrupted run?)", h.Nodes, k.engine, k.test, len(names))
			f.Evidence = []check.Evidence{header}
			run.Findings = append(run.Findings, f)
		}
		out = append(out, run)
	}
	if len(order) == 0 {
		f := bench.CheckRun.Reporter("").New(check.Unknown, "cluster", "the results log holds no result: nothing was measured")
		f.Evidence = []check.Evidence{header}
		out = append(out, intake.BenchRun{Report: &bench.Report{Engine: "?", Test: "?"}, Source: l.Name, FromLog: true, Findings: []check.Finding{f}})
	}
	return out
}

// sameRun: a results log's test is the run a bench document reports when
// every direction is the same measurement (ends and start time).
func sameRun(a, b *bench.Report) bool {
	if a.Engine != b.Engine || a.Test != b.Test || len(a.Directions) != len(b.Directions) {
		return false
	}
	key := func(d bench.Direction) string { return d.From + ">" + d.To + "@" + d.Started.String() }
	seen := map[string]bool{}
	for _, d := range a.Directions {
		seen[key(d)] = true
	}
	for _, d := range b.Directions {
		if !seen[key(d)] {
			return false
		}
	}
	return true
}

// Load is report's road in: intake.Load reads every input, Cluster
// judges them once.
func Load(args []string) (*intake.Inputs, error) {
	in, err := intake.Load(args)
	if err != nil {
		return nil, err
	}
	if err := Cluster(in); err != nil {
		return nil, err
	}
	return in, nil
}

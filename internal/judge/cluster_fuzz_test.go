package judge

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/resultslog"
)

// A results log written as bench writes it comes back whole: no direction
// lost or invented, names intact whatever they hold; a last line cut short
// (an interrupted run) is the only thing dropped.
func FuzzBenchLog(f *testing.F) {
	f.Add("node01", "node02", uint8(3), 7.5, uint8(0))
	f.Add("a\nb", `"quoted"`, uint8(1), 0.0, uint8(5))
	f.Add("<x>", "ü", uint8(20), 1e9, uint8(200))
	f.Fuzz(func(t *testing.T, a, b string, n uint8, gbps float64, cut uint8) {
		if a == "" || b == "" || a == b || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // JSON itself replaces invalid UTF-8; bench never measures a node against itself
		}
		head, err := json.Marshal(resultslog.Header{Format: bench.Results.Format, Version: bench.Results.Version, Cluster: "f", Nodes: 2})
		if err != nil {
			t.Fatal(err)
		}
		lines := []string{string(head)}
		for i := 0; i < int(n%50)+1; i++ {
			from, to := a, b
			if i%2 == 1 {
				from, to = b, a
			}
			l, err := json.Marshal(bench.Record{Round: i + 1, From: from, To: to, Engine: "tcp", Test: "bw", Gbps: gbps, SamplesGbps: []float64{gbps}})
			if err != nil {
				return // NaN or Inf: bench cannot write it either
			}
			lines = append(lines, string(l))
		}
		whole := strings.Join(lines, "\n") + "\n"
		extra := lines[1][:int(cut)%len(lines[1])]
		x, err := intake.Classify("r.jsonl", []byte(whole+extra))
		if err != nil || x.What != intake.ResultsLog {
			t.Fatalf("%d records: %v %v", len(lines)-1, x, err)
		}
		in := &intake.Inputs{Judged: map[envelope.Kind]bool{}, Logs: []*intake.Input{x}}
		if err := Cluster(in); err != nil {
			t.Fatal(err)
		}
		if len(in.Bench) != 1 {
			t.Fatalf("%d bench runs, want 1", len(in.Bench))
		}
		// Later records of a direction replace earlier ones: both
		// directions when more than one record was written.
		want := min(len(lines)-1, 2)
		ds := in.Bench[0].Directions
		if len(ds) != want {
			t.Fatalf("%d directions, want %d", len(ds), want)
		}
		for _, d := range ds {
			if (d.From != a || d.To != b) && (d.From != b || d.To != a) {
				t.Fatalf("direction came back as %q → %q", d.From, d.To)
			}
		}
	})
}

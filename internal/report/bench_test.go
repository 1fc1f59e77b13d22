package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/cluster"
)

// A recorded 6-node run: n1 sends at 10%, n4 was taken out by preflight.
func TestBenchGolden(t *testing.T) {
	var y strings.Builder
	y.WriteString("nodes:\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&y, "  - {name: n%d, data: 10.0.0.%d}\n", i, i)
	}
	c, err := cluster.Parse([]byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	var recs []bench.Record
	for _, a := range c.Nodes {
		for _, b := range c.Nodes {
			if a.Name == b.Name {
				continue
			}
			r := bench.Record{From: a.Name, To: b.Name, Engine: "tcp", Test: "bw", SamplesGbps: []float64{9.4, 9.5}, Gbps: 9.45}
			switch {
			case a.Name == "n4" || b.Name == "n4":
				r = bench.Record{From: a.Name, To: b.Name, Engine: "tcp", Test: "bw", NotMeasured: "n4 was taken out of the run: preflight: n4 unreachable: its host key is not the one in known_hosts"}
			case a.Name == "n1":
				r.SamplesGbps, r.Gbps = []float64{0.95, 0.96}, 0.955
			}
			recs = append(recs, r)
		}
	}
	rep := bench.Analyze(c, "tcp", "bw", false, recs, map[string]string{"n4": "preflight: n4 unreachable: its host key is not the one in known_hosts"}, nil)
	var b bytes.Buffer
	Bench(&b, rep)
	golden(t, "bench-6-nodes.txt", b.Bytes())
}

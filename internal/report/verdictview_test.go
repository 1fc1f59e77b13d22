package report

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/judge"
)

// The page's parts agree with the verdict, on the recorded qdr-lab fabric
// and the recorded loopback bench run (its cluster file declares 12 Gb/s
// TCP): the link whose port counts symbol errors is a failing row, not a
// PASS above the counter's FAIL; the header counts the bench's six nodes;
// no cell above 105% of its ceiling or below 93% of a declared one is
// good; a subject is said once.
func TestViewAgreesWithTheVerdict(t *testing.T) {
	in, err := judge.Load([]string{"example:qdr-lab", "testdata/bench-tcp-loopback"})
	if err != nil {
		t.Fatal(err)
	}
	v := NewClusterView(in)
	if v.Verdict.State != NotReady || v.NodeCount != 6 {
		t.Errorf("verdict %s, %d node(s)", v.Verdict.State, v.NodeCount)
	}
	var lab02 *LinkRow
	for i, l := range v.Fabrics[0].Links {
		if l.A == "lab02 HCA-1 port 1" || l.B == "lab02 HCA-1 port 1" {
			lab02 = &v.Fabrics[0].Links[i]
		}
	}
	if lab02 == nil || lab02.Outcome != check.Fail {
		t.Errorf("the link with 37 symbol errors on its port: %+v", lab02)
	}
	th := cluster.DefaultThresholds
	for _, b := range v.Benches {
		for _, c := range b.Cells {
			if c.State == CellGood && c.CeilingGbps > 0 && (c.CeilingShare > th.AboveCeiling || c.CeilingShare < th.Healthy) {
				t.Errorf("%s → %s at %.0f%% of its ceiling is good", c.From, c.To, 100*c.CeilingShare)
			}
		}
	}
	said := ""
	for _, d := range v.Verdict.Deciding {
		if d.Check == "bench.direction.slow" {
			said = Said(d.Finding)
		}
	}
	if !strings.HasPrefix(said, "node01 → node03: 7.94 Gb/s") {
		t.Errorf("the first failure said %q", said)
	}
	if got := Said(check.Finding{Host: "h1", Subject: "mlx5_0 port 1", Message: "down"}); got != "h1 mlx5_0 port 1: down" {
		t.Errorf("said %q", got)
	}
}

package fabriccheck

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// BenchmarkFabricCheckVsTools runs, on one simulated fat tree of 1,024 HCAs
// and 40 switches, `rdmalab fabric check` (scan + every rule) beside what a
// person runs by hand for less: ibnetdiscover then ibqueryerrors. It prints
// both wall times and their ratio (the goal is ≤ 1.0).
//
//	go test ./internal/fabriccheck -run XXX -bench FabricCheckVsTools -benchtime 5x
func BenchmarkFabricCheckVsTools(b *testing.B) {
	sim := testhost.StartIBSim(b, testhost.FatTree(8, 32, 32))
	sim.StartSM("", 0)
	sim.WaitUp(3 * time.Minute)
	run := fabric.Exec{Dir: sim.Dir, Env: sim.Env(), Timeout: 2 * time.Minute}
	var ours, tools time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s, err := fabric.Scan(context.Background(), run, fabric.ScanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		r := linkrate.Rate{Gbps: 120}
		fs, err := Run(s, Options{Expect: linkrate.Expect{Rate: r, Source: "--expect-rate"}})
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if n := check.Count(fs)[check.Fail]; n != 0 || len(s.Links()) != 1024+8*32 {
			b.Fatalf("%d failures, %d links on a healthy tree", n, len(s.Links()))
		}

		start = time.Now()
		if _, err := run.Run(context.Background(), "ibnetdiscover"); err != nil {
			b.Fatal(err)
		}
		if _, err := run.Run(context.Background(), "ibqueryerrors"); err != nil {
			b.Fatal(err)
		}
		tools += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()/n, "rdmalab-s/op")
	b.ReportMetric(tools.Seconds()/n, "tools-s/op")
	b.ReportMetric(ours.Seconds()/tools.Seconds(), "ratio")
	fmt.Printf("fat tree 1024 HCAs: rdmalab fabric check %.3f s, ibnetdiscover+ibqueryerrors %.3f s, ratio %.2f\n",
		ours.Seconds()/n, tools.Seconds()/n, ours.Seconds()/tools.Seconds())
}

package compare

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func verdicts(r *Result) []string {
	var out []string
	for _, d := range r.Directions {
		for _, c := range d.Changes {
			out = append(out, d.Subject+" "+c.Metric+" "+c.Verdict)
		}
	}
	return out
}

// Seed 000's table, compared as its author read it: wrong NUMA placement
// is worse at p50 (+13%), p99 (+29%) and p99.9 (+53%); CPU contention
// without isolcpus leaves p50 (+4%) inside the noise and is worse at p99
// (+12%) and p99.9 (+45%).
func TestSeed000Experiment(t *testing.T) {
	m, _ := filepath.Glob(filepath.Join(testhost.SharedTestdata(t), "..", "seeds", "000_*.txt"))
	if len(m) != 1 {
		t.Fatalf("seed 000: %v", m)
	}
	seed, _ := os.ReadFile(m[0])
	for _, q := range []string{
		"| Optimized (isolcpus + NUMA + hugepages) | 1.44 μs | 1.53 μs | 5.22 μs |",
		"| Wrong NUMA placement | 1.62 μs (+13%) | 1.97 μs (+29%) | 7.99 μs (+53%) |",
		"| 1.50 μs (+4%) | 1.71 μs (+12%) | 7.59 μs (+45%) |",
		"increases p99 latency by 29% and p99.9 by 53%. CPU contention without isolation increases p99.9 by 45%.",
	} {
		if !strings.Contains(strings.ReplaceAll(string(seed), "\n", " "), q) {
			t.Fatalf("seed 000 does not say %q", q)
		}
	}
	opt := read(t, "seed000-optimised.jsonl")
	for _, c := range []struct {
		run  string
		want map[string]string
	}{
		{"seed000-wrong-numa.jsonl", map[string]string{"p50": Worse, "p99": Worse, "p99.9": Worse}},
		{"seed000-contention.jsonl", map[string]string{"p50": NoChange, "p99": Worse, "p99.9": Worse}},
		{"seed000-optimised.jsonl", map[string]string{"p50": NoChange, "p99": NoChange, "p99.9": NoChange}},
	} {
		r, err := Run("optimised", opt, c.run, read(t, c.run))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, dir := range []string{"vm00 → vm01", "vm01 → vm00"} {
			for _, metric := range []string{"p50", "p99", "p99.9"} {
				want = append(want, dir+" "+metric+" "+c.want[metric])
			}
		}
		if got := verdicts(r); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", c.run, got, want)
		}
		if worse := c.want["p99"] == Worse; check.Failed(r.Findings) != worse {
			t.Errorf("%s: failed %v: %+v", c.run, check.Failed(r.Findings), r.Findings)
		}
	}
	// The deltas are the seed's own percentages.
	r, _ := Run("optimised", opt, "wrong NUMA", read(t, "seed000-wrong-numa.jsonl"))
	var got []string
	for _, c := range r.Directions[0].Changes {
		got = append(got, c.Describe())
	}
	want := []string{"p50 1.44 → 1.62 µs (+13%, noise 5%): worse", "p99 1.53 → 1.97 µs (+29%, noise 5%): worse", "p99.9 5.22 → 7.99 µs (+53%, noise 5%): worse"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
}

// Noise: a change inside either run's own spread is no change, one
// outside it is named; a node whose send side is worse with most partners
// is named; directions measured in one run only are said, not compared.
func TestCompareNoiseAndNodes(t *testing.T) {
	log := func(gbps func(from, to string) []float64) []byte {
		var b strings.Builder
		b.WriteString(`{"format":"rdmalab-bench-results","version":2,"cluster":"x","nodes":4,"created":"2026-01-01T00:00:00Z"}` + "\n")
		for _, a := range []string{"n1", "n2", "n3", "n4"} {
			for _, c := range []string{"n1", "n2", "n3", "n4"} {
				if a == c {
					continue
				}
				s := gbps(a, c)
				if s == nil {
					continue
				}
				line, _ := json.Marshal(bench.Record{From: a, To: c, Engine: "tcp", Test: "bw", SamplesGbps: s, Gbps: bench.Median(s)})
				b.Write(append(line, '\n'))
			}
		}
		return []byte(b.String())
	}
	base := log(func(string, string) []float64 { return []float64{9.4, 9.5, 9.6} })
	noisy := log(func(from, to string) []float64 {
		if from == "n2" && to == "n3" {
			return []float64{7.0, 8.3, 9.6} // 13% lower, but its samples spread 31%
		}
		return []float64{9.3, 9.5, 9.6}
	})
	r, err := Run("a", base, "b", noisy)
	if err != nil {
		t.Fatal(err)
	}
	if check.Failed(r.Findings) {
		t.Errorf("inside the noise: %+v", r.Findings)
	}
	shaped := log(func(from, to string) []float64 {
		switch {
		case from == "n2":
			return []float64{1.9, 2.0, 2.1}
		case from == "n4" && to == "n1":
			return nil
		}
		return []float64{9.4, 9.5, 9.6}
	})
	r, err = Run("a", base, "b", shaped)
	if err != nil {
		t.Fatal(err)
	}
	var fails []string
	for _, f := range r.Findings {
		if f.Outcome == check.Fail {
			fails = append(fails, f.Check+" "+f.Host+" "+f.Subject)
			if len(f.Fix) == 0 || (f.Host != "" && !strings.Contains(f.Fix[0], f.Host)) {
				t.Errorf("%s %s %s: fix %q, naming the node", f.Check, f.Host, f.Subject, f.Fix)
			}
		}
	}
	// n4 → n1 vanished from the newer run: worse, never left out.
	want := []string{"compare.node n2 send side", "compare.direction  n2 → n1", "compare.direction  n2 → n3", "compare.direction  n2 → n4", "compare.missing  n4 → n1 (tcp bw)"}
	if !slices.Equal(fails, want) {
		t.Errorf("got %q", fails)
	}
	if len(r.OnlyInA) != 1 || r.OnlyInA[0] != "n4 → n1 (tcp bw)" {
		t.Errorf("only in a: %v", r.OnlyInA)
	}
	if _, err := Run("a", base, "b", []byte("# nccl-tests\n")); err == nil {
		t.Error("a results log against something else must be refused")
	}
}

// Two real nccl-tests outputs of the same 2-node RTX 3090 cluster: RDMA
// MTU 1024 against 256 lifts the plateau busbw 8.16 → 9.68 GB/s (+19%),
// far outside the runs' own spread; a run against itself is no change.
func TestCompareNCCLTests(t *testing.T) {
	dir := filepath.Join(testhost.SharedTestdata(t), "nccl-tests", "rtx3090-inc")
	mtu256, _ := os.ReadFile(filepath.Join(dir, "2node-2gpu-2nic_NO-INC_rdma-mtu256.txt"))
	mtu1024, _ := os.ReadFile(filepath.Join(dir, "2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"))
	r, err := Run("mtu256", mtu256, "mtu1024", mtu1024)
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(r); !slices.Equal(got, []string{"run 1 busbw better"}) || r.Directions[0].Changes[0].Describe() != "busbw 8.16 → 9.68 GB/s (+19%, noise 5%): better" {
		t.Errorf("%v %+v", got, r.Directions)
	}
	// A run against itself: no change, and said to prove nothing.
	r, err = Run("a", mtu1024, "b", mtu1024)
	if err != nil || check.Failed(r.Findings) || r.Directions[0].Verdict != NoChange || !r.Self {
		t.Errorf("%v %+v", err, r)
	}
	if got := outcomes(t, r); !slices.Contains(got, "unknown compare.self b") {
		t.Errorf("self-comparison not said: %v", got)
	}
	if _, err := Run("a", mtu1024, "b", []byte("hello\n")); err == nil || !strings.Contains(err.Error(), "b:") {
		t.Errorf("not nccl-tests output: %v", err)
	}
}

// Any two sets of samples: the noise is never below the floor nor below
// either run's spread, "no change" is exactly a change within it, and a
// run compared with itself never changes.
func FuzzChange(f *testing.F) {
	f.Add(1.44, 1.45, 1.46, 1.60, 1.62, 1.64, false)
	f.Add(9.4, 9.5, 9.6, 2.0, 2.0, 2.1, true)
	f.Fuzz(func(t *testing.T, a1, a2, a3, b1, b2, b3 float64, higherBetter bool) {
		for _, v := range []float64{a1, a2, a3, b1, b2, b3} {
			if !(v > 1e-6 && v < 1e9) {
				return
			}
		}
		sa, sb := []float64{a1, a2, a3}, []float64{b1, b2, b3}
		c := change("m", "u", higherBetter, sa, sb)
		if c.Noise < Floor || c.Noise < spread(sa) || c.Noise < spread(sb) {
			t.Fatalf("noise %g below the floor or a spread", c.Noise)
		}
		if (c.Verdict == NoChange) != (math.Abs(c.Delta) <= c.Noise) {
			t.Fatalf("%+v", c)
		}
		if self := change("m", "u", higherBetter, sa, sa); self.Verdict != NoChange {
			t.Fatalf("a run against itself: %+v", self)
		}
	})
}

package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
)

func testCluster(t *testing.T, n int, link string) *cluster.Cluster {
	t.Helper()
	var b strings.Builder
	b.WriteString("launcher: {type: local}\n" + link + "nodes:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {name: n%d, data: 10.9.0.%d}\n", i, i)
	}
	c, err := cluster.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func findingsOf(rep *bench.Report, outcome check.Outcome) []check.Finding {
	var out []check.Finding
	for _, f := range rep.Findings {
		if f.Outcome == outcome {
			out = append(out, f)
		}
	}
	return out
}

func hostsOf(fs []check.Finding) []string {
	var h []string
	for _, f := range fs {
		h = append(h, f.Host+":"+f.Check)
	}
	slices.Sort(h)
	return h
}

// No rate declared: n1 sends at 7% of its peers, n8 receives at 40%;
// fakeTCP answers the tcp engine's commands with rate(from, to) Gb/s.
func fakeTCP(c *cluster.Cluster, rate func(from, to string) (float64, error)) *launch.Fake {
	byAddr := map[string]string{}
	for _, n := range c.Nodes {
		byAddr[n.Data] = n.Name
	}
	f := &launch.Fake{}
	f.Run = func(node string, argv []string) launch.FakeRun {
		if slices.Contains(argv, "tcp-server") {
			return launch.FakeRun{Stdout: Ready + "\n"}
		}
		addr := argv[slices.Index(argv, "--connect")+1]
		to := byAddr[addr[:strings.LastIndex(addr, ":")]]
		g, err := rate(node, to)
		if err != nil {
			if err.Error() == "hang" {
				return launch.FakeRun{Hang: true}
			}
			return launch.FakeRun{Err: err}
		}
		b, _ := json.Marshal(TCPResult{Mode: "bw", Gbps: g})
		return launch.FakeRun{Stdout: string(b) + "\n"}
	}
	f.Session = FakeAgent(f.Run)
	return f
}

func runFake(t *testing.T, c *cluster.Cluster, l launch.Launcher, prior []bench.Record, retest bool) ([]bench.Record, *Runner) {
	t.Helper()
	eng, _ := NewEngine("tcp", "bw", 1, time.Second, "rdmalab", nil)
	r := &Runner{Cluster: c, Launcher: l, Engine: eng, Plan: bench.CirclePlan(len(c.Nodes)), Samples: 2, Timeout: 300 * time.Millisecond, RunID: "t", Retest: retest}
	recs, err := r.Run(context.Background(), prior)
	if err != nil {
		t.Fatal(err)
	}
	return recs, r
}

// Both directions of every pair, the send-throttled and receive-throttled
// nodes named, and the retest repeats each failing direction against two
// partners healthy both ways.
func TestRunnerBothDirectionsAndRetest(t *testing.T) {
	c := testCluster(t, 8, "")
	f := fakeTCP(c, func(from, to string) (float64, error) {
		switch {
		case from == "n1":
			return 9, nil
		case to == "n8":
			return 10, nil
		}
		return 95, nil
	})
	recs, r := runFake(t, c, f, nil, true)
	dirs := map[string]int{}
	for _, rec := range recs {
		if !rec.Retest {
			dirs[rec.From+">"+rec.To]++
		}
	}
	if len(dirs) != 56 {
		t.Errorf("%d directions, want 8×7 = 56", len(dirs))
	}
	rep := bench.Analyze(c, "tcp", "bw", false, recs, r.Out(), r.Leftovers())
	if got := hostsOf(findingsOf(rep, check.Fail)); !slices.Equal(got, []string{"n1:bench.node.send", "n8:bench.node.receive"}) {
		t.Fatalf("%v", got)
	}
	for _, s := range rep.Suspects {
		if s.Confirmed != "yes" || len(s.Retests) != 2 {
			t.Errorf("%+v", s)
		}
		for _, rt := range s.Retests {
			for _, p := range []string{rt.From, rt.To} {
				if p != s.Node && (p == "n1" || p == "n8") {
					t.Errorf("retested against a bad node: %+v", rt)
				}
			}
			if (s.Side == bench.Send) != (rt.From == s.Node) {
				t.Errorf("the retest did not repeat the failing direction: %+v", rt)
			}
		}
	}
	if len(rep.Leftovers) != 0 {
		t.Errorf("leftovers %v", rep.Leftovers)
	}
}

// A hanging node is taken out after timing out with two partners; its
// remaining pairs are recorded as not measured, and the run is bounded.
// An unreachable node is taken out at once.
func TestRunnerTakesOutHangingAndDeadNodes(t *testing.T) {
	c := testCluster(t, 8, "")
	var mu sync.Mutex
	dead := false
	f := fakeTCP(c, func(from, to string) (float64, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case from == "n5" || to == "n5":
			return 0, errors.New("hang")
		case dead && (from == "n3" || to == "n3"):
			return 0, &launch.UnreachableError{Node: "n3", Reason: "connection refused"}
		}
		return 95, nil
	})
	go func() {
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		dead = true
		mu.Unlock()
		f.SetUnready("n3", &launch.UnreachableError{Node: "n3", Reason: "connection refused"})
	}()
	start := time.Now()
	recs, r := runFake(t, c, f, nil, false)
	out := r.Out()
	if !strings.Contains(out["n5"], "timed out with") || len(out) > 2 {
		t.Errorf("out: %v", out)
	}
	timeouts := 0
	for _, rec := range recs {
		if rec.TimedOut {
			timeouts++
		}
	}
	if timeouts > 2 {
		t.Errorf("%d timeouts: a hanging node must be taken out after two", timeouts)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	rep := bench.Analyze(c, "tcp", "bw", false, recs, out, nil)
	for _, f := range findingsOf(rep, check.Fail) {
		if f.Host != "n5" && f.Host != "n3" {
			t.Errorf("named a healthy node: %+v", f)
		}
	}
}

// Resume measures exactly the failed pairs again, keys pairs whichever end
// is listed first, and the report is computed from the final state.
func TestRunnerResume(t *testing.T) {
	c := testCluster(t, 6, "")
	broken := true
	var mu sync.Mutex
	f := fakeTCP(c, func(from, to string) (float64, error) {
		mu.Lock()
		defer mu.Unlock()
		if broken && (from == "n2" && to == "n4") {
			return 0, errors.New("connection reset")
		}
		return 95, nil
	})
	first, _ := runFake(t, c, f, nil, false)
	rep := bench.Analyze(c, "tcp", "bw", false, first, nil, nil)
	if got := hostsOf(findingsOf(rep, check.Fail)); !slices.Equal(got, []string{":bench.direction.error"}) {
		t.Fatalf("%v", got)
	}
	// --keep-failed: nothing is measured again.
	eng, _ := NewEngine("tcp", "bw", 1, time.Second, "rdmalab", nil)
	keep := fakeTCP(c, func(string, string) (float64, error) { return 95, nil })
	kr := &Runner{Cluster: c, Launcher: keep, Engine: eng, Plan: bench.CirclePlan(len(c.Nodes)), Samples: 2, Timeout: time.Second, RunID: "t", KeepFailed: true}
	if _, err := kr.Run(context.Background(), first); err != nil || len(keep.Calls()) != 0 {
		t.Errorf("--keep-failed measured %d commands again (%v)", len(keep.Calls()), err)
	}
	// Fixed; the cluster file lists the nodes in another order.
	mu.Lock()
	broken = false
	mu.Unlock()
	slices.Reverse(c.Nodes)
	f2 := fakeTCP(c, func(string, string) (float64, error) { return 95, nil })
	all, _ := runFake(t, c, f2, first, false)
	var again []string
	for _, call := range f2.Calls() {
		if slices.Contains(call.Argv, "tcp-client") {
			again = append(again, call.Node)
		}
	}
	slices.Sort(again)
	if !slices.Equal(again, []string{"n2", "n2", "n4", "n4"}) { // both directions, two samples
		t.Errorf("resume ran clients on %v, want only the failed pair n2 ↔ n4", again)
	}
	rep = bench.Analyze(c, "tcp", "bw", false, all, nil, nil)
	if check.Failed(rep.Findings) || len(findingsOf(rep, check.Pass)) != 6 {
		t.Errorf("the final state is healthy: %+v", rep.Findings)
	}
}

// Preflight lists every unready node with its reason.
func TestPreflight(t *testing.T) {
	c := testCluster(t, 4, "")
	f := &launch.Fake{Unready: map[string]error{"n2": &launch.UnreachableError{Node: "n2", Reason: "its host key is not the one in known_hosts"}, "n4": &launch.MissingError{Node: "n4", What: []string{"ib_write_bw"}}}}
	eng, _ := NewEngine("perftest", "", 1, time.Second, "", nil)
	got := Preflight(context.Background(), f, c.Nodes, eng, time.Second)
	if len(got) != 2 || !strings.Contains(got["n2"], "host key") || !strings.Contains(got["n4"], "lacks ib_write_bw") {
		t.Errorf("%v", got)
	}
	e := (&UnreadyError{got}).Error()
	if !strings.HasPrefix(e, "2 node(s) not ready") || !strings.Contains(e, "\n  n2: ") {
		t.Error(e)
	}
}

func TestOptionsValidate(t *testing.T) {
	good := Options{ClusterFile: "c.yaml", Engine: "tcp", Seconds: 2, Samples: 1, Timeout: time.Minute}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Timeout = 0 }, "--timeout 0s: must be positive"},
		{func(o *Options) { o.Timeout = -5 * time.Second }, "must be positive"},
		{func(o *Options) { o.Seconds = 0 }, "--seconds 0"},
		{func(o *Options) { o.Seconds = -5 }, "--seconds -5"},
		{func(o *Options) { o.Rate = "fast" }, "--expect-rate"},
		{func(o *Options) { o.Layer = "pigeon" }, "--expect-link-layer"},
		{func(o *Options) { o.Resume, o.Overwrite = true, true }, "contradict"},
	} {
		o := good
		c.edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	if _, err := NewEngine("perftest", "bogus", 1, time.Second, "", nil); err == nil || !strings.Contains(err.Error(), "ib_write_bw") {
		t.Errorf("--test bogus: %v", err)
	}
}

// --schedule cover's flags are refused before any work when they
// contradict.
func TestCoverFlagRefusals(t *testing.T) {
	good := Options{ClusterFile: "c.yaml", Engine: "tcp", Seconds: 2, Samples: 1, Timeout: time.Minute, Schedule: "cover"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Schedule = "fastest" }, `--schedule "fastest": want matching, circle or cover`},
		{func(o *Options) { o.Rounds = "r.txt" }, "--schedule cover plans its own rounds"},
		{func(o *Options) { o.Schedule, o.Fabric.RoutesFile = "", "lfts.dump" }, "add --schedule cover"},
	} {
		o := good
		c.edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

package benchrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
)

// 256 SIMULATED nodes, one slow cable: the default schedule (matching)
// names the node in 3 rounds and confirms both its sides against two
// known-good partners each in 4 one-direction rounds more, far under
// N−1 = 255; no other node is failed, and the pairs
// of a node out of the run are summarised per node, not per pair.
func TestSimulatedFleetNamesTheSlowNode(t *testing.T) {
	const n = 256
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(file, []byte(SimClusterFile(n)), 0o600); err != nil {
		t.Fatal(err)
	}
	sim := &SimFleet{Gbps: 95, Slow: "sim00137", SlowShare: 0.5, Jitter: 0.02}
	c, err := cluster.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	fake := sim.Launcher(c)
	fake.SetUnready("sim00200", &launch.UnreachableError{Node: "sim00200", Reason: "connection refused"})
	var progress strings.Builder
	rep, err := Run(context.Background(), Options{ClusterFile: file, Engine: "tcp", Seconds: 5, Samples: 3, Timeout: time.Minute,
		Results: filepath.Join(dir, "r.jsonl"), WithoutUnready: true, Launcher: fake, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "schedule matching: 3 round(s) of 128 pair(s)") {
		t.Errorf("the schedule was not said before round 1:\n%.300s", progress.String())
	}
	named := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Outcome == check.Fail {
			named[f.Host+" "+f.Check] = true
		}
	}
	want := map[string]bool{"sim00137 bench.node.send": true, "sim00137 bench.node.receive": true, "sim00200 bench.node.unreachable": true}
	for k := range named {
		if !want[k] {
			t.Errorf("named %s", k)
		}
	}
	for k := range want {
		if !named[k] {
			t.Errorf("did not name %s", k)
		}
	}
	for _, s := range rep.Suspects {
		if s.Confirmed != "yes" {
			t.Errorf("%s %s not confirmed against known-good partners: %+v", s.Node, s.Side, s.Retests)
		}
	}
	if u := rep.Rounds; u == nil || u.Schedule != "matching" || u.Measured != bench.MatchingRounds || u.Retest > 4 {
		// both sides suspect, two partners each, one direction at a time
		t.Errorf("rounds used %+v, want %d matchings and at most 4 retest rounds", u, bench.MatchingRounds)
	}
	for _, d := range rep.Directions {
		if d.NotMeasured != "" {
			t.Errorf("a not-measured record per pair: %+v", d.Record)
		}
	}
	for _, s := range rep.Nodes {
		if s.Name == "sim00200" && s.NotMeasured != 2*bench.MatchingRounds {
			t.Errorf("sim00200: %d directions not measured, want %d", s.NotMeasured, 2*bench.MatchingRounds)
		}
	}
}

// A dry run of 2,048 nodes plans the default (3 matchings) and says what
// the circle method would cost, without starting anything.
func TestDryRunPlansWithoutStarting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(SimClusterFile(2048)), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := &launch.Fake{}
	d, err := PlanRun(context.Background(), Options{ClusterFile: file, Engine: "tcp", Seconds: 5, Samples: 3, Timeout: time.Minute, Launcher: fake})
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.Calls()) != 0 {
		t.Errorf("a dry run started %d processes", len(fake.Calls()))
	}
	m, c := d.Schedules[0], d.Schedules[1]
	if d.Chosen != "matching" || m.Rounds != 3 || m.PairsPerRound != 1024 || m.WallSeconds > 15*60 || c.Name != "circle" || c.Rounds != 2047 || c.WallSeconds < 12*3600 {
		t.Errorf("%+v", d.Schedules)
	}
	if len(d.Rounds) != 3 || d.Rounds[0].Pairs != 1024 || len(d.Rounds[0].List) != 0 {
		t.Errorf("rounds %+v", d.Rounds)
	}
	var out strings.Builder
	d.Write(&out)
	if !strings.Contains(out.String(), "matching (this run)  3") {
		t.Errorf("%s", out.String())
	}
}

package slurmrun_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Inside a four-node allocation on a real Slurm cluster, rdmalab bench
// needs no cluster file: the nodes are SLURM_JOB_NODELIST's, every server
// and client is an srun step pinned to its node, and every pair is
// measured once in each direction.
func TestBenchThroughSrun(t *testing.T) {
	if testing.Short() {
		t.Skip("a Slurm cluster: run in full, not in the -short race pass")
	}
	dir := testhost.TempDir(t)
	bin := testhost.Rdmalab(t)
	s := testhost.StartSlurm(t, 4, testhost.SlurmOptions{})
	results := filepath.Join(dir, "results.jsonl")
	start := time.Now()
	cmd := s.Command("salloc", "-N4", "--quiet", "--time=5", bin, "bench", "--engine", "tcp", "--seconds", "1", "--samples", "1",
		"--timeout", "20s", "--results", results)
	out, err := cmd.CombinedOutput()
	if code := exitOf(err); code != 0 && code != 1 && code != 3 { // 1, 3: a verdict on a busy machine
		t.Fatalf("salloc … rdmalab bench: exit %d: %v\n%s", code, err, out)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _, err := bench.Results.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range recs {
		if r.Retest {
			continue
		}
		seen[r.From+">"+r.To]++
		if r.Failed() || r.Gbps <= 0 {
			t.Errorf("%s → %s through srun: %+v", r.From, r.To, r)
		}
	}
	if len(seen) != 12 {
		t.Errorf("%d directions measured, want 12 (4 nodes, both ways):\n%s", len(seen), out)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s measured %d times", k, n)
		}
	}
	// Each server and client was a step of the allocation.
	var logs string
	for _, n := range s.Nodes {
		b, _ := os.ReadFile(filepath.Join(s.Dir, "log", "slurmd-"+n+".log"))
		logs += string(b)
	}
	if steps := strings.Count(logs, "launch task StepId="); steps < 24 {
		t.Errorf("only %d job steps created; want one per server and client (24+)", steps)
	}
	// The preflight's probes and each round's reaps were one step over
	// the nodes (launch.NewSrun's fan-out), not one step per node: the
	// run created fewer steps than it launched tasks, and at most 24 ends,
	// 1 preflight, 3 reaps and 12 for retests on a busy machine (a probe
	// or reap per node would be 16 more).
	ids := map[string]bool{}
	for _, l := range strings.Split(logs, "\n") {
		if _, id, ok := strings.Cut(l, "launch task StepId="); ok {
			ids[strings.Fields(id)[0]] = true
		}
	}
	if tasks := strings.Count(logs, "launch task StepId="); len(ids) >= tasks || len(ids) > 24+1+3+12 {
		t.Errorf("%d steps for %d tasks: the probes and reaps were not fanned out in one step each", len(ids), tasks)
	}
	t.Logf("4 nodes, 12 directions through srun in %s", time.Since(start).Round(100*time.Millisecond))
}

func exitOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

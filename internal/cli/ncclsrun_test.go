package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// nccl run honours the cluster file's launcher: with launcher: {type: srun}
// inside a real Slurm allocation (one machine, two slurmd nodes) every rank
// starts in one srun step, each task on its node, and the run is judged
// and logged. The ranks are a stand-in for all_reduce_perf (no GPU here)
// that replays a real 2-node nccl-tests table from rank 0 and records on
// which Slurm node each task ran.
func TestNCCLRunThroughSrun(t *testing.T) {
	if testing.Short() {
		t.Skip("a Slurm cluster: run in full")
	}
	bin := testhost.Rdmalab(t)
	s := testhost.StartSlurm(t, 2, testhost.SlurmOptions{})
	dir := testhost.TempDir(t)
	table, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "table.txt"), table, 0o644)
	standIn := filepath.Join(dir, "all_reduce_perf")
	os.WriteFile(standIn, []byte(`#!/bin/sh
d=$(dirname "$0")
echo "$SLURMD_NODENAME $SLURM_PROCID $RDMALAB_RUN" >> "$d/ranks"
if [ "$SLURM_PROCID" = 0 ]; then cat "$d/table.txt"; fi
`), 0o755)
	cl := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cl, []byte(`nodes:
  - {name: node1, data: 127.0.0.1}
  - {name: node2, data: 127.0.0.2}
link: {layer: RoCE, rate_gbps: 100, mtu_bytes: 1024}
launcher: {type: srun}
`), 0o644)
	runs := filepath.Join(dir, "runs")
	out, err := s.Command("salloc", "-N2", "--quiet", "--time=5", bin, "nccl", "run", "--cluster", cl, "--test", standIn,
		"--nodes", "2", "--dir", runs, "--timeout", "60s").CombinedOutput()
	if code := exitCode(err); code == ExitUsage || code < 0 {
		t.Fatalf("salloc … nccl run: exit %d\n%s", code, out)
	}
	t.Logf("%s", out)
	ranks, _ := os.ReadFile(filepath.Join(dir, "ranks"))
	if !strings.Contains(string(ranks), "node1 ") || !strings.Contains(string(ranks), "node2 ") || strings.Count(string(ranks), "\n") != 2 {
		t.Errorf("the ranks did not run one on each node through srun:\n%s\n%s", ranks, out)
	}
	b, err := os.ReadFile(filepath.Join(runs, "results.jsonl"))
	if err != nil {
		t.Fatalf("no results log: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil || !strings.Contains(lines[len(lines)-1], "node2") {
		t.Errorf("the run's record: %v\n%s", err, lines[len(lines)-1])
	}
}

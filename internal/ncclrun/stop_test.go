package ncclrun

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// hereJob launches a job as one local process that says it started and
// waits: a stop in the middle of the run is all this test needs of it (the
// real launch, mpirun over ssh, is stopped by SIGTERM in internal/cli's
// signal tests).
type hereJob struct{}

func (hereJob) Command(ctx context.Context, j launch.Job) (*exec.Cmd, error) {
	return exec.CommandContext(ctx, "sh", "-c", "echo started; exec sleep 60"), nil
}
func (hereJob) Reap(context.Context, cluster.Node, string) ([]string, error) { return nil, nil }
func (hereJob) Close() error                                                 { return nil }

// TestStoppedRunIsNeitherJudgedNorLogged: a stop during the last run ends
// Run with the stop, not with that run judged as a failed launch (which
// made 'nccl run' exit 1 instead of 143 whenever it stopped within the
// grace), and the results log keeps only what finished.
func TestStoppedRunIsNeitherJudgedNorLogged(t *testing.T) {
	dir := testhost.TempDir(t)
	cl, err := cluster.Parse([]byte("nodes:\n  - {name: n1, data: 10.0.0.1}\n  - {name: n2, data: 10.0.0.2}\nlink: {layer: RoCE, rate_gbps: 100, mtu_bytes: 1024}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	results := filepath.Join(dir, "results.jsonl")
	rs, err := Run(ctx, RunOptions{Cluster: cl, NodeCounts: []int{2}, Tests: []string{"all_reduce_perf"}, Timeout: time.Minute,
		Dir: filepath.Join(dir, "runs"), Launcher: hereJob{}, Results: results, Judge: nccl.JudgeOptions{NIC: cl.Resolved(), RailsPerNode: 1}})
	if !errors.Is(err, context.Canceled) || len(rs) != 0 {
		t.Fatalf("Run: %v, %d result(s): %+v", err, len(rs), rs)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	if _, logged, valid, err := nccl.Results.Parse(b); err != nil || len(logged) != 0 || valid != len(b) {
		t.Errorf("results log: %d run(s) logged, %d of %d bytes valid, %v\n%s", len(logged), valid, len(b), err, b)
	}
}

package ncclrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/resultslog"
)

// echoLauncher starts every job as a local shell that prints nothing and
// records the cluster sizes it was asked for.
type echoLauncher struct{ sizes []int }

func (e *echoLauncher) Command(ctx context.Context, j launch.Job) (*exec.Cmd, error) {
	e.sizes = append(e.sizes, len(j.Nodes))
	return exec.CommandContext(ctx, "true"), nil
}

func (*echoLauncher) Reap(context.Context, cluster.Node, string) ([]string, error) { return nil, nil }
func (*echoLauncher) Close() error                                                 { return nil }

// The results log of nccl run follows bench's rules: a second run on a
// held log is refused naming the holder; a torn last line is named by
// line and the file left as it is; cut, --resume runs only what the log
// lacks and appends after what it held.
func TestRunResultsLog(t *testing.T) {
	dir := t.TempDir()
	cl, err := cluster.Parse([]byte("nodes:\n  - {name: n1, data: 10.0.0.1}\n  - {name: n2, data: 10.0.0.2}\n  - {name: n3, data: 10.0.0.3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results.jsonl")
	l := &echoLauncher{}
	o := RunOptions{Cluster: cl, NodeCounts: []int{2, 3}, Timeout: 5 * time.Second, Dir: dir, Launcher: l, Results: path}
	rs, err := Run(context.Background(), o)
	if err != nil || len(rs) != 2 {
		t.Fatalf("%v %v", rs, err)
	}
	good, _ := os.ReadFile(path)
	h, recs, valid, err := nccl.Results.Parse(good)
	if err != nil || h.Format != "rdmalab-nccl-results" || h.Cluster != cl.Fingerprint() || h.Nodes != 3 || len(recs) != 2 || valid != len(good) {
		t.Fatalf("%+v %d records, %d/%d valid, %v\n%s", h, len(recs), valid, len(good), err, good)
	}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--resume continues it, --overwrite replaces it") {
		t.Errorf("a second run over a log with results: %v", err)
	}

	// held by another run
	held, _, err := nccl.Results.Open(path, resultslog.Target{Cluster: cl.Fingerprint(), Nodes: 3, Mode: resultslog.Resume})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []resultslog.Mode{resultslog.Create, resultslog.Resume, resultslog.Overwrite} {
		o.Mode = m
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by process %d", os.Getpid())) {
			t.Errorf("mode %d: a run on a held log: %v", m, err)
		}
	}
	held.Close()

	// the 2-node run finished, the 3-node one was cut mid-line
	first, _, _ := strings.Cut(string(good[strings.IndexByte(string(good), '\n')+1:]), "\n")
	torn := string(good[:strings.IndexByte(string(good), '\n')+1]) + first + "\n" + `{"test":"all_reduce_perf","node_co`
	os.WriteFile(path, []byte(torn), 0o644)
	o.Mode = resultslog.Resume
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "line 3 is not a complete result") || !strings.Contains(err.Error(), "sed -i '3,$d'") {
		t.Errorf("resumed past a torn line: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != torn {
		t.Error("a refused resume changed the file")
	}
	os.WriteFile(path, []byte(torn[:strings.LastIndexByte(torn, '\n')+1]), 0o644)
	l.sizes = nil
	rs, err = Run(context.Background(), o)
	if err != nil || len(rs) != 2 || fmt.Sprint(l.sizes) != "[3]" {
		t.Fatalf("resume ran %v: %v %v", l.sizes, rs, err)
	}
	b, _ := os.ReadFile(path)
	if _, recs, valid, err := nccl.Results.Parse(b); err != nil || len(recs) != 2 || valid != len(b) || recs[0].NodeCount != 2 || recs[1].NodeCount != 3 {
		t.Errorf("after resuming: %v %v\n%s", recs, err, b)
	}
}

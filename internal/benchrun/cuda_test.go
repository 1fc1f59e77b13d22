package benchrun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// --use-cuda on a stand-in perftest that replays a real ConnectX-7 NDR
// ib_write_bw output (this machine has no GPU and no RDMA NIC): every pair
// is measured in host memory, then in GPU memory; n3's GPU memory runs at
// a fifth of its host rate (staging through host memory), so exactly the
// directions with n3 at either end fail gpudirect.bench and the rest pass.
func TestUseCUDAReplayNoGPU(t *testing.T) {
	real, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "perftest/cx7-ndr-b2b-perftest25/ib_write_bw.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clusterFile := filepath.Join(dir, "cluster.yaml")
	var nodes strings.Builder
	for i := 1; i <= 4; i++ {
		nodes.WriteString("  - {name: n" + string(rune('0'+i)) + ", data: 10.9.0." + string(rune('0'+i)) + ", device: mlx5_0, port: 1}\n")
	}
	os.WriteFile(clusterFile, []byte("launcher: {type: local}\nlink: {layer: IB, rate: \"4X NDR\"}\nnodes:\n"+nodes.String()), 0o644)
	byAddr := map[string]string{"10.9.0.1": "n1", "10.9.0.2": "n2", "10.9.0.3": "n3", "10.9.0.4": "n4"}
	fake := &launch.Fake{Run: func(node string, argv []string) launch.FakeRun {
		server := !strings.HasPrefix(argv[len(argv)-1], "10.9.")
		if server {
			return launch.FakeRun{Stdout: "Waiting for client to connect... *\n"}
		}
		cuda := slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, "--use_cuda=") })
		out := string(real)
		if cuda && (node == "n3" || byAddr[argv[len(argv)-1]] == "n3") {
			out = strings.Replace(out, "392.34", "78.47", 1) // a fifth: staged through host memory
		}
		return launch.FakeRun{Stdout: out}
	}}
	rep, err := Run(context.Background(), Options{ClusterFile: clusterFile, Engine: "perftest", Test: "ib_write_bw", Seconds: 1, Samples: 1,
		Timeout: 5 * time.Second, Results: filepath.Join(dir, "r.jsonl"), UseCUDA: true, NoRetest: true, Launcher: fake})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CUDA == nil || len(rep.GPUDirect) != 12 {
		t.Fatalf("want 12 GPU-vs-host verdicts, got %d", len(rep.GPUDirect))
	}
	for _, f := range rep.GPUDirect {
		withN3 := strings.Contains(f.Subject, "n3")
		if withN3 && (f.Outcome != check.Fail || !strings.Contains(f.Message, "5.0× slower than host memory")) ||
			!withN3 && f.Outcome != check.Pass {
			t.Errorf("%s: %s %s", f.Subject, f.Outcome, f.Message)
		}
	}
	// Both memories' results are in the one log, each under its engine.
	b, _ := os.ReadFile(filepath.Join(dir, "r.jsonl"))
	_, recs, _, err := bench.Results.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]int{}
	for _, r := range recs {
		engines[r.Engine]++
	}
	if engines["perftest"] != 12 || engines["perftest+cuda"] != 12 {
		t.Errorf("log holds %v, want 12 directions of each", engines)
	}
	if !check.Failed(rep.Findings) {
		t.Error("a staging GPU must fail the run")
	}
	// A latency test or the tcp engine cannot prove GPUDirect.
	o := Options{ClusterFile: clusterFile, Engine: "tcp", Seconds: 1, Samples: 1, Timeout: 5 * time.Second, Results: "x", UseCUDA: true}
	if err := o.Validate(); err == nil {
		t.Error("--use-cuda with the tcp engine accepted")
	}
}

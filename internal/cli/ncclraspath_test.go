package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// nccl judge follows an ncclras report's lagging rank through the flags:
// the docs' sleep-fault report with rank 7 on node0001 of the 2x4x4 fat
// tree (its fabric scan and dump_fts tables captured from ibsim), node0001
// the HGX example with mlx5_3 the fabric's node0001 HCA: the finding names
// the rail, its cable, the routes by GUID and the follow-up bench command.
// --routes without --fabric is refused naming the flag.
func TestNCCLJudgeRASPathFlags(t *testing.T) {
	ras, snap := rasOnFatTree(t)
	fab, routes := "../route/testdata/fattree-2x4x4.fabric.json", "../route/testdata/fattree-2x4x4-updn.dump_fts.txt"

	out, errOut, code := run(t, "nccl", "judge", ras, "--snapshot", snap, "--fabric", fab, "--routes", routes, "--cluster", "c.yaml")
	if code == ExitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"its GPU's rail is mlx5_3 port 1, cabled mlx5_3 port 1 ↔ leaf01 port 1",
		"node0001 port 1 (port GUID 0x0000000000100001) ↔ leaf01 port 1 (switch GUID 0x0000000000200002)",
		"> retest.rounds && rdmalab bench --cluster c.yaml --rounds retest.rounds"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, errOut, code = run(t, "nccl", "judge", ras, "--routes", routes)
	if code != ExitUsage || !strings.Contains(errOut, "--routes") || !strings.Contains(errOut, "needs --fabric") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// judge (the saved-output step) follows the suspect the same way: its
// --snapshot is the rank's host, --fabric and --routes its fabric.
func TestJudgeRASPathFlags(t *testing.T) {
	ras, snap := rasOnFatTree(t)
	out, errOut, code := run(t, "judge", ras, "--snapshot", snap, "--fabric", "../route/testdata/fattree-2x4x4.fabric.json", "--routes", "../route/testdata/fattree-2x4x4-updn.dump_fts.txt")
	if code == ExitUsage || !strings.Contains(out, "cabled mlx5_3 port 1 ↔ leaf01 port 1") || !strings.Contains(out, "node0001 port 1 (port GUID 0x0000000000100001) ↔ leaf01 port 1 (switch GUID 0x0000000000200002)") || !strings.Contains(out, "rdmalab bench --cluster CLUSTER --rounds retest.rounds") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// rasOnFatTree writes the docs' sleep-fault report with rank 7 on
// node0001 of the 2x4x4 fat tree (../route/testdata, captured from ibsim)
// and node0001's snapshot: the HGX example with mlx5_3 the fabric's
// node0001 HCA (node GUID 0x100000).
func rasOnFatTree(t *testing.T) (ras, snap string) {
	t.Helper()
	d := t.TempDir()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ncclras/nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ras = filepath.Join(d, "ras.txt")
	if err := os.WriteFile(ras, []byte(strings.ReplaceAll(string(b), "on node node1", "on node node0001")), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := examples.Load("hgx-h200")
	if err != nil {
		t.Fatal(err)
	}
	s.Hostname = "node0001"
	s.RDMA("mlx5_3").NodeGUID = host.GUID(0x100000)
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	snap = filepath.Join(d, "node0001.json")
	if err := os.WriteFile(snap, js, 0o644); err != nil {
		t.Fatal(err)
	}
	return ras, snap
}

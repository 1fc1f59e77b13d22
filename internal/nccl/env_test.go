package nccl

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"github.com/rdmalab/rdmalab/internal/host"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update to accept):\n%s", name, got)
	}
}

func varOf(vs []Var, name string) string {
	for _, v := range vs {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}

func TestEnvHGX(t *testing.T) {
	env, fs := MakeEnv([]*host.Snapshot{load(t, "hgx-h200"), load(t, "hgx-h200")})
	fs = slices.DeleteFunc(fs, func(f check.Finding) bool { return f.Outcome == check.Pass })
	if len(fs) != 0 {
		t.Errorf("findings on a healthy HGX:\n%s", dump(fs))
	}
	if got := varOf(env.Common, "NCCL_IB_HCA"); got != "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1" {
		t.Errorf("NCCL_IB_HCA %q", got)
	}
	if varOf(env.Common, "NCCL_SOCKET_IFNAME") != "=eno8303" || varOf(env.Common, "NCCL_IB_GID_INDEX") != "" {
		t.Errorf("%+v", env.Common)
	}
	exp, shell := SrunExport(env.Common)
	if strings.Contains(exp, "NCCL_IB_HCA") || len(shell) != 2 { // NCCL_IB_HCA and NCCL_DEBUG_SUBSYS have commas
		t.Errorf("srun export %q, via shell %+v", exp, shell)
	}
	var b bytes.Buffer
	WriteEnv(&b, Env{Nodes: env.Nodes[:1], Common: env.Common}, 0)
	WriteLaunchLines(&b, Env{Nodes: env.Nodes[:1], Common: env.Common})
	golden(t, "env-hgx-h200.golden", b.Bytes())
}

func TestEnvSeed000AndFleetDiffer(t *testing.T) {
	env, fs := MakeEnv([]*host.Snapshot{load(t, "seed000-epyc")})
	if varOf(env.Nodes[0].Vars, "NCCL_IB_GID_INDEX") != "3" || varOf(env.Nodes[0].Vars, "NCCL_SOCKET_IFNAME") != "" {
		t.Errorf("%+v", env.Nodes[0].Vars)
	}
	for _, id := range []string{"nccl.env.socket-ifname", "nccl.env.gdr"} {
		if !slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == id && f.Outcome == check.Warn }) {
			t.Errorf("no %s:\n%s", id, dump(fs))
		}
	}
	var b bytes.Buffer
	WriteEnv(&b, env, 0)
	golden(t, "env-seed000-epyc.golden", b.Bytes())

	env, fs = MakeEnv([]*host.Snapshot{load(t, "hgx-h200"), load(t, "seed000-epyc")})
	if !slices.Contains(env.Differ, "NCCL_IB_HCA") || !slices.Contains(env.Differ, "NCCL_IB_GID_INDEX") ||
		!slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == "nccl.env.differ" }) {
		t.Errorf("differ %v\n%s", env.Differ, dump(fs))
	}
}

// TestResultsLineInDocs: the results line docs/nccl.md shows is a RunResult.
func TestResultsLineInDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/nccl.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```json\n")
	if !ok {
		t.Fatal("no json example in docs/nccl.md")
	}
	line, _, _ := strings.Cut(rest, "\n")
	var r RunResult
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.NodeCount != 2 || len(r.Findings) != 2 || r.Run == nil || r.Run.PlateauBusbwGBps != 9.68 {
		t.Errorf("%+v", r)
	}
}

func TestExpectations(t *testing.T) {
	env, _ := MakeEnv([]*host.Snapshot{load(t, "hgx-h200"), load(t, "seed000-epyc")})
	gdr, rails := env.Expectations()
	if !gdr["hgx-h200-01"] || gdr["epyc-lab"] || rails != 2 {
		t.Errorf("%v %d", gdr, rails)
	}
}

func load(t *testing.T, name string) *host.Snapshot {
	t.Helper()
	s, err := examples.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A rail through the CPU's host bridge (PHB) gets NCCL_NET_GDR_LEVEL=PHB,
// as seed 001 exports, and GPUDirect RDMA is predicted on there; the
// default PXB prediction says why it would be off. (Seed 000 with its
// first NIC card moved onto GPU0's host bridge, behind another root port.)
func TestEnvPHBTurnsGDROn(t *testing.T) {
	s := load(t, "seed000-epyc")
	for i := range s.GPUs {
		s.GPUs[i].Name = "A100 PCIe" // a GeForce has no GPUDirect RDMA on any path (gpudirect.GPUClass)
	}
	gpu := s.PCI(host.MustPCI("0000:06:00.0"))
	for _, a := range []string{"0000:41:00.0", "0000:41:00.1", "0000:40:01.1"} {
		d := s.PCI(host.MustPCI(a))
		d.HostBridge, d.LocalityNUMANode, d.NUMANode = gpu.HostBridge, gpu.LocalityNUMANode, gpu.NUMANode
	}
	if p := gpudirectPredict(s); p.Level != host.LevelPHB || p.GDR || !strings.Contains(p.GDRReason, "NCCL_NET_GDR_LEVEL=PHB turns GPUDirect RDMA on") {
		t.Errorf("default level: %+v", p)
	}
	env, _ := MakeEnv([]*host.Snapshot{s})
	n := env.Nodes[0]
	if v := varOf(n.Vars, "NCCL_NET_GDR_LEVEL"); v != "PHB" {
		t.Errorf("NCCL_NET_GDR_LEVEL=%s", v)
	}
	if p := n.Prediction.GPUs[0]; p.Rail != "mlx5_0" || !p.GDR || !strings.Contains(p.GDRReason, "within NCCL_NET_GDR_LEVEL=PHB") {
		t.Errorf("at PHB: %+v", p)
	}
	// the healthy HGX keeps the default
	env, _ = MakeEnv([]*host.Snapshot{load(t, "hgx-h200")})
	if v := varOf(env.Nodes[0].Vars, "NCCL_NET_GDR_LEVEL"); v != "PXB" {
		t.Errorf("HGX: NCCL_NET_GDR_LEVEL=%s", v)
	}
}

func gpudirectPredict(s *host.Snapshot) gpudirect.Prediction { return gpudirect.Predict(s).GPUs[0] }

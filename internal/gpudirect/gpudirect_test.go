package gpudirect

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

func load(t *testing.T, name string) *host.Snapshot {
	t.Helper()
	s, err := examples.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPredictHGX: eight GPUs, eight rails, each PIX under its GPU's switch,
// GPUDirect predicted on through nvidia_peermem.
func TestPredictHGX(t *testing.T) {
	hp := Predict(load(t, "hgx-h200"))
	if len(hp.GPUs) != 8 || len(hp.Rails) != 8 {
		t.Fatalf("%d GPUs, rails %v", len(hp.GPUs), hp.Rails)
	}
	want := map[string]string{"0000:13:00.0": "mlx5_0", "0000:23:00.0": "mlx5_1", "0000:33:00.0": "mlx5_2", "0000:43:00.0": "mlx5_3",
		"0000:93:00.0": "mlx5_4", "0000:a3:00.0": "mlx5_5", "0000:b3:00.0": "mlx5_6", "0000:c3:00.0": "mlx5_7"}
	for _, p := range hp.GPUs {
		if p.Rail != want[p.GPU.String()] || p.Level != "PIX" || !p.GDR || !strings.Contains(p.GDRReason, "nvidia_peermem") {
			t.Errorf("%+v", p)
		}
		if len(p.Bridges) != 3 { // two downstream ports and the switch's upstream port
			t.Errorf("%s bridges %v", p.GPU, p.Bridges)
		}
	}
	if hp.Layer != "InfiniBand" || hp.GIDIndex != nil {
		t.Errorf("layer %q gid %v", hp.Layer, hp.GIDIndex)
	}
	if hp.SocketIf != "eno8303" {
		t.Errorf("socket if %q: %s", hp.SocketIf, hp.SocketIfReason)
	}
}

// TestPredictSeed000: the EPYC lab's GPUs and NICs hang off different NUMA
// nodes (SYS): GPUDirect predicted off although peermem is loaded, and why;
// its RoCE GID index is what NCCL picks (RoCE v2 with IPv4: 3).
func TestPredictSeed000(t *testing.T) {
	hp := Predict(load(t, "seed000-epyc"))
	if len(hp.GPUs) != 2 {
		t.Fatal(hp.GPUs)
	}
	for _, p := range hp.GPUs {
		if p.Level != "SYS" || p.GDR || !strings.Contains(p.GDRReason, "farther than NCCL's default GDR level PXB") {
			t.Errorf("%+v", p)
		}
	}
	if hp.GPUs[0].Rail == hp.GPUs[1].Rail {
		t.Errorf("both GPUs on %s while other rails are as near", hp.GPUs[0].Rail)
	}
	if hp.GIDIndex == nil || *hp.GIDIndex != 3 {
		t.Fatalf("gid index %v (%+v)", hp.GIDIndex, hp.GIDByRail)
	}
	if g := hp.GIDByRail["mlx5_0"]; g.IPv4 != "10.0.0.1" || g.Type != "RoCE v2" || g.Warning != "" {
		t.Errorf("%+v", g)
	}
	if hp.SocketIf != "" || !strings.Contains(hp.SocketIfReason, "no interface is up outside the RDMA ports") {
		t.Errorf("socket if %q: %s", hp.SocketIf, hp.SocketIfReason)
	}
}

func TestPickGID(t *testing.T) {
	v1, v2 := "IB/RoCE v1", "RoCE v2"
	cases := []struct {
		name  string
		gids  []host.GID
		want  int
		warns string
	}{
		{"link-local only", []host.GID{{Index: 0, GID: "fe80::1", Type: v1}, {Index: 1, GID: "fe80::1", Type: v2}}, 0, "only link-local"},
		{"ipv4 v1 only", []host.GID{{Index: 0, GID: "fe80::1", Type: v1}, {Index: 1, GID: "fe80::1", Type: v2}, {Index: 2, GID: "::ffff:10.0.0.1", Type: v1}}, 2, "no RoCE v2"},
		{"v2 before v1", []host.GID{{Index: 0, GID: "fe80::1", Type: v1}, {Index: 3, GID: "::ffff:10.0.0.1", Type: v2}, {Index: 4, GID: "::ffff:10.0.0.1", Type: v1}}, 3, ""},
		// an IPv6 global GID is not AF_INET: NCCL keeps the IPv4 one
		{"ipv6 after ipv4", []host.GID{{Index: 0, GID: "fe80::1", Type: v1}, {Index: 3, GID: "::ffff:10.0.0.1", Type: v2}, {Index: 5, GID: "2001:db8::1", Type: v2}}, 3, ""},
		{"empty", nil, 0, "empty"},
	}
	for _, c := range cases {
		g := PickGID(c.gids)
		if g.Index != c.want || (c.warns == "") != (g.Warning == "") || !strings.Contains(g.Warning, c.warns) {
			t.Errorf("%s: %+v, want %d %q", c.name, g, c.want, c.warns)
		}
	}
}

func TestReadiness(t *testing.T) {
	fs := Readiness(load(t, "hgx-h200"))
	c := map[string]map[check.Outcome]int{}
	for _, f := range fs {
		if c[f.Check] == nil {
			c[f.Check] = map[check.Outcome]int{}
		}
		c[f.Check][f.Outcome]++
	}
	if c["gpudirect.path"][check.Pass] != 8 || c["gpudirect.acs"][check.Unknown] != 1 || c["gpudirect.ats"][check.Unknown] != 1 {
		t.Errorf("%v\n%s", c, dump(fs))
	}
	if c["gpudirect.iommu"] != nil {
		t.Error("iommu=pt host warned")
	}
	for _, f := range fs {
		if !slices.ContainsFunc(ReadinessCatalog, func(e check.Entry) bool { return e.ID == f.Check }) {
			t.Errorf("%s is not in ReadinessCatalog", f.Check)
		}
	}
	fs = Readiness(load(t, "seed000-epyc"))
	if !slices.ContainsFunc(fs, func(f check.Finding) bool {
		return f.Check == "gpudirect.path" && f.Outcome == check.Warn && strings.Contains(f.Message, "SYS")
	}) || slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == "gpudirect.acs" || f.Check == "gpudirect.ats" }) {
		t.Errorf("%s", dump(fs))
	}
	s := load(t, "seed000-epyc")
	s.Kernel.GPUDirect = host.GPUDirect{}
	// Peer memory itself is doctor's gpudirect.peermem rule: not judged twice.
	if fs := Readiness(s); slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == "gpudirect.memory" }) {
		t.Errorf("peer memory judged here too:\n%s", dump(fs))
	}
	s.GPUs = nil
	if fs := Readiness(s); fs != nil {
		t.Errorf("host without GPUs: %s", dump(fs))
	}
}

func TestJudgeGPUDirect(t *testing.T) {
	hp := Predict(load(t, "seed000-epyc"))
	for _, c := range []struct {
		host, cuda float64
		want       check.Outcome
		reason     string
	}{{24, 23.5, check.Pass, "works"}, {24, 15, check.Warn, "slowed"}, {24, 4.8, check.Fail, "5.0× slower"}, {0, 3, check.Unknown, "no bandwidth"}} {
		f := JudgeGPUDirect(c.host, c.cuda, hp.GPUs[0])
		if f.Outcome != c.want || !strings.Contains(f.Message, c.reason) {
			t.Errorf("%v/%v: %s %s", c.host, c.cuda, f.Outcome, f.Message)
		}
	}
	// Seed 000's GPUs are GeForce RTX 3090s: the class decides before the
	// SYS path (gpudirect.gpu-class, the rule doctor, nccl env and plan share).
	if f := JudgeGPUDirect(24, 4.8, hp.GPUs[0]); !strings.Contains(f.Message, "GeForce RTX 3090 is a consumer GPU") {
		t.Errorf("cause not from the prediction: %s", f.Message)
	}
}

func dump(fs []check.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Outcome, f.Check, f.Subject, f.Message)
	}
	return b.String()
}

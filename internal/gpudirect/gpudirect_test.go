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

// TestPredictSeed000: the EPYC lab's GPUs are GeForce RTX 3090s on NUMA
// nodes other than their NICs' (SYS): GPUDirect predicted off although
// peermem is loaded, and the reason is the GPU's class, which decides on
// any path; its RoCE GID index is what NCCL picks (RoCE v2 with IPv4: 3).
func TestPredictSeed000(t *testing.T) {
	hp := Predict(load(t, "seed000-epyc"))
	if len(hp.GPUs) != 2 {
		t.Fatal(hp.GPUs)
	}
	for _, p := range hp.GPUs {
		if p.Level != "SYS" || p.GDR || !strings.Contains(p.GDRReason, "GeForce RTX 3090 is a consumer GPU") {
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

// ACS and ATS are judged from what the snapshot read of config space:
// not read → unknown saying so; the 64-byte header an unprivileged read
// gets → unknown saying root is needed; read as root → ReqRedir on a
// bridge warns (and ATS off on the NIC with it), a clean path passes.
func TestACSATSFromConfigSpace(t *testing.T) {
	s := load(t, "hgx-h200")
	get := func(id string) check.Finding {
		t.Helper()
		for _, f := range Readiness(s) {
			if f.Check == id {
				return f
			}
		}
		t.Fatalf("no %s", id)
		return check.Finding{}
	}
	if f := get("gpudirect.acs"); f.Outcome != check.Unknown || !strings.Contains(f.Message, "config space was not read") {
		t.Errorf("not read: %+v", f)
	}
	set := func(bytes int, acs uint16, ats bool) {
		for i := range s.PCIDevices {
			d := &s.PCIDevices[i]
			d.ConfigBytes = bytes
			if bytes >= 256 && host.IsBridgeClass(d.Class) {
				d.ACSCtl = &acs
			}
			if bytes >= 256 && d.Vendor == "0x15b3" {
				d.ATSEnabled = &ats
			}
		}
	}
	set(64, 0, false)
	if f := get("gpudirect.acs"); f.Outcome != check.Unknown || !strings.Contains(f.Message, "need root") {
		t.Errorf("unprivileged: %+v", f)
	}
	if f := get("gpudirect.ats"); f.Outcome != check.Unknown || !strings.Contains(f.Message, "need root") {
		t.Errorf("unprivileged: %+v", f)
	}
	set(4096, host.ACSSrcValid|host.ACSReqRedir|host.ACSCmpltRedir, false)
	if f := get("gpudirect.acs"); f.Outcome != check.Warn || !strings.Contains(f.Message, "ACS redirects peer requests on") || !strings.Contains(f.Message, "ACSCtl 0x000d") {
		t.Errorf("redirect: %+v", f)
	}
	if f := get("gpudirect.ats"); f.Outcome != check.Warn || !strings.Contains(f.Fix[0], "set ATS_ENABLED=true") {
		t.Errorf("ATS off with redirect: %+v", f)
	}
	set(4096, host.ACSSrcValid, false)
	if f := get("gpudirect.acs"); f.Outcome != check.Pass {
		t.Errorf("clean: %+v", f)
	}
	if f := get("gpudirect.ats"); f.Outcome != check.Pass {
		t.Errorf("ATS not needed: %+v", f)
	}
}

// ParsePCIConfig walks the extended capability list past 0x100.
func TestParsePCIConfig(t *testing.T) {
	b := make([]byte, 4096)
	put32 := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	put32(0x100, 0x000d|1<<16|0x148<<20) // ACS, next at 0x148
	put32(0x104, 0x005f<<16)             // capability 0x5f, control ReqRedir|CmpltRedir|SrcValid... set below
	b[0x106], b[0x107] = 0x1d, 0x00
	put32(0x148, 0x000f|1<<16)      // ATS, last
	b[0x14e], b[0x14f] = 0x00, 0x80 // Enable
	acs, ats := host.ParsePCIConfig(b)
	if acs == nil || *acs != 0x1d || ats == nil || !*ats {
		t.Errorf("acs %v ats %v", acs, ats)
	}
	if acs, ats := host.ParsePCIConfig(b[:64]); acs != nil || ats != nil {
		t.Error("a 64-byte header has no extended capabilities")
	}
}

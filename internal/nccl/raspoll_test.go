package nccl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/portstate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// replayed is n polls of the given reports, one each (the last one
// again after the list), a second apart, as a live poll would see them
// (the live client itself: internal/ncclrun's tests).
func replayed(t *testing.T, n int, bodies ...string) []RASPoll {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var polls []RASPoll
	for i := range n {
		polls = append(polls, RASPoll{At: start.Add(time.Duration(i) * time.Second), Report: mustRAS(t, bodies[min(i, len(bodies)-1)])})
	}
	return polls
}

// The docs' sleep-fault report replayed in three polls: rank 7 frozen at
// AllReduce #60 while the others are at #64 is a hang, on node1.
func TestRASPollFrozenIsHang(t *testing.T) {
	polls := replayed(t, 3, capture(t, rasSleepFault))
	fs := JudgeRASPolls("RAS at 127.0.0.1:28028", polls, nil)
	f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "rank 7 on host node1 stuck at AllReduce #60 while others reached #64 for 3 polls")
	if !strings.Contains(f.Message, "GPU 3, PID 1650386") {
		t.Errorf("%s", f.Message)
	}
	// one poll of the same report is no verdict
	fs = JudgeRASPolls("x", polls[:1], nil)
	has(t, fs, "nccl.ras.progress", check.Unknown, "node1", "#0-0 (78db921d1c117b4a) AllReduce", "one poll is not a verdict")
	none(t, fs, "nccl.ras.hang", check.Fail)
}

// rayCounts is ray's healthy JSON capture with rank 0 and rank 1 at the
// given AllReduce counts.
func rayCounts(t *testing.T, r0, r1 string) string {
	s := capture(t, rasRayHealthy)
	i := strings.Index(s, `"AllReduce": 2`)
	j := strings.LastIndex(s, `"AllReduce": 2`)
	if i < 0 || i == j {
		t.Fatal("the capture changed")
	}
	return s[:i] + `"AllReduce": ` + r0 + s[i+len(`"AllReduce": 2`):j] + `"AllReduce": ` + r1 + s[j+len(`"AllReduce": 2`):]
}

// The JSON capture replayed with rank 1 behind but moving: a straggler
// (warning), not a hang; behind in the first poll only: launch skew; the
// capture itself three times: healthy.
func TestRASPollStragglerSkewHealthy(t *testing.T) {
	fs := JudgeRASPolls("x", replayed(t, 3, rayCounts(t, "10", "8"), rayCounts(t, "12", "10"), rayCounts(t, "14", "12")), nil)
	has(t, fs, "nccl.ras.hang", check.Warn, "10.0.77.184", "rank 1", "rank 1 (GPU 1, PID 8814 on 10.0.77.184) lags but moves: AllReduce #8 → #10 → #12 over 3 polls")
	none(t, fs, "nccl.ras.hang", check.Fail)

	fs = JudgeRASPolls("x", replayed(t, 3, rayCounts(t, "10", "8"), rayCounts(t, "12", "12")), nil)
	has(t, fs, "nccl.ras.hang", check.Pass, "", "polls", "launch skew, not a hang")

	fs = JudgeRASPolls("x", replayed(t, 3, capture(t, rasRayHealthy)), nil)
	has(t, fs, "nccl.ras.hang", check.Pass, "", "polls", "no rank stayed behind across 3 polls")
	has(t, fs, "nccl.ras.ranks", check.Pass, "", "communicators", "(2 ranks)")
	for _, f := range fs {
		if f.Outcome != check.Pass {
			t.Errorf("healthy: %s %s %s", f.Outcome, f.Check, f.Message)
		}
	}
}

// A dead rank in the last poll fails by name.
func TestRASPollDead(t *testing.T) {
	fs := JudgeRASPolls("x", replayed(t, 2, capture(t, rasRayHealthy), capture(t, rasRSTJSON)), nil)
	has(t, fs, "nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "PID 1524345")
}

// From rank to path: the frozen rank 7 of the docs' sleep-fault replay,
// with node1's snapshot (the HGX H200 example bound to RAS's name for it),
// is followed to GPU 3 (NVML index 3, the 4th GPU by PCI bus id), its rail
// mlx5_3 and port 1, and the finding offers the bench retest of that rail.
func TestRASPathFromRankToPort(t *testing.T) {
	polls := replayed(t, 2, capture(t, rasSleepFault))
	hgx := load(t, "hgx-h200")
	fs := JudgeRASPolls("x", polls, &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Cluster: "cluster.yaml"})
	f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "stuck at AllReduce #60 while others reached #64 for 2 polls")
	if !strings.Contains(f.Message, "its GPU's rail is mlx5_3 port 1") {
		t.Errorf("message: %s", f.Message)
	}
	if !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return e.What == "path" && strings.Contains(e.Value, "hgx-h200-01 → GPU 3 = 0000:43:00.0 H200 SXM (NVML index 3") && strings.Contains(e.Value, "rail NIC mlx5_3 (0000:44:00.0, path PIX) → port 1 (Active, 400 Gb/s, netdev ibp68s0)")
	}) {
		t.Errorf("path: %+v", f.Evidence)
	}
	if len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "give node node1 device: mlx5_3, port: 1, cuda_gpu: 3") || !strings.Contains(f.Fix[0], "> retest.rounds && rdmalab bench --cluster cluster.yaml --rounds retest.rounds (add --use-cuda to measure from GPU 3's memory") {
		t.Errorf("fix: %q", f.Fix)
	}
	// a snapshot matched by hostname works alike; one of another host
	// names what is missing instead of guessing
	fs = JudgeRASPolls("x", polls, &RASOptions{Snapshots: []*host.Snapshot{hgx}})
	f = has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "stuck")
	if !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return strings.Contains(e.Value, "no snapshot of node1 among those given")
	}) {
		t.Errorf("%+v", f.Evidence)
	}
	// the missing rank of the ras.rst JSON, through one report
	fs = JudgeRAS("x", mustRAS(t, capture(t, rasRSTJSON)), &RASOptions{Hosts: map[string]*host.Snapshot{"172.16.64.245": hgx}})
	f = has(t, fs, "nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "its GPU's rail is mlx5_1 port 1")
}

// With a fabric snapshot the rail's port is followed one step further: the
// cable to its switch, found by the NIC's node GUID (a fabric holding the
// HGX example's mlx5_3 on leaf port 17, as ibnetdiscover would list it).
func TestRASPathToCable(t *testing.T) {
	hgx := load(t, "hgx-h200")
	nic := hgx.RDMA("mlx5_3")
	leaf := host.GUID(0x7cfe900300a0b0c0)
	fab := &fabric.Snapshot{Source: "test fabric", Nodes: []fabric.Node{{GUID: leaf, Type: "Switch", Desc: "leaf-3 QM9700", Ports: 64}, {GUID: nic.NodeGUID, Type: "CA", Desc: "hgx-h200-01 mlx5_3", Ports: 1}},
		Ports: []fabric.Port{{NodeGUID: nic.NodeGUID, NodeDesc: "hgx-h200-01 mlx5_3", NodeType: "CA", Num: 1, State: portstate.Active, Width: "4X", Speed: "NDR",
			Remote: &fabric.End{NodeGUID: leaf, NodeDesc: "leaf-3 QM9700", Port: 17}}}}
	polls := replayed(t, 2, capture(t, rasSleepFault))
	fs := JudgeRASPolls("x", polls, &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Fabric: fab})
	f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "its GPU's rail is mlx5_3 port 1, cabled mlx5_3 port 1 ↔ leaf-3 QM9700 port 17 (4X NDR Active)")
	// the NIC of another GPU is not in this fabric: said, not guessed
	fab.Ports[0].NodeGUID = hgx.RDMA("mlx5_0").NodeGUID
	fs = JudgeRASPolls("x", polls, &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Fabric: fab})
	f = has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "its GPU's rail is mlx5_3 port 1")
	if strings.Contains(f.Message, "cabled") || !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return e.What == "cable" && strings.Contains(e.Value, "no port of node GUID")
	}) {
		t.Errorf("%s %+v", f.Message, f.Evidence)
	}
}

// The rail's cable carries each end's physical layer: the frozen rank 7's
// rail mlx5_3 port 1 with a real mlxlink capture of a CX7 400GbE port
// saved for it (one lane's raw errors raised past the limit, as in the
// cover test) shows that lane on the host end, and the leaf's end says it
// has no PHY evidence. The capture as taken (healthy) shows its facts and
// no failure; without any capture both ends say so.
func TestRASPathCableCarriesPHY(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "mlxlink", "yuuki-rdma-exporter_mft-4.34.1_cx7-fw28.47_400GbE-DR4-osfp_module-counters_json_vendor-anonymized.json"))
	if err != nil {
		t.Fatal(err)
	}
	polls := replayed(t, 2, capture(t, rasSleepFault))
	judge := func(mlxlink []byte) (check.Finding, []check.Evidence) {
		hgx := load(t, "hgx-h200")
		if mlxlink != nil {
			ps, err := phy.Named(mlxlink, "mlx5_3-1.mlxlink.json", hgx.Hostname)
			if err != nil {
				t.Fatal(err)
			}
			hgx.Phy = ps
		}
		nic := hgx.RDMA("mlx5_3")
		leaf := host.GUID(0x7cfe900300a0b0c0)
		fab := &fabric.Snapshot{Source: "test fabric", Nodes: []fabric.Node{{GUID: leaf, Type: "Switch", Desc: "leaf-3 QM9700", Ports: 64}, {GUID: nic.NodeGUID, Type: "CA", Desc: "hgx-h200-01 mlx5_3", Ports: 1}},
			Ports: []fabric.Port{{NodeGUID: nic.NodeGUID, NodeDesc: "hgx-h200-01 mlx5_3", NodeType: "CA", Num: 1, State: portstate.Active, Width: "4X", Speed: "NDR",
				Remote: &fabric.End{NodeGUID: leaf, NodeDesc: "leaf-3 QM9700", Port: 17}}}}
		fs := JudgeRASPolls("x", polls, &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Fabric: fab})
		f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "cabled mlx5_3 port 1 ↔ leaf-3 QM9700 port 17")
		var ev []check.Evidence
		for _, e := range f.Evidence {
			if strings.HasPrefix(e.What, phycheck.EvidencePrefix) {
				ev = append(ev, e)
			}
		}
		return f, ev
	}
	_, ev := judge([]byte(strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)))
	if len(ev) != 2 || !strings.Contains(ev[0].What, "hgx-h200-01 mlx5_3 port 1") || !strings.Contains(ev[0].Value, phycheck.IDLane) ||
		!strings.Contains(ev[0].Value, "lane 0") || !strings.Contains(ev[0].Source, "mlx5_3-1.mlxlink.json") ||
		ev[1].What != phycheck.EvidencePrefix+"leaf-3 QM9700 port 17" || ev[1].Value != phycheck.NoEvidence {
		t.Errorf("bad lane: want the host end's lane 0 and the leaf's end without evidence: %+v", ev)
	}
	_, ev = judge(b)
	t.Logf("healthy: %+v", ev)
	if len(ev) != 2 || ev[0].Value == phycheck.NoEvidence || strings.Contains(ev[0].Value, "fail") || strings.Contains(ev[0].Value, phycheck.IDLane) {
		t.Errorf("healthy capture: %+v", ev)
	}
	_, ev = judge(nil)
	if len(ev) != 2 || ev[0].Value != phycheck.NoEvidence || ev[1].Value != phycheck.NoEvidence {
		t.Errorf("no capture: %+v", ev)
	}
}

package nccl

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/route"
)

// The ras.rst JSON with its answering rank moved to node0002: the missing
// rank 1 on node0001 (NVML 1, rail mlx5_1, here node0001's HCA of the
// 2x4x4 fat tree captured from ibsim) is retested against node0002 first,
// the host the report shows answering: alone without routes; with the
// fabric and its dump_fts tables node0002 is the first of four partners
// and the routes to it are listed.
func TestRASFollowUpPrefersReportPeers(t *testing.T) {
	report := strings.Replace(capture(t, rasRSTJSON), `"host": "172.16.64.245"`, `"host": "node0002"`, 1)
	report = strings.ReplaceAll(report, `"host": "172.16.64.245"`, `"host": "node0001"`)
	r := mustRAS(t, report)
	hgx := load(t, "hgx-h200")
	hgx.RDMA("mlx5_1").NodeGUID = host.GUID(0x100000)
	o := &RASOptions{Hosts: map[string]*host.Snapshot{"node0001": hgx}, Cluster: "c.yaml"}
	f := has(t, JudgeRAS("x", r, o), "nccl.ras.ranks", check.Fail, "node0001", "rank 1", "its GPU's rail is mlx5_1 port 1")
	if ev := evidenceOf(f, "follow-up"); ev == nil || ev.Value != "printf '%s\\n' '0 node0001 node0002' > retest.rounds && rdmalab bench --cluster c.yaml --rounds retest.rounds" || !strings.Contains(ev.Source, "hosts of the report whose ranks answered") {
		t.Errorf("follow-up: %+v", ev)
	}

	fd, err := os.Open("../route/testdata/fattree-2x4x4.fabric.json")
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if o.Fabric, err = fabric.Decode(fd); err != nil {
		t.Fatal(err)
	}
	tables, err := os.Open("../route/testdata/fattree-2x4x4-updn.dump_fts.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	if o.Routes, err = route.ParseLFTs(tables); err != nil {
		t.Fatal(err)
	}
	f = has(t, JudgeRAS("x", r, o), "nccl.ras.ranks", check.Fail, "node0001", "rank 1", "cabled mlx5_1 port 1 ↔ leaf01 port 1")
	var partners []string
	for _, e := range f.Evidence {
		if h, ok := strings.CutPrefix(e.What, "route to "); ok {
			partners = append(partners, h)
		}
	}
	if len(partners) != maxPartners || partners[0] != "node0002" || slices.Contains(partners, "node0001") {
		t.Errorf("partners %v: want node0002 first, then three more", partners)
	}
	if ev := evidenceOf(f, "follow-up"); ev == nil || !strings.Contains(ev.Value, "node0002") || !strings.Contains(ev.Value, "'1 node0001 ") {
		t.Errorf("follow-up: %+v", ev)
	}
	// tables that do not join the cabling are said, not guessed around
	o = &RASOptions{Hosts: o.Hosts, Fabric: o.Fabric, Routes: []route.LFT{{Switch: host.GUID(0x200002), Name: "leaf01", Out: map[int]int{2: 9}}}}
	f = has(t, JudgeRAS("x", r, o), "nccl.ras.ranks", check.Fail, "node0001", "rank 1", "cabled mlx5_1 port 1 ↔ leaf01 port 1")
	if ev := evidenceOf(f, "links"); ev == nil || !strings.Contains(ev.Value, "no CA port of another host is routed to and from node0001") || evidenceOf(f, "route to node0002") != nil {
		t.Errorf("with one switch's table: %+v", f.Evidence)
	}
}

func evidenceOf(f check.Finding, what string) *check.Evidence {
	for i := range f.Evidence {
		if f.Evidence[i].What == what {
			return &f.Evidence[i]
		}
	}
	return nil
}

// With no other host in the report, the partners are the other hosts
// whose snapshots were given (never the suspect's own), and too few of
// them is said.
func TestRASFollowUpFromSnapshots(t *testing.T) {
	r := mustRAS(t, capture(t, rasRSTJSON))
	hgx := load(t, "hgx-h200")
	o := &RASOptions{Hosts: map[string]*host.Snapshot{"172.16.64.245": hgx, "172.16.64.246": load(t, "hgx-h200")}, Snapshots: []*host.Snapshot{hgx}}
	f := has(t, JudgeRAS("x", r, o), "nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "its GPU's rail is mlx5_1 port 1")
	ev := evidenceOf(f, "follow-up")
	if ev == nil || ev.Value != "printf '%s\\n' '0 172.16.64.245 172.16.64.246' > retest.rounds && rdmalab bench --cluster CLUSTER --rounds retest.rounds" ||
		!strings.HasPrefix(ev.Source, "partners: the other hosts whose snapshots were given — only 1 known") {
		t.Errorf("follow-up: %+v", ev)
	}
}

package nccl

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

// railFabric is a two-level fabric of hosts n1…n6 (three a leaf, two
// leaves, two spines), each host's rail 3 an HCA described "nX mlx5_3" as
// rdma-core describes it, every link at ibsim's best.
func railFabric() string {
	var b strings.Builder
	b.WriteString("# rdmalab raspath test\n" + testhost.FullSpeed)
	const spines, leaves, per = 2, 2, 3
	for s := 1; s <= spines; s++ {
		fmt.Fprintf(&b, "Switch\t%d \"spine%02d\"\n", leaves, s)
		for l := 1; l <= leaves; l++ {
			fmt.Fprintf(&b, "[%d]\t\"leaf%02d\"[%d]\n", l, l, per+s)
		}
		b.WriteString("\n")
	}
	for l := 1; l <= leaves; l++ {
		fmt.Fprintf(&b, "Switch\t%d \"leaf%02d\"\n", per+spines, l)
		for h := 1; h <= per; h++ {
			fmt.Fprintf(&b, "[%d]\t\"n%d mlx5_3\"[1]\n", h, (l-1)*per+h)
		}
		for s := 1; s <= spines; s++ {
			fmt.Fprintf(&b, "[%d]\t\"spine%02d\"[%d]\n", per+s, s, l)
		}
		b.WriteString("\n")
	}
	for l := 1; l <= leaves; l++ {
		for h := 1; h <= per; h++ {
			fmt.Fprintf(&b, "Hca\t1 \"n%d mlx5_3\"\n[1]\t\"leaf%02d\"[%d]\n\n", (l-1)*per+h, l, h)
		}
	}
	return b.String()
}

// rasOnIBSim brings railFabric up under ibsim with OpenSM routing it,
// reads it as 'fabric scan' does and its forwarding tables as dump_fts
// prints them, builds each host's snapshot (the HGX H200 tree, its
// mlx5_3 given the simulated HCA's node GUID) and judges the docs'
// sleep-fault report with rank 7 moved to n1: the finding, and n1's rail
// port as the fabric knows it.
func rasOnIBSim(t *testing.T, cluster string) (check.Finding, *fabric.Snapshot) {
	t.Helper()
	sim := testhost.StartIBSim(t, railFabric())
	sim.StartSM("", 0)
	sim.WaitUp(60 * time.Second)
	run := fabric.Exec{Dir: sim.Dir, Env: sim.Env(), Timeout: 30 * time.Second}
	ctx := context.Background()
	fab, err := fabric.Scan(ctx, run, fabric.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lfts, err := route.ScanLFTs(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []*host.Snapshot
	for i := 1; i <= 6; i++ {
		name := fmt.Sprintf("n%d", i)
		j := slices.IndexFunc(fab.Nodes, func(n fabric.Node) bool { return n.Desc == name+" mlx5_3" })
		if j < 0 {
			t.Fatalf("%s mlx5_3 not in the scan", name)
		}
		m := testhost.HGX()
		m.Hostname = name
		k := slices.IndexFunc(m.RDMA, func(d testhost.RDMADev) bool { return d.Name == "mlx5_3" })
		m.RDMA[k].NodeGUID = fab.Nodes[j].GUID.Sysfs()
		s, err := inventory.Open(testhost.WriteTree(t, m), inventory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, s)
	}
	report := strings.ReplaceAll(capture(t, rasSleepFault), "on node node1", "on node n1")
	o := &RASOptions{Snapshots: hosts, Cluster: cluster, Fabric: fab, Routes: lfts, RoutesSource: "dump_fts"}
	fs := JudgeRAS("ras.txt", mustRAS(t, report), o)
	return has(t, fs, "nccl.ras.progress", check.Unknown, "n1", "#0-0 (78db921d1c117b4a) AllReduce", "rank 7 (GPU 3, PID 1650386 on n1) at AllReduce #60"), fab
}

func evidence(f check.Finding, what string) []string {
	var out []string
	for _, e := range f.Evidence {
		if e.What == what || strings.HasPrefix(e.What, what) {
			out = append(out, e.Value)
		}
	}
	return out
}

// From a lagging rank to the links on its path, on a fabric OpenSM
// routed: the finding names host n1, GPU 3 (the 4th by PCI bus order), its
// rail NIC mlx5_3 and port 1, the cable to leaf01 by both ends' GUIDs,
// the routes to four partners (at least one behind the other leaf, so a
// spine is on the path) hop by hop, every cable on them, and one bench
// command that pairs n1 with each partner and the partners with each other.
func TestRASPathThroughRoutesOnIBSim(t *testing.T) {
	f, fab := rasOnIBSim(t, "cluster.yaml")
	names := fab.Names()
	guidOf := func(desc string) string {
		g := names.ByDesc(desc)
		if len(g) != 1 {
			t.Fatalf("%s: %v", desc, g)
		}
		return g[0].String()
	}
	leaf1 := "switch GUID " + guidOf("leaf01")
	n1 := ""
	for _, p := range fab.Ports {
		if p.NodeDesc == "n1 mlx5_3" {
			n1 = "port GUID " + p.PortGUID.String()
		}
	}
	if !strings.Contains(f.Message, "its GPU's rail is mlx5_3 port 1, cabled mlx5_3 port 1 ↔ leaf01 port 1") {
		t.Errorf("message: %s", f.Message)
	}
	path := evidence(f, "path")
	if len(path) != 1 || !strings.Contains(path[0], "n1 → GPU 3 = 0000:43:00.0") || !strings.Contains(path[0], "rail NIC mlx5_3 (0000:44:00.0, path PIX) → port 1 (Active") {
		t.Errorf("path: %q", path)
	}
	links := evidence(f, "links")
	// n1's own cable, by both ends with GUIDs; and a spine cable
	hostCable := fmt.Sprintf("n1 mlx5_3 port 1 (%s) ↔ leaf01 port 1 (%s)", n1, leaf1)
	if len(links) != 1 || !strings.Contains(links[0], hostCable) || !strings.Contains(links[0], "spine0") {
		t.Errorf("links: %q", links)
	}
	routes := evidence(f, "route to ")
	if len(routes) != maxPartners {
		t.Fatalf("routes: %q", routes)
	}
	var partners []string
	for _, e := range f.Evidence {
		if h, ok := strings.CutPrefix(e.What, "route to "); ok {
			partners = append(partners, h)
			if !strings.HasPrefix(e.Value, fmt.Sprintf("out: n1 mlx5_3 port 1 (%s) → leaf01 port 1 (%s)", n1, leaf1)) || !strings.HasSuffix(e.Value, fmt.Sprintf("leaf01 port 1 (%s) → n1 mlx5_3 port 1 (%s)", leaf1, n1)) {
				t.Errorf("route to %s: %s", h, e.Value)
			}
		}
	}
	if !slices.ContainsFunc(partners, func(h string) bool { return h >= "n4" }) || !slices.ContainsFunc(partners, func(h string) bool { return h <= "n3" }) {
		t.Errorf("partners %v: want one on n1's leaf and one behind the other", partners)
	}
	follow := evidence(f, "follow-up")
	if len(follow) != 1 || !strings.HasPrefix(follow[0], "printf '%s\\n' ") || !strings.HasSuffix(follow[0], "> retest.rounds && rdmalab bench --cluster cluster.yaml --rounds retest.rounds") {
		t.Fatalf("follow-up: %q", follow)
	}
	for _, p := range partners {
		if !strings.Contains(follow[0], " n1 "+p+"'") && !strings.Contains(follow[0], " "+p+" n1'") {
			t.Errorf("follow-up does not pair n1 with %s: %s", p, follow[0])
		}
	}
	if len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "give node n1 device: mlx5_3, port: 1, cuda_gpu: 3; then "+follow[0]) {
		t.Errorf("fix: %q", f.Fix)
	}
}

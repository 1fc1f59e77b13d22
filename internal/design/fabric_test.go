package design

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// The textbook fat tree of k-port switches: two tiers hold k²/2 hosts on
// k leaves and k/2 spines; three tiers k³/4 hosts on k²/2 edge, k²/2
// aggregation and k²/4 core switches (5k²/4 in all).
func TestFabricTextbookFatTree(t *testing.T) {
	for _, k := range []int{4, 8, 16, 32, 40, 64} {
		f, err := PlanFabric(FabricRequest{Hosts: k * k / 2, NICsPerNode: 1, Radix: k, Rate: "4X HDR", Oversubscription: 1})
		if err != nil {
			t.Fatal(err)
		}
		if f.Tiers != 2 || f.Leaves != k || f.Spines != k/2 || f.LinksPerPair != 1 || f.HostCables != k*k/2 || f.SwitchCables != k*k/2 || f.Oversubscription != 1 {
			t.Errorf("k=%d, k²/2 hosts: %d tiers, %d leaves, %d spines, %d per pair, %d+%d cables", k, f.Tiers, f.Leaves, f.Spines, f.LinksPerPair, f.HostCables, f.SwitchCables)
		}
		if f.MaxEndpointsTwoTier != k*k/2 || f.MaxEndpointsThree != k*k*k/4 {
			t.Errorf("k=%d: two tiers hold %d, three %d", k, f.MaxEndpointsTwoTier, f.MaxEndpointsThree)
		}
		one, _ := PlanFabric(FabricRequest{Hosts: k*k/2 + 1, NICsPerNode: 1, Radix: k, Rate: "4X HDR", Oversubscription: 1})
		if one.Tiers != 3 {
			t.Errorf("k=%d, k²/2+1 hosts: %d tiers, want 3", k, one.Tiers)
		}
	}
	for _, k := range []int{4, 8, 16} {
		f, err := PlanFabric(FabricRequest{Hosts: k * k * k / 4, NICsPerNode: 1, Radix: k, Rate: "4X HDR", Oversubscription: 1})
		if err != nil {
			t.Fatal(err)
		}
		if f.Tiers != 3 || f.Pods != k || f.Leaves != k*k/2 || f.Spines != k*k/2 || f.Cores != k*k/4 || f.SwitchCables != k*k*k/2 {
			t.Errorf("k=%d, k³/4 hosts: %d tiers, %d pods, %d edge, %d aggregation, %d core, %d switch cables", k, f.Tiers, f.Pods, f.Leaves, f.Spines, f.Cores, f.SwitchCables)
		}
		if _, err := PlanFabric(FabricRequest{Hosts: k*k*k/4 + 1, NICsPerNode: 1, Radix: k, Rate: "4X HDR", Oversubscription: 1}); err == nil {
			t.Errorf("k=%d: k³/4+1 hosts accepted", k)
		}
	}
	// The example: 2048 hosts on 64-port switches fill two tiers.
	f, _ := PlanFabric(FabricRequest{Hosts: 2048, NICsPerNode: 1, Radix: 64, Rate: "400GbE", Oversubscription: 1})
	if f.Leaves != 64 || f.Spines != 32 || f.Cables != 4096 || f.Layer != "RoCE" {
		t.Errorf("2048 hosts, radix 64: %+v", f)
	}
}

func TestFabricSizes(t *testing.T) {
	for _, c := range []struct {
		req                            FabricRequest
		single                         bool
		tiers, leaves, spines, perPair int
		oversub, ceilingGBps           float64
	}{
		// Seed 001: 4 nodes on one switch; 200 Gb/s ≈ 25 GB/s allreduce
		// ceiling at line rate (ceilingGBps), a little less as payload.
		{FabricRequest{Nodes: 4, NICsPerNode: 1, GPUsPerNode: 4, Radix: 32, Rate: "200GbE"}, true, 1, 1, 0, 0, 1, 25},
		// Seed 001: "Above 8 nodes, plan routed Clos … Below 8, a single
		// switch is fine": 8 nodes one switch, 16 and 32 a two-spine Clos
		// although one 32-port switch has the ports; InfiniBand keeps one.
		{FabricRequest{Nodes: 8, NICsPerNode: 1, Radix: 32, Rate: "200GbE"}, true, 1, 1, 0, 0, 1, 25},
		{FabricRequest{Nodes: 16, NICsPerNode: 1, Radix: 32, Rate: "400GbE"}, false, 2, 2, 2, 8, 1, 50},
		{FabricRequest{Nodes: 32, NICsPerNode: 1, Radix: 32, Rate: "200GbE"}, false, 2, 2, 2, 8, 1, 25},
		{FabricRequest{Nodes: 16, NICsPerNode: 1, Radix: 32, Rate: "4X HDR"}, true, 1, 1, 0, 0, 1, 25},
		// 8 rails of NDR: 8 × 400 / 8 = 400 GB/s per node.
		{FabricRequest{Nodes: 32, NICsPerNode: 8, GPUsPerNode: 8, Radix: 64, Rate: "4X NDR"}, false, 2, 8, 4, 8, 1, 400},
		// 3:1 at the leaf: 48 down, 16 up.
		{FabricRequest{Hosts: 480, NICsPerNode: 1, Radix: 64, Rate: "100GbE", Oversubscription: 3}, false, 2, 10, 3, 6, 3, 12.5}, // 16 uplinks: 6+5+5
		// QDR's 40 Gb/s carry 32 after 8b/10b: 4 GB/s.
		{FabricRequest{Hosts: 60, NICsPerNode: 1, Radix: 36, Rate: "4X QDR"}, false, 2, 4, 2, 9, 1, 4},
	} {
		if c.req.Oversubscription == 0 {
			c.req.Oversubscription = 1
		}
		f, err := PlanFabric(c.req)
		if err != nil {
			t.Fatalf("%+v: %v", c.req, err)
		}
		// The ceiling is the payload the rails carry at MTU 4096 (the one
		// busbw ceiling of linkrate): the line rate / 8 less the headers,
		// within 4% of it.
		payload := f.AllreduceCeilingGBps
		if f.SingleSwitchSuffices != c.single || f.Tiers != c.tiers || f.Leaves != c.leaves || f.Spines != c.spines || f.LinksPerPair != c.perPair ||
			f.Oversubscription != c.oversub || payload >= c.ceilingGBps || payload < 0.96*c.ceilingGBps {
			t.Errorf("%+v:\n got single %v, %d tiers, %d leaves, %d spines, %d per pair, %v:1, %v GB/s\nwant single %v, %d tiers, %d leaves, %d spines, %d per pair, %v:1, %v GB/s",
				c.req, f.SingleSwitchSuffices, f.Tiers, f.Leaves, f.Spines, f.LinksPerPair, f.Oversubscription, f.AllreduceCeilingGBps,
				c.single, c.tiers, c.leaves, c.spines, c.perPair, c.oversub, c.ceilingGBps)
		}
		if lo, hi := f.AllreduceHealthyGBps[0], f.AllreduceHealthyGBps[1]; !near(lo, 0.8*payload, 1e-9) || !near(hi, 0.96*payload, 1e-9) {
			t.Errorf("%+v: healthy band %v–%v", c.req, lo, hi)
		}
	}
	for _, bad := range []FabricRequest{
		{Hosts: 10, NICsPerNode: 1, Radix: 63, Rate: "100", Oversubscription: 1},
		{Hosts: 10, NICsPerNode: 1, Radix: 2, Rate: "100", Oversubscription: 1},
		{Hosts: 10, NICsPerNode: 1, Radix: 64, Rate: "0", Oversubscription: 1},
		{Hosts: 10, NICsPerNode: 1, Radix: 64, Rate: "100", Oversubscription: 0.5},
		{Hosts: 10, Nodes: 10, NICsPerNode: 1, Radix: 64, Rate: "100", Oversubscription: 1},
		{Hosts: 10, NICsPerNode: 2, Radix: 64, Rate: "100", Oversubscription: 1},
		{NICsPerNode: 1, Radix: 64, Rate: "100", Oversubscription: 1},
		{Hosts: 10, NICsPerNode: 1, Radix: 64, Rate: "100", Layer: "fibre", Oversubscription: 1},
	} {
		if _, err := PlanFabric(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// The cabling plan is what `fabric check --topology` reads: it parses
// strictly (every port cabled once), names are unique, every endpoint is
// cabled once, no switch uses a port beyond its radix, and the fabric
// check finds a fabric cabled exactly so to match it.
func TestFabricCablingPlan(t *testing.T) {
	for _, req := range []FabricRequest{
		{Nodes: 4, NICsPerNode: 1, Radix: 32, Rate: "200GbE", Oversubscription: 1},
		{Nodes: 32, NICsPerNode: 8, Radix: 64, Rate: "4X NDR", Oversubscription: 1},
		{Hosts: 480, NICsPerNode: 1, Radix: 64, Rate: "100GbE", Oversubscription: 3},
		{Hosts: 60, NICsPerNode: 1, Radix: 36, Rate: "4X QDR", Oversubscription: 1},
		{Hosts: 128, NICsPerNode: 1, Radix: 8, Rate: "4X HDR", Oversubscription: 1},
		{Hosts: 100, NICsPerNode: 1, Radix: 8, Rate: "4X HDR", Oversubscription: 1},
		{Hosts: 2048, NICsPerNode: 1, Radix: 64, Rate: "4X NDR", Oversubscription: 1},
	} {
		name := fmt.Sprintf("%d×%d/%d", max(req.Hosts, req.Nodes), req.NICsPerNode, req.Radix)
		f, err := PlanFabric(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.CablingYAML()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "cabling.yaml")
		os.WriteFile(p, b, 0o644)
		top, err := fabric.LoadTopology(p)
		if err != nil {
			t.Fatalf("%s: fabric check cannot read the plan: %v", name, err)
		}
		if len(top.Links) != f.Cables {
			t.Errorf("%s: %d cables in the plan, %d counted", name, len(top.Links), f.Cables)
		}
		endpoints := map[string]int{}
		for _, l := range top.Links {
			for _, e := range []fabric.TopoEnd{l.A, l.B} {
				if strings.Contains(e.Node, " ") {
					endpoints[e.Node]++
				} else if e.Port > f.Radix {
					t.Errorf("%s: %s beyond radix %d", name, e, f.Radix)
				}
			}
		}
		if len(endpoints) != f.Endpoints {
			t.Errorf("%s: %d endpoints cabled, want %d", name, len(endpoints), f.Endpoints)
		}
		for e, n := range endpoints {
			if n != 1 {
				t.Errorf("%s: %s cabled %d times", name, e, n)
			}
		}
		if fs, err := fabriccheck.Diff(snapshotOf(top), top); err != nil || check.Failed(fs) || len(fs) != 1 || fs[0].Outcome != check.Pass {
			t.Errorf("%s: a fabric cabled as planned does not match its plan: %+v", name, fs)
		}
	}
	// Rails fill whole leaves: 32 nodes × 8 rails on 32-port leaves put
	// rail r's 32 NICs on leaf r+1.
	f, _ := PlanFabric(FabricRequest{Nodes: 32, NICsPerNode: 8, Radix: 64, Rate: "4X NDR", Oversubscription: 1})
	for _, l := range f.Cabling {
		if strings.HasPrefix(l.A.Node, "node") {
			var node, rail, leaf int
			fmt.Sscanf(l.A.Node, "node%d mlx5_%d", &node, &rail)
			fmt.Sscanf(l.B.Node, "leaf%d", &leaf)
			if leaf != rail+1 {
				t.Errorf("%s on %s: rail %d not on leaf %d", l.A, l.B, rail, rail+1)
			}
		}
	}
}

// snapshotOf is the fabric a scan would find if it were cabled exactly as
// the topology says, all links up.
func snapshotOf(top *fabric.Topology) *fabric.Snapshot {
	s := &fabric.Snapshot{}
	guid := map[string]host.GUID{}
	typeOf := func(node string) fabric.NodeType {
		if strings.Contains(node, " ") {
			return fabric.CA
		}
		return fabric.Switch
	}
	id := func(node string) host.GUID {
		if g, ok := guid[node]; ok {
			return g
		}
		g := host.GUID(len(guid) + 1)
		guid[node] = g
		s.Nodes = append(s.Nodes, fabric.Node{GUID: g, Type: typeOf(node), Desc: node})
		return g
	}
	for _, l := range top.Links {
		for _, e := range [][2]fabric.TopoEnd{{l.A, l.B}, {l.B, l.A}} {
			near, far := e[0], e[1]
			s.Ports = append(s.Ports, fabric.Port{NodeGUID: id(near.Node), NodeDesc: near.Node, NodeType: typeOf(near.Node), Num: near.Port,
				State: portstate.Active, PhysState: portstate.LinkUp, Remote: &fabric.End{NodeGUID: id(far.Node), NodeDesc: far.Node, Port: far.Port}})
		}
	}
	return s
}

package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A host's cable named by the cover schedule (FatTree(2,4,4) from ibsim,
// simulated) carries the PHY facts saved in that host's tree for its
// port: a bad lane from its mlxlink; the switch end, with nothing
// gathered, says "no PHY evidence"; without host snapshots both ends do.
func TestCoverCarriesPHYEvidence(t *testing.T) {
	c, cp := smallCover(t)
	f := cp.f
	link, caIdx := -1, -1
	for i := range f.Links {
		if !f.HostLink(i) {
			continue
		}
		for j, ca := range f.CAs {
			if ca.Key == f.Links[i].From {
				link, caIdx = i, j
			}
		}
		if link >= 0 {
			break
		}
	}
	if link < 0 {
		t.Fatal("no host cable in the fabric")
	}
	ca := f.CAs[caIdx]
	node := c.Nodes[cp.caNode[caIdx]].Name
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "mlxlink", "yuuki-rdma-exporter_mft-4.34.1_cx7-fw28.47_400GbE-DR4-osfp_module-counters_json_vendor-anonymized.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)
	facts, err := phy.Named([]byte(bad), phy.Dir+"/mlx5_0-1.mlxlink.json", node)
	if err != nil {
		t.Fatal(err)
	}
	cp.hosts = []*host.Snapshot{{Hostname: node, Phy: facts, RDMADevices: []host.RDMADevice{{Name: "mlx5_0", Ports: []host.RDMAPort{{Port: ca.Key.Port, PortGUID: ca.Key.GUID}}}}}}
	rep, _ := simulateCover(c, cp, []int{link, f.Reverse(link)})
	fd := named(t, rep)
	phyEv := phyEvidence(fd)
	if len(phyEv) != 2 {
		t.Fatalf("PHY evidence %+v", phyEv)
	}
	if !slices.ContainsFunc(phyEv, func(e check.Evidence) bool {
		return strings.Contains(e.Value, phycheck.IDLane) && strings.Contains(e.Value, "lane 0") && strings.Contains(e.Source, "mlx5_0-1.mlxlink.json")
	}) || !slices.ContainsFunc(phyEv, func(e check.Evidence) bool { return e.Value == phycheck.NoEvidence }) {
		t.Errorf("want the host end's bad lane and the switch end without evidence: %+v", phyEv)
	}

	cp.hosts = nil
	rep, _ = simulateCover(c, cp, []int{link, f.Reverse(link)})
	for _, e := range phyEvidence(named(t, rep)) {
		if e.Value != phycheck.NoEvidence {
			t.Errorf("without snapshots: %+v", e)
		}
	}
}

func named(t *testing.T, rep *Report) check.Finding {
	t.Helper()
	i := slices.IndexFunc(rep.Findings, func(f check.Finding) bool {
		return f.Outcome == check.Fail && (f.Check == "bench.cover.node" || f.Check == "bench.cover.link")
	})
	if i < 0 {
		t.Fatalf("no cable named: %+v", rep.Findings)
	}
	return rep.Findings[i]
}

func phyEvidence(f check.Finding) []check.Evidence {
	var out []check.Evidence
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.What, "PHY of ") {
			out = append(out, e)
		}
	}
	return out
}

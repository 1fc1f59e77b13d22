package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A host's cable named by the cover schedule (FatTree(2,4,4) routed by
// OpenSM, captured from ibsim; the run simulated) carries the PHY facts
// saved in that host's tree for its port: a bad lane from the mlxlink
// placed under var/lib/rdmalab/phy/; the switch end, with nothing
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
	// The capture placed in the host's tree, read by inventory as for any
	// node: the tree's first RDMA port stands for the fabric's CA port
	// (the tree's GUIDs are not the simulated fabric's).
	root := testhost.WriteTree(t, testhost.R730())
	snap0, err := inventory.Open(root, inventory.Options{})
	if err != nil || len(snap0.RDMADevices) == 0 {
		t.Fatalf("tree: %v", err)
	}
	dev := snap0.RDMADevices[0].Name
	if err := os.MkdirAll(filepath.Join(root, phy.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)
	if err := os.WriteFile(filepath.Join(root, phy.Dir, dev+"-1.mlxlink.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := inventory.Open(root, inventory.Options{})
	if err != nil || len(snap.Phy) != 1 {
		t.Fatalf("PHY facts from the tree: %+v %v", snap.Phy, err)
	}
	snap.Hostname = node
	snap.RDMADevices[0].Ports[0].Port, snap.RDMADevices[0].Ports[0].PortGUID = 1, ca.Key.GUID
	cp.hosts = []*host.Snapshot{snap}
	rep, _ := simulateCover(c, cp, []int{link, f.Reverse(link)})
	fd := named(t, rep)
	phyEv := phyEvidence(fd)
	if len(phyEv) != 2 {
		t.Fatalf("PHY evidence %+v", phyEv)
	}
	if !slices.ContainsFunc(phyEv, func(e check.Evidence) bool {
		return strings.Contains(e.Value, phycheck.IDLane) && strings.Contains(e.Value, "lane 0") && strings.Contains(e.Source, dev+"-1.mlxlink.json") && strings.Contains(e.What, node)
	}) || !slices.ContainsFunc(phyEv, func(e check.Evidence) bool { return e.Value == phycheck.NoEvidence }) {
		t.Errorf("want the host end's bad lane and the switch end without evidence: %+v", phyEv)
	}
	// The document carries the same, laid out for a report: both ends,
	// the host's with its mlxlink facts, the switch's bare.
	if ends := rep.Cover.Fault.PHY; len(ends) != 2 || len(ends[0].Ports)+len(ends[1].Ports) != 1 {
		t.Errorf("Fault.PHY %+v", ends)
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

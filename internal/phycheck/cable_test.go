package phycheck

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// A cable named by GUID and port (as bench --schedule cover names it):
// the host end resolves through the snapshots to n01 mlx5_0 port 1 and
// carries what its saved mlxlink shows; the switch end, with nothing
// gathered, says "no PHY evidence".
func TestCableEvidence(t *testing.T) {
	b, name := capture(t, "mlxlink", "cx7-fw28.47_400GbE-DR4")
	bad := strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)
	ps, err := phy.Named([]byte(bad), "/var/lib/rdmalab/phy/mlx5_0-1.mlxlink.json", "n01")
	if err != nil {
		t.Fatal(err)
	}
	snap := &host.Snapshot{Hostname: "n01", Phy: ps, RDMADevices: []host.RDMADevice{{Name: "mlx5_0", NodeGUID: 0xb8cef60300a1b2c0, Ports: []host.RDMAPort{{Port: 1, PortGUID: 0xb8cef60300a1b2c1}}}}}
	snaps := []*host.Snapshot{snap}
	ends := []End{EndOf(snaps, 0xb8cef60300a1b2c1, 1, "n01 HCA-1"), EndOf(snaps, 0x506b4b0300820910, 17, "sw-leaf1")}
	if ends[0].Host != "n01" || ends[0].Device != "mlx5_0" || ends[0].Port != 1 {
		t.Fatalf("host end %+v", ends[0])
	}
	ev := CableEvidence(ends, HostFacts(snaps))
	if len(ev) != 2 {
		t.Fatalf("%+v", ev)
	}
	if !strings.Contains(ev[0].What, "n01 HCA-1") || !strings.Contains(ev[0].Value, "phy.lane.errors") || !strings.Contains(ev[0].Value, "lane 0") || !strings.Contains(ev[0].Source, name[:0]+"mlx5_0-1.mlxlink.json") {
		t.Errorf("host end: %+v", ev[0])
	}
	if !strings.Contains(ev[1].What, "sw-leaf1") || ev[1].Value != NoEvidence {
		t.Errorf("switch end: %+v", ev[1])
	}
	// The same cable with the healthy capture: the facts that passed.
	snap.Phy, _ = phy.Named(b, "/var/lib/rdmalab/phy/mlx5_0-1.mlxlink.json", "n01")
	ev = CableEvidence(ends[:1], HostFacts(snaps))
	if !strings.HasPrefix(ev[0].Value, "healthy: ") || !strings.Contains(ev[0].Value, "1e-12") {
		t.Errorf("healthy end: %+v", ev[0])
	}
	// Another host's mlx5_0 is not this end.
	other := &host.Snapshot{Hostname: "n02", Phy: snap.Phy}
	if ev := CableEvidence(ends[:1], HostFacts([]*host.Snapshot{other})); ev[0].Value != NoEvidence {
		t.Errorf("n02's facts attached to n01: %+v", ev)
	}
}

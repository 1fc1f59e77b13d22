package inventory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// PHY outputs saved in a host tree under var/lib/rdmalab/phy/ become the
// snapshot's phy[], each with the port its file name names and the host;
// gather keeps them, so the capture replays to the same facts.
func TestPHYOutputsInTheTree(t *testing.T) {
	root := testhost.WriteTree(t, testhost.Seed000())
	dir := filepath.Join(root, phy.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mlx, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "mlxlink", "yuuki-rdma-exporter_mft-4.34.1_cx7-fw28.47_400GbE-DR4-osfp_module-counters_json_vendor-anonymized.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"mlx5_0-1.mlxlink.json":      mlx,
		"enp65s0f1np1.ethtool-S.txt": []byte("rx_err_lane_0_phy: 6\nrx_err_lane_1_phy: 2\nrx_err_lane_2_phy: 190\nrx_err_lane_3_phy: 0\n"),
		"notes.txt":                  []byte("cabled by Bob on Tuesday\n"),
		"enp65s0f0np0.show-fec.txt":  []byte("FEC parameters for enp65s0f0np0:\nActive FEC encoding: RS\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fixed := Options{Now: func() time.Time { return time.Unix(0, 0) }}
	s, err := Open(root, fixed)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Phy) != 3 {
		t.Fatalf("%d PHY ports: %+v", len(s.Phy), s.Phy)
	}
	i := slices.IndexFunc(s.Phy, func(p phy.Port) bool { return p.Device == "mlx5_0" && p.Port == 1 })
	if i < 0 || s.Phy[i].Host != s.Hostname || s.Phy[i].Counters == nil || *s.Phy[i].Counters.WindowMin != 2718.1 {
		t.Errorf("mlx5_0 port 1: %+v", s.Phy)
	}
	if !slices.ContainsFunc(s.Phy, func(p phy.Port) bool {
		return p.Netdev == "enp65s0f1np1" && p.Counters != nil && len(p.Counters.RawLane) == 4
	}) {
		t.Errorf("enp65s0f1np1: %+v", s.Phy)
	}
	if !slices.ContainsFunc(s.Errors, func(e host.CollectError) bool { return filepath.Base(e.Path) == "notes.txt" }) {
		t.Errorf("notes.txt not named as unread: %+v", s.Errors)
	}
	out := filepath.Join(t.TempDir(), "h.tar.gz")
	if _, _, err := Gather(root, out, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	arch, err := Open(out, fixed)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(s.Phy)
	got, _ := json.Marshal(arch.Phy)
	if string(got) != string(want) {
		t.Errorf("from the capture:\n%s\nfrom the tree:\n%s", got, want)
	}
}

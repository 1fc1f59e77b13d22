package report

import (
	"bytes"
	"testing"

	"github.com/rdmalab/rdmalab/internal/design"
)

// The design calculators' answers as the terminal shows them, at no width
// limit and fitted to 80 columns.
func TestDesignGolden(t *testing.T) {
	tr, err := design.PlanTransfer(design.TransferOptions{Size: "280GB", Rate: "25GbE", Links: 1, Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	up, err := design.PlanUplink(design.UplinkRequest{GPUs: 16, PerGPUIngestGBps: 1, MaxUtilization: 0.8, FabricRate: "400GbE"})
	if err != nil {
		t.Fatal(err)
	}
	clos, err := design.PlanFRR(design.FRRRequest{Spines: 2, Leaves: 4, SpineASN: 65000, LeafASNBase: 65001, Loopbacks: "10.0.0.0/24",
		LeafNetworks: "10.1.0.0/16", LeafPrefixLen: 24, SpineName: "spine", LeafName: "leaf", PortPrefix: "swp", HostInterface: "hosts"})
	if err != nil {
		t.Fatal(err)
	}
	outs := map[string]func(w *Terminal){
		"transfer-280GB-25GbE": func(w *Terminal) { DesignTransfer(w, tr) },
		"uplink-16gpus-1GBps":  func(w *Terminal) { DesignUplink(w, up) },
		"frr-2x4":              func(w *Terminal) { DesignFRR(w, clos, "frr/") },
	}
	for name, req := range map[string]design.FabricRequest{
		"fabric-2048-radix64-ndr": {Hosts: 2048, NICsPerNode: 1, Radix: 64, Rate: "4X NDR", Oversubscription: 1},
		"fabric-4nodes-200GbE":    {Nodes: 4, NICsPerNode: 1, GPUsPerNode: 4, Radix: 32, Rate: "200GbE", Oversubscription: 1},
		"fabric-128-radix8-3tier": {Hosts: 128, NICsPerNode: 1, Radix: 8, Rate: "4X HDR", Oversubscription: 1},
		"fabric-32x8rails-400GbE": {Nodes: 32, NICsPerNode: 8, GPUsPerNode: 8, Radix: 64, Rate: "400GbE", Oversubscription: 2},
	} {
		f, err := design.PlanFabric(req)
		if err != nil {
			t.Fatal(err)
		}
		outs[name] = func(w *Terminal) { DesignFabric(w, f) }
	}
	for name, out := range outs {
		for _, width := range []int{0, 80} {
			var b bytes.Buffer
			out(&Terminal{Writer: &b, Style: Style{Width: width, ASCII: false}})
			file := "design/" + name + ".txt"
			if width > 0 {
				file = "design/" + name + "-80.txt"
				for _, l := range bytes.Split(b.Bytes(), []byte("\n")) {
					if n := len([]rune(string(l))); n > width {
						t.Errorf("%s at width %d: a line of %d columns: %s", name, width, n, l)
					}
				}
			}
			golden(t, file, b.Bytes())
		}
	}
}

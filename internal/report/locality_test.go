package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
)

// Every RDMA-capable PCI function is in the locality map (an InfiniBand
// serial-bus HCA, a ConnectX without its RDMA device, any function with
// an RDMA device), and PCIe values not read print as unknown, never Gen0 x0.
func TestLocalityMapShowsEveryRDMAFunction(t *testing.T) {
	s := &host.Snapshot{Hostname: "h",
		PCIDevices: []host.PCIDevice{
			{Address: host.MustPCI("0000:43:00.0"), Class: "0x0c0600", ClassName: host.ClassName("0x0c0600"), Vendor: "0x1077", Device: "0x7322", Driver: "ib_qib", CurrentLinkSpeedGTps: 8, CurrentLinkWidth: 4},
			{Address: host.MustPCI("0000:1a:00.0"), Class: "0x020700", ClassName: host.ClassName("0x020700"), Vendor: "0x15b3", Device: "0x1013", Driver: "mlx5_core"},
			{Address: host.MustPCI("0000:05:00.0"), Class: "0x088000", ClassName: host.ClassName("0x088000"), Vendor: "0x1234", Device: "0x0001", Driver: "odd_rdma", MaxLinkSpeedGTps: 16, MaxLinkWidth: 16},
		},
		RDMADevices: []host.RDMADevice{{Name: "qib0", PCIAddress: host.MustPCI("0000:43:00.0")}, {Name: "odd0", PCIAddress: host.MustPCI("0000:05:00.0")}},
	}
	s.Normalize()
	var b bytes.Buffer
	Inventory(&b, s)
	out := b.String()
	for _, want := range []string{"43:00.0", "1a:00.0", "05:00.0", "qib0", "odd0", "Gen3 x4 / unknown", "unknown / Gen4 x16"} {
		if !strings.Contains(out, want) {
			t.Errorf("locality map lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "Gen0") || strings.Contains(out, "x0") {
		t.Errorf("an unknown PCIe value printed as zero\n%s", out)
	}
}

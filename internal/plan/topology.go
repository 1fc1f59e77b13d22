package plan

import (
	"encoding/xml"
	"fmt"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/rdmalab/rdmalab/internal/host"
)

// NCCL inside a VM sees a flat virtual PCI tree and cannot tell which NIC
// is near which GPU; cloud GPU VMs ship a topology file for it
// (NCCL_TOPO_FILE, the XML NCCL itself dumps with NCCL_TOPO_DUMP_FILE).
// The file written here has one <cpu> per guest NUMA cell and the VM's
// GPUs and NICs at their fixed guest bus ids (guestLayout), each GPU+NIC
// pair the plan made on one PCIe switch (PIX/PXB) under one virtual
// bridge, so NCCL pairs them as the plan did; other devices sit alone
// under their cell.

type topoSystem struct {
	XMLName xml.Name  `xml:"system"`
	Version int       `xml:"version,attr"`
	CPUs    []topoCPU `xml:"cpu"`
}

type topoCPU struct {
	NUMAID   int       `xml:"numaid,attr"`
	Affinity string    `xml:"affinity,attr"`
	Arch     string    `xml:"arch,attr"`
	Vendor   string    `xml:"vendor,attr"`
	PCI      []topoPCI `xml:"pci"`
}

type topoPCI struct {
	BusID     string    `xml:"busid,attr"`
	Class     string    `xml:"class,attr"`
	LinkSpeed string    `xml:"link_speed,attr,omitempty"`
	LinkWidth string    `xml:"link_width,attr,omitempty"`
	PCI       []topoPCI `xml:"pci"`
}

// NCCLTopology is the NCCL topology file of vm's guest.
func NCCLTopology(p *Plan, vm VM) (string, error) {
	l, err := guestLayout(vm)
	if err != nil {
		return "", err
	}
	guest := map[host.PCIAddress]guestDevice{}
	for _, g := range l.devices {
		guest[g.dev.Address] = g
	}
	sys := topoSystem{Version: 1}
	for _, c := range vm.Cells {
		aff, err := cpuMask(c.VCPUs, vm.VCPUs)
		if err != nil {
			return "", fmt.Errorf("%s cell %d: %w", vm.Name, c.ID, err)
		}
		sys.CPUs = append(sys.CPUs, topoCPU{NUMAID: c.ID, Affinity: aff, Arch: "x86_64", Vendor: p.CPUVendor})
	}
	bridge := 0
	under := func(cell int, children ...topoPCI) {
		bridge++
		sys.CPUs[cell].PCI = append(sys.CPUs[cell].PCI, topoPCI{BusID: fmt.Sprintf("ffff:ff:%02x.0", bridge), Class: "0x060400",
			LinkSpeed: children[0].LinkSpeed, LinkWidth: children[0].LinkWidth, PCI: children})
	}
	placed := map[host.PCIAddress]bool{}
	for _, pr := range vm.Pairs {
		g, gok := guest[pr.GPU]
		n, nok := guest[pr.NIC]
		if gok && nok && (pr.Level == "PIX" || pr.Level == "PXB") {
			under(g.cell, topoDevice(g), topoDevice(n))
			placed[pr.GPU], placed[pr.NIC] = true, true
		}
	}
	for _, g := range l.devices {
		if placed[g.dev.Address] || (g.dev.Role != "gpu" && g.dev.Role != "nic") {
			continue
		}
		under(g.cell, topoDevice(g))
	}
	b, err := xml.MarshalIndent(sys, "", "  ")
	if err != nil {
		return "", fmt.Errorf("%s topology: %w", vm.Name, err)
	}
	return string(b) + "\n", nil
}

func topoDevice(g guestDevice) topoPCI {
	// The guest sees the device alone behind its root port, as function
	// host.Function of slot 0 on the port's bus (guestLayout keeps buses
	// below 256).
	guest, _ := host.NewPCIAddress(0, g.guestBus, 0, uint(g.host.Function))
	t := topoPCI{BusID: guest.String(), Class: g.dev.Class}
	if g.dev.LinkGTps > 0 {
		t.LinkSpeed = fmt.Sprintf("%g GT/s", g.dev.LinkGTps)
	}
	if g.dev.LinkWidth > 0 {
		t.LinkWidth = fmt.Sprint(g.dev.LinkWidth)
	}
	return t
}

// cpuMask is a cpulist as the kernel's cpumask text: 32-bit hex words,
// most significant first, comma-separated, covering n CPUs.
func cpuMask(list string, n int) (string, error) {
	set, err := cpuset.Parse(list)
	if err != nil {
		return "", err
	}
	words := make([]uint32, (n+31)/32)
	for _, c := range set.List() {
		if c/32 < len(words) {
			words[c/32] |= 1 << (c % 32)
		}
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ","), nil
}

package testhost

import (
	"fmt"
	"strings"
)

const (
	roceActive = "4: ACTIVE"
	linkUp     = "5: LinkUp"
	classNIC   = "0x020000"
	classIB    = "0x020700"
	classBr    = "0x060400"
	gen3x16    = "8.0 GT/s PCIe x16"
	gen3x8     = "8.0 GT/s PCIe x8"
	gen5x16    = "32.0 GT/s PCIe x16"
	modsRDMA   = "mlx5_core mlx5_ib ib_core ib_uverbs ib_umad rdma_cm rdma_ucm"
)

var unlimitedMemlock = "# RDMA pins memory\n* soft memlock unlimited\n* hard memlock unlimited\n"

// Seed000 is the EPYC 7551P lab host of seed 000: 4 NUMA nodes × 8 cores × 2
// threads, RTX 3090s at 06:00.0 (node 0) and 21:00.0 (node 1), ConnectX-4 Lx
// dual-port cards at 41:00.x (node 2) and 61:00.x (node 3) cabled back to back,
// RoCE at 25G with MTU 4200, tuned as the article tunes it.
func Seed000() Machine {
	m := Machine{
		Hostname: "epyc-lab", Kernel: "5.14.0-570.el9.x86_64",
		Cmdline: "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-570.el9.x86_64 root=/dev/mapper/cs-root ro iommu=pt isolcpus=2-29,34-61 nohz_full=2-29,34-61 rcu_nocbs=2-29,34-61 default_hugepagesz=1G hugepagesz=1G hugepages=64",
		Sockets: 1, NodesPerSocket: 4, CoresPerNode: 8, Threads: 2, MemPerNodeGiB: 64,
		Distances:   [][]int{{10, 16, 16, 16}, {16, 10, 16, 16}, {16, 16, 10, 16}, {16, 16, 16, 10}},
		HugePages1G: 16, Isolated: "2-29,34-61", NohzFull: "2-29,34-61", Governor: "performance",
		Modules: strings.Fields(modsRDMA + " nvidia nvidia_uvm nvidia_modeset nvidia_drm nvidia_peermem vfio_pci vfio_iommu_type1 vfio"),
		Limits:  unlimitedMemlock, IOMMU: true, Files: map[string]string{},
	}
	group := 10
	for i, die := range []struct {
		hb, rp, dev, kind string
		node              int
	}{{"pci0000:00", "0000:00:03.1", "0000:06:00", "gpu", 0}, {"pci0000:20", "0000:20:03.1", "0000:21:00", "gpu", 1}, {"pci0000:40", "0000:40:01.1", "0000:41:00", "nic", 2}, {"pci0000:60", "0000:60:01.1", "0000:61:00", "nic", 3}} {
		m.PCI = append(m.PCI, PCIFunc{Addr: die.rp, HostBridge: die.hb, Class: classBr, Vendor: "0x1022", Device: "0x1453", Driver: "pcieport", Node: die.node, Link: gen3x16, IOMMUGroup: group})
		group++
		if die.kind == "gpu" {
			m.PCI = append(m.PCI,
				PCIFunc{Addr: die.dev + ".0", Parent: die.rp, Class: "0x030000", Vendor: "0x10de", Device: "0x2204", Driver: "nvidia", Node: die.node, Link: gen3x16, MaxLink: "16.0 GT/s PCIe x16", IOMMUGroup: group, ResetMethod: "flr bus"},
				PCIFunc{Addr: die.dev + ".1", Parent: die.rp, Class: "0x040300", Vendor: "0x10de", Device: "0x1aef", Driver: "snd_hda_intel", Node: die.node, Link: gen3x16, MaxLink: "16.0 GT/s PCIe x16", IOMMUGroup: group, ResetMethod: "bus"})
			group++
			continue
		}
		nic := i - 2
		for fn := 0; fn < 2; fn++ {
			addr := fmt.Sprintf("%s.%d", die.dev, fn)
			m.PCI = append(m.PCI, PCIFunc{Addr: addr, Parent: die.rp, Class: classNIC, Vendor: "0x15b3", Device: "0x1015", Driver: "mlx5_core", Node: die.node, Link: gen3x8, IOMMUGroup: group, ResetMethod: "flr bus"})
			group++
			rdma := fmt.Sprintf("mlx5_%d", nic*2+fn)
			bus := 0x41 + nic*0x20
			netdev := fmt.Sprintf("enp%ds0f%dnp%d", bus, fn, fn)
			ip := fmt.Sprintf("10.0.%d.%d", fn, nic+1)
			ll := fmt.Sprintf("fe80::526b:4bff:fe43:%02x%02x", 0x3a+nic, fn)
			m.RDMA = append(m.RDMA, RDMADev{Name: rdma, PCI: addr, NodeGUID: fmt.Sprintf("506b:4b03:0043:%02x%02x", 0x3a+nic, fn), FW: "14.32.1010", BoardID: "MT_2420110034", HCAType: "MT4117",
				Ports: []Port{{State: roceActive, Phys: linkUp, Rate: "25 Gb/sec (1X EDR)", LinkLayer: "Ethernet", TrafficClass: "Global tclass=106", GIDs: []GIDEntry{
					{0, ll, "IB/RoCE v1", netdev}, {1, ll, "RoCE v2", netdev},
					{2, "::ffff:" + ip, "IB/RoCE v1", netdev}, {3, "::ffff:" + ip, "RoCE v2", netdev}}}}})
			// Seed 001's lossless RoCE: trust dscp, PFC and ECN on priority 3
			// (DSCP 26, traffic class 106), CNPs at DSCP 48 on priority 6.
			m.Net = append(m.Net, NetDev{Name: netdev, PCI: addr, MTU: 4200, SpeedMbps: 25000, Port: 0,
				ECN: []int{3}, QoS: &QoS{Trust: "dscp", PFC: []int{3}, CNPDSCP: 48, CNPPrio: 6}})
			// cma_roce_mode -m 2 and cma_roce_tos -t 106 (seed 001).
			cm := fmt.Sprintf("/sys/kernel/config/rdma_cm/%s/ports/1/", rdma)
			m.Files[cm+"default_roce_mode"], m.Files[cm+"default_roce_tos"] = "RoCE v2", "106"
		}
	}
	return m
}

// R730 is a Dell R730 of seeds 002/003: two Xeon E5-2690 v4, a ConnectX-4
// (MCX455A, EDR-capable) on an unmanaged QDR switch with OpenSM on a host, a
// Tesla T4 on the other socket, IPoIB in connected mode, and the BMC's VGA.
func R730() Machine {
	m := Machine{
		Hostname: "columbia.lab", Kernel: "6.12.0-55.el10_0.x86_64",
		Cmdline: "BOOT_IMAGE=(hd0,msdos1)/vmlinuz-6.12.0-55.el10_0.x86_64 root=/dev/mapper/rhel-root ro intel_iommu=on iommu=pt crashkernel=1G-4G:192M",
		Sockets: 2, NodesPerSocket: 1, CoresPerNode: 14, Threads: 2, MemPerNodeGiB: 128, Governor: "performance",
		Modules: strings.Fields(modsRDMA + " ib_ipoib nvidia nvidia_uvm nvidia_peermem"),
		Limits:  unlimitedMemlock, IOMMU: true,
	}
	m.PCI = []PCIFunc{
		{Addr: "0000:00:02.0", HostBridge: "pci0000:00", Class: classBr, Vendor: "0x8086", Device: "0x6f04", Driver: "pcieport", Node: 0, Link: gen3x16, IOMMUGroup: 30},
		{Addr: "0000:04:00.0", Parent: "0000:00:02.0", Class: classIB, Vendor: "0x15b3", Device: "0x1013", Driver: "mlx5_core", Node: 0, Link: gen3x16, IOMMUGroup: 31, ResetMethod: "flr bus"},
		{Addr: "0000:00:1c.0", HostBridge: "pci0000:00", Class: classBr, Vendor: "0x8086", Device: "0x8d10", Driver: "pcieport", Node: 0, Link: "5.0 GT/s PCIe x1", IOMMUGroup: 32},
		{Addr: "0000:01:00.0", Parent: "0000:00:1c.0", Class: classNIC, Vendor: "0x14e4", Device: "0x165f", Driver: "tg3", Node: 0, Link: "5.0 GT/s PCIe x1", IOMMUGroup: 33},
		{Addr: "0000:00:1c.7", HostBridge: "pci0000:00", Class: classBr, Vendor: "0x8086", Device: "0x8d1e", Driver: "pcieport", Node: 0, Link: "2.5 GT/s PCIe x1", IOMMUGroup: 34},
		{Addr: "0000:09:00.0", Parent: "0000:00:1c.7", Class: "0x030000", Vendor: "0x102b", Device: "0x0536", Driver: "mgag200", Node: 0, IOMMUGroup: 35},
		{Addr: "0000:80:02.0", HostBridge: "pci0000:80", Class: classBr, Vendor: "0x8086", Device: "0x6f04", Driver: "pcieport", Node: 1, Link: gen3x16, IOMMUGroup: 60},
		{Addr: "0000:82:00.0", Parent: "0000:80:02.0", Class: "0x030200", Vendor: "0x10de", Device: "0x1eb8", Driver: "nvidia", Node: 1, Link: gen3x16, IOMMUGroup: 61, ResetMethod: "flr bus"},
	}
	m.RDMA = []RDMADev{{Name: "mlx5_0", PCI: "0000:04:00.0", NodeGUID: "248a:0703:00ac:5414", FW: "12.28.2006", BoardID: "MT_2180110032", HCAType: "MT4115",
		Ports: []Port{{State: roceActive, Phys: linkUp, Rate: "40 Gb/sec (4X QDR)", LinkLayer: "InfiniBand", LID: 2, SMLID: 1,
			GIDs: []GIDEntry{{0, "fe80::248a:703:ac:5414", "IB/RoCE v1", ""}}}}}}
	m.Net = []NetDev{
		{Name: "ib0", PCI: "0000:04:00.0", MTU: 65520, SpeedMbps: 40000, Type: 32, Mode: "connected"},
		{Name: "eno1", PCI: "0000:01:00.0", MTU: 1500, SpeedMbps: 1000},
	}
	return m
}

// HGX is an 8×H200 HGX host as seed 004's guide describes it: two
// sockets, each with four PCIe switches under their own host bridges; each
// switch holds one H200 GPU, one ConnectX-7 NDR InfiniBand HCA and its
// storage (S0,S1 with G0; S2,S3 with G1; one drive with each of G2-G7, the
// guide's table). The four NVSwitches (10de:22a3, class 0680, the IDs of
// the real HGX H100 lspci in ../shared/testdata/nvswitch) sit under
// socket 0's switches, one each.
func HGX() Machine {
	m := Machine{
		Hostname: "hgx-h200-01", Kernel: "6.8.0-45-generic",
		Cmdline: "BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=3f1c0d5e-8a7b-4c2d-9e1f-0a1b2c3d4e5f ro intel_iommu=on iommu=pt default_hugepagesz=1G hugepagesz=1G hugepages=1024",
		Sockets: 2, NodesPerSocket: 1, CoresPerNode: 48, Threads: 2, MemPerNodeGiB: 1024,
		HugePages1G: 512, Governor: "performance",
		Modules: strings.Fields(modsRDMA + " ib_ipoib nvidia nvidia_uvm nvidia_peermem nvme"),
		Limits:  unlimitedMemlock, IOMMU: true,
	}
	m.PCI = []PCIFunc{
		{Addr: "0000:00:1c.0", HostBridge: "pci0000:00", Class: classBr, Vendor: "0x8086", Device: "0x1bb8", Driver: "pcieport", Node: 0, Link: "8.0 GT/s PCIe x1", IOMMUGroup: 1},
		{Addr: "0000:04:00.0", Parent: "0000:00:1c.0", Class: classNIC, Vendor: "0x14e4", Device: "0x165f", Driver: "tg3", Node: 0, Link: "5.0 GT/s PCIe x1", IOMMUGroup: 2},
	}
	m.Net = []NetDev{{Name: "eno8303", PCI: "0000:04:00.0", MTU: 1500, SpeedMbps: 1000}}
	group := 10
	storage := []int{2, 2, 1, 1, 1, 1, 1, 1} // drives per switch, S0-S9
	for s, bus := range []int{0x10, 0x20, 0x30, 0x40, 0x90, 0xa0, 0xb0, 0xc0} {
		node := s / 4
		hb := fmt.Sprintf("pci0000:%02x", bus)
		rp := fmt.Sprintf("0000:%02x:01.0", bus)
		up := fmt.Sprintf("0000:%02x:00.0", bus+1)
		m.PCI = append(m.PCI,
			PCIFunc{Addr: rp, HostBridge: hb, Class: classBr, Vendor: "0x8086", Device: "0x352a", Driver: "pcieport", Node: node, Link: gen5x16, IOMMUGroup: group},
			PCIFunc{Addr: up, Parent: rp, Class: classBr, Vendor: "0x1000", Device: "0xc030", Driver: "pcieport", Node: node, Link: gen5x16, IOMMUGroup: group + 1})
		group += 2
		kinds := []string{"gpu", "nic"}
		for range storage[s] {
			kinds = append(kinds, "nvme")
		}
		if node == 0 {
			kinds = append(kinds, "nvswitch")
		}
		for slot, kind := range kinds {
			down := fmt.Sprintf("0000:%02x:%02x.0", bus+2, slot)
			dev := fmt.Sprintf("0000:%02x:00.0", bus+3+slot)
			m.PCI = append(m.PCI, PCIFunc{Addr: down, Parent: up, Class: classBr, Vendor: "0x1000", Device: "0xc030", Driver: "pcieport", Node: node, Link: gen5x16, IOMMUGroup: group})
			group++
			switch kind {
			case "gpu":
				m.PCI = append(m.PCI, PCIFunc{Addr: dev, Parent: down, Class: "0x030200", Vendor: "0x10de", Device: "0x2335", Driver: "nvidia", Node: node, Link: gen5x16, IOMMUGroup: group, ResetMethod: "flr bus"})
			case "nic":
				m.PCI = append(m.PCI, PCIFunc{Addr: dev, Parent: down, Class: classIB, Vendor: "0x15b3", Device: "0x1021", Driver: "mlx5_core", Node: node, Link: gen5x16, IOMMUGroup: group, ResetMethod: "flr bus"})
				name := fmt.Sprintf("mlx5_%d", s)
				guid := fmt.Sprintf("a088:c203:00%02x:%02x10", bus+3+slot, s)
				m.RDMA = append(m.RDMA, RDMADev{Name: name, PCI: dev, NodeGUID: guid, FW: "28.39.2048", BoardID: "MT_0000000838", HCAType: "MT4129",
					Ports: []Port{{State: roceActive, Phys: linkUp, Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand", LID: 10 + s, SMLID: 1,
						GIDs: []GIDEntry{{0, fmt.Sprintf("fe80::a088:c203:%02x:%02x10", bus+3+slot, s), "IB/RoCE v1", ""}}}}})
				m.Net = append(m.Net, NetDev{Name: fmt.Sprintf("ibp%ds0", bus+3+slot), PCI: dev, MTU: 4092, SpeedMbps: 400000, Type: 32, Mode: "datagram"})
			case "nvme":
				m.PCI = append(m.PCI, PCIFunc{Addr: dev, Parent: down, Class: "0x010802", Vendor: "0x144d", Device: "0xa824", Driver: "nvme", Node: node, Link: "16.0 GT/s PCIe x4", IOMMUGroup: group})
			case "nvswitch":
				m.PCI = append(m.PCI, PCIFunc{Addr: dev, Parent: down, Class: "0x068000", Vendor: "0x10de", Device: "0x22a3", Driver: "nvidia", Node: node, Link: "16.0 GT/s PCIe x2", IOMMUGroup: group})
			}
			group++
		}
	}
	return m
}

// Seeds are the seed machines by name, as tests and the example use them.
func Seeds() map[string]func() Machine {
	return map[string]func() Machine{"seed000-epyc": Seed000, "r730-qdr": R730, "hgx-h200": HGX}
}

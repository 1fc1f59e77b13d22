package host

import "slices"

// Affinity levels, best first, as `nvidia-smi topo -m` prints them.
const (
	LevelSelf = "X"
	LevelPIX  = "PIX"  // through at most one PCIe switch
	LevelPXB  = "PXB"  // through several PCIe bridges, not the host bridge
	LevelPHB  = "PHB"  // through a PCIe host bridge (the CPU)
	LevelNODE = "NODE" // between host bridges inside one NUMA node
	LevelSYS  = "SYS"  // across the interconnect between NUMA nodes
	// LevelSYSUnknown is SYS because a device's NUMA node is unknown.
	LevelSYSUnknown = "SYS?"
)

// LevelRank orders levels best first; unknown levels rank last.
func LevelRank(level string) int {
	if i := slices.Index([]string{LevelSelf, LevelPIX, LevelPXB, LevelPHB, LevelNODE, LevelSYS, LevelSYSUnknown}, level); i >= 0 {
		return i
	}
	return 99
}

// PathLevel computes the affinity level between two PCI devices of a
// snapshot from their place in the PCI tree, the way nvidia-smi and NCCL do:
// a PCIe switch (upstream port plus its downstream ports) counts as one hop.
func PathLevel(a, b *PCIDevice, bridges map[PCIAddress]*PCIDevice) string {
	if a.Address == b.Address {
		return LevelSelf
	}
	if a.HostBridge != b.HostBridge || a.HostBridge == "" {
		switch {
		case a.LocalityNUMANode < 0 || b.LocalityNUMANode < 0:
			return LevelSYSUnknown
		case a.LocalityNUMANode == b.LocalityNUMANode:
			return LevelNODE
		default:
			return LevelSYS
		}
	}
	if pa := a.Address.Slot(); pa != "" && pa == b.Address.Slot() {
		return LevelPIX // functions of one device
	}
	ia, ib := -1, -1
	for i, p := range a.Parents {
		if j := slices.Index(b.Parents, p); j >= 0 {
			ia, ib = i, j
			break
		}
	}
	if ia < 0 {
		return LevelPHB
	}
	switches := map[PCIAddress]bool{}
	for _, p := range append(slices.Clone(a.Parents[:ia+1]), b.Parents[:ib+1]...) {
		switches[switchOf(p, bridges)] = true
	}
	if len(switches) == 1 {
		if br := bridges[a.Parents[ia]]; br != nil && br.BridgeRole == "root_port" {
			return LevelPXB
		}
		return LevelPIX
	}
	return LevelPXB
}

// switchOf names the switch a bridge belongs to: a downstream port belongs
// to its upstream port's switch; anything else is its own.
func switchOf(addr PCIAddress, bridges map[PCIAddress]*PCIDevice) PCIAddress {
	if br := bridges[addr]; br != nil && br.BridgeRole == "switch_downstream" && len(br.Parents) > 0 {
		return br.Parents[0]
	}
	return addr
}

// BridgeIndex maps bridge addresses to their devices.
func (s *Snapshot) BridgeIndex() map[PCIAddress]*PCIDevice {
	m := map[PCIAddress]*PCIDevice{}
	for i := range s.PCIDevices {
		if s.PCIDevices[i].BridgeRole != "" {
			m[s.PCIDevices[i].Address] = &s.PCIDevices[i]
		}
	}
	return m
}

// ComputeAffinity fills s.Affinity: every GPU against every RDMA device
// that has a PCI function, in snapshot order.
func (s *Snapshot) ComputeAffinity() {
	bridges := s.BridgeIndex()
	s.Affinity = nil
	for _, g := range s.GPUs {
		gd := s.PCI(g.Address)
		if gd == nil {
			continue
		}
		for _, r := range s.RDMADevices {
			nd := s.PCI(r.PCIAddress)
			if nd == nil {
				continue
			}
			s.Affinity = append(s.Affinity, AffinityPair{GPU: g.Address, NIC: r.PCIAddress, RDMA: r.Name, Level: PathLevel(gd, nd, bridges)})
		}
	}
}

// AffinityOf returns the level between a GPU and an RDMA device, or "".
func (s *Snapshot) AffinityOf(gpu PCIAddress, rdma string) string {
	for _, p := range s.Affinity {
		if p.GPU == gpu && p.RDMA == rdma {
			return p.Level
		}
	}
	return ""
}

// LinkCeiling is the best PCIe link a device can train at in its slot: the
// lesser of its own maximum and its upstream port's, as NCCL sizes links.
// Zero values mean unknown.
func (s *Snapshot) LinkCeiling(d *PCIDevice) (gtps float64, width int) {
	gtps, width = d.MaxLinkSpeedGTps, d.MaxLinkWidth
	if len(d.Parents) == 0 {
		return gtps, width
	}
	if p := s.PCI(d.Parents[0]); p != nil {
		if p.MaxLinkSpeedGTps > 0 && p.MaxLinkSpeedGTps < gtps {
			gtps = p.MaxLinkSpeedGTps
		}
		if p.MaxLinkWidth > 0 && p.MaxLinkWidth < width {
			width = p.MaxLinkWidth
		}
	}
	return gtps, width
}

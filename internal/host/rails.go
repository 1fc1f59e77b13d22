package host

import (
	"slices"

	"github.com/rdmalab/rdmalab/internal/portstate"
)

// Rail is one GPU's nearest RDMA NIC: the one answer doctor, nccl env,
// plan and the nvidia-smi topo judge all give.
type Rail struct {
	GPU   PCIAddress `json:"gpu"`
	RDMA  string     `json:"rdma,omitempty"` // "" when the host has no candidate NIC
	NIC   PCIAddress `json:"nic,omitzero"`
	Level string     `json:"level,omitempty"` // PIX … SYS
	// Shared is set when every candidate card was already another GPU's
	// rail, so this GPU shares one.
	Shared bool `json:"shared,omitempty"`
}

// RailCandidate is one GPU↔NIC cell for AssignRails.
type RailCandidate struct {
	GPU, NIC int    // indexes into the caller's GPUs and NICs
	Level    string // PathLevel between them
	// Card groups NICs that share one PCIe device (ports of one card):
	// a second GPU is given another card before a second port of a taken one.
	Card string
	// Inactive NICs (no active port) come after every active one: NCCL
	// skips them.
	Inactive bool
	Distance int // NUMA distance (SLIT), 0 when unknown
}

// AssignRails is the one nearest-NIC rule. Each GPU's rail is at its best
// reach: a NIC with an active port if it has one (NCCL skips the others),
// at the best path level. Among those, a card no other GPU has is taken
// first (so a second GPU gets another card before a second port of a taken
// one), then the nearest NUMA node, then column order; only when every
// such card is taken does a GPU share one (marked by RailShared). It
// returns, per GPU index 0..nGPU-1, the index of the chosen candidate in
// cands, or -1 for a GPU with none.
func AssignRails(nGPU int, cands []RailCandidate) []int {
	reach := func(c RailCandidate) [2]int { return [2]int{boolRank(c.Inactive), LevelRank(c.Level)} }
	best := map[int][2]int{}
	for _, c := range cands {
		if b, ok := best[c.GPU]; !ok || reach(c)[0] < b[0] || (reach(c)[0] == b[0] && reach(c)[1] < b[1]) {
			best[c.GPU] = reach(c)
		}
	}
	var order []int
	for i, c := range cands {
		if c.GPU < nGPU && reach(c) == best[c.GPU] {
			order = append(order, i)
		}
	}
	key := func(c RailCandidate) []int {
		return []int{boolRank(c.Inactive), LevelRank(c.Level), c.Distance, c.GPU, c.NIC}
	}
	slices.SortStableFunc(order, func(a, b int) int { return slices.Compare(key(cands[a]), key(cands[b])) })
	out := make([]int, nGPU)
	for i := range out {
		out[i] = -1
	}
	taken := map[string]bool{}
	for _, i := range order {
		if c := cands[i]; out[c.GPU] < 0 && !taken[c.Card] {
			out[c.GPU] = i
			taken[c.Card] = true
		}
	}
	for _, i := range order {
		if c := cands[i]; out[c.GPU] < 0 {
			out[c.GPU] = i
		}
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Rails pairs each GPU of the snapshot (in snapshot order) with its
// nearest RDMA NIC by AssignRails. Candidates are RDMA devices with a PCI
// function that is not a virtual function of a device on this host.
func (s *Snapshot) Rails() []Rail {
	bridges := s.BridgeIndex()
	dist := s.numaDistance()
	var cands []RailCandidate
	var gpus []PCIAddress
	type nicRef struct {
		rdma string
		pci  PCIAddress
	}
	var nics []nicRef
	for _, r := range s.RDMADevices {
		d := s.PCI(r.PCIAddress)
		if d == nil || (d.PhysFn.IsValid() && s.PCI(d.PhysFn) != nil) {
			continue
		}
		nics = append(nics, nicRef{r.Name, r.PCIAddress})
	}
	for _, g := range s.GPUs {
		gd := s.PCI(g.Address)
		if gd == nil {
			continue
		}
		gi := len(gpus)
		gpus = append(gpus, g.Address)
		for ni, n := range nics {
			nd := s.PCI(n.pci)
			cands = append(cands, RailCandidate{GPU: gi, NIC: ni, Level: PathLevel(gd, nd, bridges), Card: n.pci.Slot(),
				Inactive: !s.RDMA(n.rdma).Active(), Distance: dist(gd.LocalityNUMANode, nd.LocalityNUMANode)})
		}
	}
	var out []Rail
	chosen := AssignRails(len(gpus), cands)
	for gi, ci := range chosen {
		r := Rail{GPU: gpus[gi]}
		if ci >= 0 {
			c := cands[ci]
			r.RDMA, r.NIC, r.Level = nics[c.NIC].rdma, nics[c.NIC].pci, c.Level
			r.Shared = RailShared(cands, chosen, gi)
		}
		out = append(out, r)
	}
	return out
}

// RailShared reports whether another GPU's rail is on GPU gi's rail card.
func RailShared(cands []RailCandidate, chosen []int, gi int) bool {
	ci := chosen[gi]
	if ci < 0 {
		return false
	}
	for g, o := range chosen {
		if g != gi && o >= 0 && cands[o].Card == cands[ci].Card {
			return true
		}
	}
	return false
}

// Active reports whether the device has an active port.
func (r *RDMADevice) Active() bool {
	for _, p := range r.Ports {
		if p.State == portstate.Active {
			return true
		}
	}
	return false
}

// numaDistance returns the SLIT distance between two nodes (0 unknown).
func (s *Snapshot) numaDistance() func(a, b int) int {
	dist := map[[2]int]int{}
	for _, n := range s.NUMANodes {
		for j, d := range n.Distances {
			if j < len(s.NUMANodes) {
				dist[[2]int{n.ID, s.NUMANodes[j].ID}] = d
			}
		}
	}
	return func(a, b int) int { return dist[[2]int{a, b}] }
}

// Sockets counts the distinct CPU packages (0 when the arch has none or
// no CPU was read): SYS on a one-socket host crosses NUMA nodes (dies),
// not sockets.
func (s *Snapshot) Sockets() int {
	seen := map[int]bool{}
	for _, c := range s.CPUs {
		if c.Package >= 0 {
			seen[c.Package] = true
		}
	}
	return len(seen)
}

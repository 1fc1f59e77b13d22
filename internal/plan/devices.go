package plan

import (
	"cmp"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// vmDevices is one VM's share of devices before CPUs are placed.
type vmDevices struct {
	devices []Device
	pairs   []Pair
	nodes   []int
}

// units joins PCI functions that must go to one VM: one IOMMU group, and
// everything under the bridge of a function that can only be reset by
// resetting that bridge. Other functions of a device in groups of their
// own stay with the host (seed 000 keeps the NICs' second ports, 41:00.1
// and 61:00.1). It returns the unit id of every endpoint, and why each joined.
type units struct {
	parent map[host.PCIAddress]host.PCIAddress
	why    map[host.PCIAddress]string
}

func (u *units) find(a host.PCIAddress) host.PCIAddress {
	for u.parent[a] != a {
		u.parent[a] = u.parent[u.parent[a]]
		a = u.parent[a]
	}
	return a
}

func (u *units) union(a, b host.PCIAddress, why string) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if rb.Compare(ra) < 0 {
		ra, rb = rb, ra
	}
	u.parent[rb] = ra
	if _, ok := u.why[b]; !ok {
		u.why[b] = why
	}
	if _, ok := u.why[a]; !ok {
		u.why[a] = why
	}
}

func newUnits(s *host.Snapshot) *units {
	u := &units{parent: map[host.PCIAddress]host.PCIAddress{}, why: map[host.PCIAddress]string{}}
	var eps []*host.PCIDevice
	for i := range s.PCIDevices {
		d := &s.PCIDevices[i]
		if d.BridgeRole != "" || host.IsBridgeClass(d.Class) {
			continue
		}
		eps = append(eps, d)
		u.parent[d.Address] = d.Address
	}
	first := map[string]host.PCIAddress{}
	join := func(key string, addr host.PCIAddress, why string) {
		if f, ok := first[key]; ok {
			u.union(f, addr, why)
		} else {
			first[key] = addr
		}
	}
	for _, d := range eps {
		if d.IOMMUGroup != nil {
			join(fmt.Sprintf("group %d", *d.IOMMUGroup), d.Address, fmt.Sprintf("same IOMMU group %d", *d.IOMMUGroup))
		}
	}
	for _, d := range eps {
		if d.ResetMethod == "bus" && len(d.Parents) > 0 {
			for _, o := range eps {
				if len(o.Parents) > 0 && o.Parents[0] == d.Parents[0] {
					u.union(d.Address, o.Address, fmt.Sprintf("%s can only be reset with its bridge %s", d.Address, d.Parents[0]))
				}
			}
		}
	}
	return u
}

// members lists the endpoints of addr's unit, sorted.
func (u *units) members(addr host.PCIAddress) []host.PCIAddress {
	r := u.find(addr)
	var out []host.PCIAddress
	for a := range u.parent {
		if u.find(a) == r {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, host.PCIAddress.Compare)
	return out
}

// pairGPUs pairs every GPU with its rail, host.Rails' one nearest-NIC
// answer (doctor and nccl env give the same); a card goes to one VM only,
// so a GPU whose rail is shared with an earlier GPU gets none.
func pairGPUs(s *host.Snapshot, _ *topology) []Pair {
	var pairs, alone []Pair
	taken := map[string]bool{}
	for _, r := range s.Rails() {
		card := r.NIC.Slot()
		if !r.NIC.IsValid() || taken[card] {
			alone = append(alone, Pair{GPU: r.GPU})
			continue
		}
		taken[card] = true
		pairs = append(pairs, Pair{GPU: r.GPU, NIC: r.NIC, RDMA: r.RDMA, Level: r.Level})
	}
	return append(pairs, alone...)
}

type nic struct {
	dev  *host.PCIDevice
	rdma string
}

// nics are the RDMA devices' physical functions, one per PCI device (a
// dual-port card's second function comes along with its first).
func nics(s *host.Snapshot) []nic {
	var out []nic
	seen := map[string]bool{}
	for _, r := range s.RDMADevices {
		d := s.PCI(r.PCIAddress)
		if d == nil || d.PhysFn.IsValid() {
			continue
		}
		slot := d.Address.Slot()
		if seen[slot] {
			continue
		}
		seen[slot] = true
		out = append(out, nic{d, r.Name})
	}
	slices.SortFunc(out, func(a, b nic) int { return a.dev.Address.Compare(b.dev.Address) })
	return out
}

// assignDevices splits the host's devices into VMs, by count or by the
// explicit groups of the request, and grows every VM to whole units.
func assignDevices(s *host.Snapshot, t *topology, req Request) ([]vmDevices, []check.Finding, *Refusal) {
	u := newUnits(s)
	var notes []check.Finding
	var wanted [][]host.PCIAddress // per VM, the devices asked for
	var pairsOf [][]Pair
	npairs := 0
	if len(req.Groups) > 0 {
		for _, g := range req.Groups {
			addrs, _ := parseGroup(g) // validated by CheckGroups
			wanted = append(wanted, addrs)
			pairsOf = append(pairsOf, pairsWithin(s, addrs))
		}
	} else {
		pairs := pairGPUs(s, t)
		if len(pairs) == 0 {
			for _, n := range nics(s) {
				pairs = append(pairs, Pair{NIC: n.dev.Address, RDMA: n.rdma})
			}
		}
		if len(pairs) == 0 {
			return nil, nil, refuse(nil, planDevices, s.Hostname, "%s has no GPU and no RDMA NIC to pass through", s.Hostname)
		}
		if len(pairs)%req.VMs != 0 {
			n := nearestDivisor(len(pairs), req.VMs)
			near := req
			near.VMs = n
			return nil, nil, refuse(&near, planVMs, s.Hostname,
				"%d GPU+NIC pairs cannot be split evenly over %d VMs (nearest: %d VMs of %d pairs)", len(pairs), req.VMs, n, len(pairs)/n)
		}
		// Pairs of one socket and one switch stay together: sort by GPU
		// node, then switch, then address, and cut into equal runs.
		slices.SortStableFunc(pairs, func(a, b Pair) int {
			da, db := pairDev(s, a), pairDev(s, b)
			return cmp.Or(cmp.Compare(t.pkgOf(da.LocalityNUMANode), t.pkgOf(db.LocalityNUMANode)),
				cmp.Compare(da.LocalityNUMANode, db.LocalityNUMANode), da.Switch.Compare(db.Switch), da.Address.Compare(db.Address))
		})
		npairs = len(pairs)
		per := len(pairs) / req.VMs
		for i := range req.VMs {
			chunk := pairs[i*per : (i+1)*per]
			var addrs []host.PCIAddress
			for _, p := range chunk {
				for _, a := range []host.PCIAddress{p.GPU, p.NIC} {
					if a.IsValid() {
						addrs = append(addrs, a)
					}
				}
			}
			wanted = append(wanted, addrs)
			pairsOf = append(pairsOf, slices.Clone(chunk))
		}
	}

	// Storage under a VM's PCIe switches goes with it (seed 004: S0-S5 with
	// G0-G3), and on an NVSwitch board a VM holding every GPU takes the
	// NVSwitches (full passthrough: Fabric Manager runs in the guest).
	cameWith := map[host.PCIAddress]string{}
	for i, addrs := range wanted {
		wanted[i] = append(addrs, companions(s, req, addrs, cameWith, &notes)...)
	}

	owner := map[host.PCIAddress]int{} // unit root → VM
	var out []vmDevices
	for i, addrs := range wanted {
		var vd vmDevices
		vd.pairs = pairsOf[i]
		seen := map[host.PCIAddress]bool{}
		for _, a := range addrs {
			d := s.PCI(a)
			if d == nil {
				continue // validated by the caller for explicit groups
			}
			if d.IOMMUGroup == nil {
				return nil, nil, refuse(nil, planIOMMU, a.String(),
					"%s is in no IOMMU group: the IOMMU is off (add intel_iommu=on or amd_iommu=on and iommu=pt, reboot)", a)
			}
			root := u.find(a)
			if o, ok := owner[root]; ok && o != i {
				near := req
				if len(req.Groups) > 0 {
					near.Groups = mergeGroups(req.Groups, o, i)
				} else {
					near.VMs = largestDivisorBelow(npairs, req.VMs)
				}
				return nil, nil, refuse(&near, planIOMMUSplit, a.String(),
					"%s is in one unit with %s (%s) but they were asked for two VMs; VFIO assigns a whole IOMMU group to one VM",
					a, host.JoinPCI(u.members(a), ", "), u.whyOf(a))
			}
			owner[root] = i
			for _, m := range u.members(a) {
				if seen[m] {
					continue
				}
				if bd := s.BootDisk; bd != nil && bd.PCI.IsValid() && bd.PCI == m {
					return nil, nil, refuse(nil, planStorageBoot, m.String(),
						"%s holds the disk the hypervisor boots from (%s on /, %s), and it shares a unit with %s (%s): a boot drive cannot be shared with a VM (seed 004)",
						m, bd.Device, bd.Disk, a, u.whyOf(a))
				}
				seen[m] = true
				dev := describe(s, m, slices.Contains(addrs, m) && cameWith[m] == "", u)
				if w, ok := cameWith[m]; ok {
					dev.Why = w
				}
				vd.devices = append(vd.devices, dev)
			}
		}
		slices.SortFunc(vd.devices, func(a, b Device) int { return a.Address.Compare(b.Address) })
		nodes := map[int]bool{}
		for _, d := range vd.devices {
			if d.Role == "function" || d.Role == "nvswitch" {
				continue
			}
			if d.NUMANode < 0 {
				notes = append(notes, note(planNUMAUnknown, d.Address.String(), "",
					"%s reports numa_node -1: its locality is unknown, so its VM's CPUs are chosen from its other devices' nodes", d.Address))
				continue
			}
			nodes[d.NUMANode] = true
		}
		for n := range nodes {
			vd.nodes = append(vd.nodes, n)
		}
		slices.Sort(vd.nodes)
		out = append(out, vd)
	}
	for i, vd := range out {
		name := fmt.Sprintf("%s%02d", req.NamePrefix, i)
		for _, p := range vd.pairs {
			// The GPU's class is gpudirect's rule, the one doctor and nccl
			// env apply: a GeForce has no GPUDirect RDMA on any path.
			classOK, classWhy := gpudirect.GPUClass(gpuName(s, p.GPU))
			if !classOK {
				f := note(gpudirect.GPUClassEntry, name+" "+p.GPU.String(), "use a data-center or professional GPU for GPUDirect RDMA, or accept staging through host memory", "%s: GPU %s: %s", name, p.GPU, classWhy)
				notes = append(notes, f)
			}
			if !p.NIC.IsValid() {
				notes = append(notes, note(planPairNoNIC, name+" "+p.GPU.String(), "", "GPU %s has no RDMA NIC of its own: GPUDirect RDMA is not possible for it", p.GPU))
				continue
			}
			if host.LevelRank(p.Level) >= host.LevelRank(host.LevelSYS) {
				gn, nn := pairDev(s, p).LocalityNUMANode, nodeOf(s, p.NIC)
				// One message per fact: across sockets GPUDirect RDMA cannot
				// work at all; inside one socket it can, but NCCL will not
				// choose it on a SYS path unless told to.
				why := fmt.Sprintf("both in socket %d: GPUDirect RDMA is possible, but NCCL uses it on a SYS path only with NCCL_NET_GDR_LEVEL=SYS", t.pkgOf(gn))
				fix := "NCCL_NET_GDR_LEVEL=SYS in the guest, or pair devices under one PCIe switch or node"
				if !classOK {
					why = fmt.Sprintf("both in socket %d: the traffic crosses NUMA nodes; no GPUDirect RDMA for this GPU on any path (gpudirect.gpu-class)", t.pkgOf(gn))
					fix = "pair devices under one PCIe switch or node, so staging through host memory stays on one node"
				}
				if t.pkgOf(gn) != t.pkgOf(nn) {
					why = "different sockets: GPUDirect RDMA does not work across sockets, NCCL stages through host memory"
					fix = "--policy restricted keeps each VM inside one socket"
				}
				notes = append(notes, note(planPairSys, name+" "+p.GPU.String()+" ↔ "+p.NIC.String(), fix,
					"%s: GPU %s ↔ NIC %s (%s) path is %s (GPU on node %d, NIC on node %d, %s)",
					name, p.GPU, p.NIC, p.RDMA, p.Level, gn, nn, why))
			}
		}
		if r := checkPolicy(t, req, name, vd); r != nil {
			return nil, nil, r
		}
	}
	return out, notes, nil
}

func (u *units) whyOf(a host.PCIAddress) string {
	for _, m := range u.members(a) {
		if w, ok := u.why[m]; ok {
			return w
		}
	}
	return "one unit"
}

// checkPolicy refuses a VM the policy does not allow, pointing at the
// nearest policy that does.
func checkPolicy(t *topology, req Request, name string, vd vmDevices) *Refusal {
	pkgs := map[int]bool{}
	for _, n := range vd.nodes {
		pkgs[t.pkgOf(n)] = true
	}
	switch {
	case req.Policy == SingleNUMANode && len(vd.nodes) > 1:
		near := req
		near.Policy = Restricted
		if len(pkgs) > 1 {
			near.Policy = BestEffort
		}
		return refuse(&near, planPolicy, name,
			"%s's devices sit on NUMA nodes %s; policy single-numa-node wants one (nearest: --policy %s)", name, joinInts(vd.nodes), near.Policy)
	case req.Policy == Restricted && len(pkgs) > 1:
		near := req
		near.Policy = BestEffort
		return refuse(&near, planPolicy, name,
			"%s's devices span %d sockets (NUMA nodes %s); policy restricted keeps a VM in one socket (nearest: --policy best-effort, or more VMs)", name, len(pkgs), joinInts(vd.nodes))
	}
	return nil
}

func describe(s *host.Snapshot, addr host.PCIAddress, asked bool, u *units) Device {
	d := s.PCI(addr)
	dev := Device{Address: addr, NUMANode: d.LocalityNUMANode, IOMMUGroup: d.IOMMUGroup, Driver: d.Driver,
		Name: host.DeviceName(d.Vendor, d.Device), Role: "function", Class: d.Class,
		LinkGTps: d.CurrentLinkSpeedGTps, LinkWidth: d.CurrentLinkWidth}
	if dev.Name == "" {
		dev.Name = d.ClassName
	}
	for _, g := range s.GPUs {
		if g.Address == addr {
			dev.Role = "gpu"
		}
	}
	for _, r := range s.RDMADevices {
		if r.PCIAddress == addr {
			dev.Role, dev.RDMA = "nic", r.Name
		}
	}
	switch {
	case dev.Role != "function":
	case host.IsNVSwitch(d):
		dev.Role = "nvswitch"
	case host.IsStorage(d):
		dev.Role = "storage"
	}
	if !asked && dev.Role == "function" {
		dev.Why = u.why[addr]
	}
	if !asked && dev.Role != "function" {
		dev.Why = u.whyOf(addr)
	}
	return dev
}

// pairsWithin pairs the GPUs and NICs of an explicit group with each other.
func pairsWithin(s *host.Snapshot, addrs []host.PCIAddress) []Pair {
	sub := *s
	sub.GPUs = nil
	sub.RDMADevices = nil
	for _, g := range s.GPUs {
		if slices.Contains(addrs, g.Address) {
			sub.GPUs = append(sub.GPUs, g)
		}
	}
	for _, r := range s.RDMADevices {
		if slices.Contains(addrs, r.PCIAddress) {
			sub.RDMADevices = append(sub.RDMADevices, r)
		}
	}
	return pairGPUs(&sub, newTopology(s))
}

// gpuName is the model nvidia-smi or the PCI id table gives a GPU.
func gpuName(s *host.Snapshot, a host.PCIAddress) string {
	for _, g := range s.GPUs {
		if g.Address == a {
			return g.Name
		}
	}
	return ""
}

func pairDev(s *host.Snapshot, p Pair) *host.PCIDevice {
	if p.GPU.IsValid() {
		return s.PCI(p.GPU)
	}
	return s.PCI(p.NIC)
}

func nodeOf(s *host.Snapshot, addr host.PCIAddress) int {
	if d := s.PCI(addr); d != nil {
		return d.LocalityNUMANode
	}
	return -1
}

// nearestDivisor is the divisor of n closest to want (the smaller on a tie).
func nearestDivisor(n, want int) int {
	best := 1
	for d := 1; d <= n; d++ {
		if n%d == 0 && abs(d-want) < abs(best-want) {
			best = d
		}
	}
	return best
}

func largestDivisorBelow(n, below int) int {
	for d := below - 1; d > 1; d-- {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

func mergeGroups(groups [][]string, a, b int) [][]string {
	var out [][]string
	for i, g := range groups {
		switch i {
		case a:
			out = append(out, append(slices.Clone(g), groups[b]...))
		case b:
		default:
			out = append(out, slices.Clone(g))
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "+")
}

// companions are the devices that go with a VM's asked-for ones besides
// their IOMMU groups: storage controllers under the same PCIe switch as
// one of its devices (unless --keep-storage), and the NVSwitches when the
// VM holds every GPU of the baseboard. why records the reason of each.
func companions(s *host.Snapshot, req Request, addrs []host.PCIAddress, why map[host.PCIAddress]string, notes *[]check.Finding) []host.PCIAddress {
	var out []host.PCIAddress
	bd := s.BootDisk
	add := func(a host.PCIAddress, reason string) {
		if !slices.Contains(addrs, a) && !slices.Contains(out, a) {
			out = append(out, a)
			why[a] = reason
		}
	}
	if !req.KeepStorage {
		for _, a := range addrs {
			d := s.PCI(a)
			if d == nil || !d.Switch.IsValid() {
				continue
			}
			for i := range s.PCIDevices {
				o := &s.PCIDevices[i]
				if o.Switch != d.Switch || !host.IsStorage(o) || slices.Contains(out, o.Address) {
					continue
				}
				switch {
				case bd != nil && bd.PCI == o.Address:
					// Seed 004: the hypervisor's boot drive cannot be
					// shared with a VM; it stays home, said once.
					if !slices.ContainsFunc(*notes, func(f check.Finding) bool { return f.Check == planStorageBoot.ID && f.Subject == o.Address.String() }) {
						*notes = append(*notes, note(planStorageBoot, o.Address.String(), "",
							"%s (under the PCIe switch of %s) holds the disk the hypervisor boots from (%s on /): kept on the host, not passed with the switch's other storage", o.Address, a, cmp.Or(bd.Disk, bd.Device)))
					}
				case bd == nil || !bd.PCI.IsValid():
					if !slices.ContainsFunc(*notes, func(f check.Finding) bool { return f.Check == planStorageBoot.ID }) {
						what := "the snapshot does not say which disk / is on"
						if bd != nil {
							what = fmt.Sprintf("/ is on %s, which hangs under no PCI function the snapshot resolves", cmp.Or(bd.Disk, bd.Device))
						}
						f := planStorageBoot.Reporter("").New(check.Unknown, "boot disk", "storage under the GPUs' switches goes to the VMs, but %s: check the hypervisor does not boot from one of them", what)
						f.Fix = []string{"findmnt -no SOURCE / ; readlink -f /sys/class/block/$(lsblk -no PKNAME $(findmnt -no SOURCE /))   # the controller's PCI address", "rdmalab plan vms --keep-storage keeps every drive on the host"}
						*notes = append(*notes, f)
					}
					add(o.Address, fmt.Sprintf("storage under the PCIe switch of %s (%s): GPUDirect Storage stays switch-local; --keep-storage keeps it on the host", a, d.Switch))
				default:
					add(o.Address, fmt.Sprintf("storage under the PCIe switch of %s (%s): GPUDirect Storage stays switch-local; --keep-storage keeps it on the host", a, d.Switch))
				}
			}
		}
	}
	if b := s.Baseboard; b != nil && len(b.GPUs) > 0 {
		all := true
		for _, g := range b.GPUs {
			all = all && slices.Contains(addrs, g)
		}
		if all {
			for _, n := range b.NVSwitches {
				add(n, "every GPU of the "+b.Name+" baseboard is in this VM: full passthrough, Fabric Manager runs in the guest over the NVSwitches")
			}
		}
	}
	return out
}

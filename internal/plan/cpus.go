package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rdmalab/rdmalab/internal/host"
	"k8s.io/utils/cpuset"
)

// core is one physical core: its SMT sibling CPUs, node and package.
type core struct {
	cpus []int
	node int
	pkg  int
}

// topology is the CPU and NUMA layout the planner works with.
type topology struct {
	cores    []core // sorted by first CPU id
	threads  int    // threads per core (1 without SMT)
	pkg      map[int]int
	distance func(a, b int) int
}

func newTopology(s *host.Snapshot) *topology {
	t := &topology{pkg: map[int]int{}, threads: 1}
	seen := map[string]bool{}
	for _, c := range s.CPUs {
		if !c.Online || seen[c.Siblings] {
			continue
		}
		sib, err := cpuset.Parse(c.Siblings)
		if err != nil || sib.Size() == 0 {
			sib = cpuset.New(c.ID)
		}
		seen[c.Siblings] = true
		t.cores = append(t.cores, core{cpus: sib.List(), node: c.NUMANode, pkg: c.Package})
		t.threads = max(t.threads, sib.Size())
		if _, ok := t.pkg[c.NUMANode]; !ok {
			t.pkg[c.NUMANode] = c.Package
		}
	}
	slices.SortFunc(t.cores, func(a, b core) int { return cmp.Compare(a.cpus[0], b.cpus[0]) })
	dist := map[[2]int]int{}
	for _, n := range s.NUMANodes {
		for j, d := range n.Distances {
			if j < len(s.NUMANodes) {
				dist[[2]int{n.ID, s.NUMANodes[j].ID}] = d
			}
		}
	}
	t.distance = func(a, b int) int {
		if d, ok := dist[[2]int{a, b}]; ok {
			return d
		}
		if a == b {
			return 10
		}
		return 255 // unknown sorts last
	}
	return t
}

func (t *topology) pkgOf(node int) int {
	if p, ok := t.pkg[node]; ok {
		return p
	}
	return -1
}

func (t *topology) nodesWithCores() []int {
	var ns []int
	for _, c := range t.cores {
		if !slices.Contains(ns, c.node) {
			ns = append(ns, c.node)
		}
	}
	slices.Sort(ns)
	return ns
}

// placeCPUs gives every VM whole cores from its devices' nodes, after the
// housekeeping cores, and numbers vCPUs so that a guest sibling pair is a
// host sibling pair.
func placeCPUs(p *Plan, t *topology, req Request) *Refusal {
	if req.HousekeepingCores >= len(t.cores) {
		near := req
		near.HousekeepingCores = max(0, len(t.cores)/4)
		return refuse(&near, planCPUsHousekeeping, p.Host, "%d housekeeping cores leave none of the host's %d cores for VMs", req.HousekeepingCores, len(t.cores))
	}
	pl := &cpuPlacement{p: p, t: t, req: req}
	pl.keepHousekeeping()
	pl.defaultNUMANodes()
	pl.shareNodes()
	if r := pl.coresPerVM(); r != nil {
		return r
	}
	if r := pl.checkShares(); r != nil {
		return r
	}
	var isolated []int
	for i := range p.VMs {
		pl.pinVM(i)
		isolated = append(isolated, p.VMs[i].Pins...)
	}
	pl.accountCPUs(isolated)
	return nil
}

// cpuPlacement is the state of one placeCPUs run, filled step by step.
type cpuPlacement struct {
	p   *Plan
	t   *topology
	req Request

	hk     map[int]bool // housekeeping cores, by index in t.cores
	hkCPUs []int
	// share[vm][node] are the cores a VM may take on a node.
	share []map[int][]int
	want  int // cores per VM; 0 = all of its share
}

// keepHousekeeping picks the housekeeping cores. Seed 000's host keeps
// whole cores on the edges: the first ones (where boot CPU 0 lives) and
// the last ones, so the VMs in between stay equal.
func (pl *cpuPlacement) keepHousekeeping() {
	t, n := pl.t, pl.req.HousekeepingCores
	pl.hk = map[int]bool{}
	lo := (n + 1) / 2
	for i := range lo {
		pl.hk[i] = true
	}
	for i := range n - lo {
		pl.hk[len(t.cores)-1-i] = true
	}
	for i := range t.cores {
		if pl.hk[i] {
			pl.hkCPUs = append(pl.hkCPUs, t.cores[i].cpus...)
		}
	}
	pl.p.HousekeepingCPUs = cpuset.New(pl.hkCPUs...).String()
	pl.p.SMT = t.threads > 1
}

// defaultNUMANodes lets a VM none of whose devices has a known node take
// CPUs from any node, and says so.
func (pl *cpuPlacement) defaultNUMANodes() {
	p := pl.p
	for i := range p.VMs {
		if len(p.VMs[i].NUMANodes) == 0 {
			p.VMs[i].NUMANodes = pl.t.nodesWithCores()
			p.Notes = append(p.Notes, note(planNUMAUnknown, p.VMs[i].Name, "",
				"%s: no device has a known NUMA node, so its CPUs may come from any node", p.VMs[i].Name))
		}
	}
}

// shareNodes splits each node's free cores evenly between the VMs whose
// devices sit there.
func (pl *cpuPlacement) shareNodes() {
	p, t := pl.p, pl.t
	pl.share = make([]map[int][]int, len(p.VMs))
	for i := range pl.share {
		pl.share[i] = map[int][]int{}
	}
	for _, n := range t.nodesWithCores() {
		var free []int
		for i, c := range t.cores {
			if c.node == n && !pl.hk[i] {
				free = append(free, i)
			}
		}
		var users []int
		for i, vm := range p.VMs {
			if slices.Contains(vm.NUMANodes, n) {
				users = append(users, i)
			}
		}
		if len(users) == 0 {
			continue
		}
		per := len(free) / len(users)
		for j, vi := range users {
			pl.share[vi][n] = free[j*per : (j+1)*per]
		}
	}
}

// coresPerVM turns the vCPUs asked into whole cores per VM, refusing a
// count that is not whole cores.
func (pl *cpuPlacement) coresPerVM() *Refusal {
	req, t := pl.req, pl.t
	if req.VCPUs <= 0 {
		return nil
	}
	if req.VCPUs%t.threads != 0 {
		near := req
		near.VCPUs = max(t.threads, req.VCPUs/t.threads*t.threads)
		return refuse(&near, planCPUsWholeCores, pl.p.Host,
			"%d vCPUs is not a whole number of %d-thread cores; VMs get whole cores only (nearest: %d vCPUs)", req.VCPUs, t.threads, near.VCPUs)
	}
	pl.want = req.VCPUs / t.threads
	return nil
}

// checkShares refuses when a VM's share has no core, or fewer than
// asked, naming the nearest request that fits.
func (pl *cpuPlacement) checkShares() *Refusal {
	p, t, req := pl.p, pl.t, pl.req
	most := -1
	for i := range p.VMs {
		have := 0
		for _, cs := range pl.share[i] {
			have += len(cs)
		}
		if most < 0 || have < most {
			most = have
		}
		if have == 0 || (pl.want > 0 && pl.want > have) {
			near := req
			if have > 0 {
				near.VCPUs = most * t.threads
			} else {
				near.HousekeepingCores = max(0, req.HousekeepingCores-2)
				if near.HousekeepingCores == req.HousekeepingCores {
					return refuse(nil, planCPUs, p.VMs[i].Name, "%s: no free core on NUMA nodes %s", p.VMs[i].Name, joinInts(p.VMs[i].NUMANodes))
				}
			}
			return refuse(&near, planCPUs, p.VMs[i].Name,
				"%s: %d vCPUs asked, but NUMA nodes %s have %d free whole cores for it (%d vCPUs)",
				p.VMs[i].Name, req.VCPUs, joinInts(p.VMs[i].NUMANodes), have, have*t.threads)
		}
	}
	return nil
}

// coresToTake says how many cores VM i takes on each of its nodes.
func (pl *cpuPlacement) coresToTake(i int) map[int]int {
	take := map[int]int{}
	if pl.want == 0 {
		for n, cs := range pl.share[i] {
			take[n] = len(cs)
		}
		return take
	}
	// Spread the cores over the VM's nodes one at a time, so the guest
	// cells stay as even as the host allows.
	for left := pl.want; left > 0; {
		for _, n := range pl.p.VMs[i].NUMANodes {
			if left > 0 && take[n] < len(pl.share[i][n]) {
				take[n]++
				left--
			}
		}
	}
	return take
}

// pinVM pins VM i's vCPUs to its cores, one guest cell per host node,
// and sets its guest topology and emulator CPUs.
func (pl *cpuPlacement) pinVM(i int) {
	t, vm := pl.t, &pl.p.VMs[i]
	take := pl.coresToTake(i)
	vm.Threads = t.threads
	for _, n := range vm.NUMANodes {
		if take[n] == 0 {
			continue
		}
		first := len(vm.Pins)
		var host []int
		for _, ci := range pl.share[i][n][:take[n]] {
			vm.Pins = append(vm.Pins, t.cores[ci].cpus...)
			host = append(host, t.cores[ci].cpus...)
		}
		vm.Cells = append(vm.Cells, Cell{ID: len(vm.Cells), HostNode: n, HostCPUs: cpuset.New(host...).String(),
			VCPUs: fmt.Sprintf("%d-%d", first, len(vm.Pins)-1), Cores: take[n]})
	}
	vm.VCPUs = len(vm.Pins)
	for ci := range vm.Cells {
		for _, o := range vm.Cells {
			vm.Cells[ci].Distances = append(vm.Cells[ci].Distances, t.distance(vm.Cells[ci].HostNode, o.HostNode))
		}
	}
	vm.Sockets, vm.CoresPerSkt = len(vm.Cells), vm.Cells[0].Cores
	for _, c := range vm.Cells {
		if c.Cores != vm.Cells[0].Cores {
			// libvirt wants sockets×cores×threads = vCPUs; uneven cells get
			// one socket so that no guest socket straddles two cells.
			vm.Sockets, vm.CoresPerSkt = 1, vm.VCPUs/t.threads
			break
		}
	}
	pl.placeEmulator(vm)
}

// placeEmulator puts a VM's emulator threads on the housekeeping cores of
// its nodes, else any housekeeping core, else its own vCPUs' CPUs.
func (pl *cpuPlacement) placeEmulator(vm *VM) {
	t := pl.t
	var emu []int
	for ci := range t.cores {
		if pl.hk[ci] && slices.Contains(vm.NUMANodes, t.cores[ci].node) {
			emu = append(emu, t.cores[ci].cpus...)
		}
	}
	if len(emu) == 0 {
		emu = pl.hkCPUs
	}
	if len(emu) == 0 {
		emu = vm.Pins
		pl.p.Notes = append(pl.p.Notes, note(planCPUsEmulator, vm.Name, "--housekeeping-cores 2",
			"%s: no housekeeping cores, so its emulator threads share its vCPUs' CPUs", vm.Name))
	}
	vm.EmulatorCPUs = cpuset.New(emu...).String()
}

// accountCPUs records the isolated (VM) CPUs, the ones nobody uses, the
// per-node map of uses, and a host without SMT.
func (pl *cpuPlacement) accountCPUs(isolated []int) {
	p, t := pl.p, pl.t
	p.IsolatedCPUs = cpuset.New(isolated...).String()
	var unused []int
	used := cpuset.New(append(slices.Clone(isolated), pl.hkCPUs...)...)
	for _, c := range t.cores {
		for _, id := range c.cpus {
			if !used.Contains(id) {
				unused = append(unused, id)
			}
		}
	}
	p.UnusedCPUs = cpuset.New(unused...).String()
	p.CPUMap = cpuMap(p, t, pl.hk)
	if !p.SMT {
		p.Notes = append(p.Notes, note(planCPUsNoSMT, p.Host, "", "the host has no SMT (or it is off): guests get threads=1"))
	}
}

// cpuMap lists, node by node in CPU order, consecutive cores with one use.
func cpuMap(p *Plan, t *topology, hk map[int]bool) []CPUUse {
	owner := map[int]string{}
	for _, vm := range p.VMs {
		for _, c := range vm.Pins {
			owner[c] = vm.Name
		}
	}
	var out []CPUUse
	for _, n := range t.nodesWithCores() {
		var cur *CPUUse
		var cpus []int
		flush := func() {
			if cur != nil {
				cur.CPUs = cpuset.New(cpus...).String()
				out = append(out, *cur)
			}
		}
		for i, c := range t.cores {
			if c.node != n {
				continue
			}
			use := "unused"
			switch {
			case hk[i]:
				use = "host"
			case owner[c.cpus[0]] != "":
				use = owner[c.cpus[0]]
			}
			if cur == nil || cur.Use != use {
				flush()
				cur, cpus = &CPUUse{Node: n, Use: use}, nil
			}
			cur.Cores++
			cpus = append(cpus, c.cpus...)
		}
		flush()
	}
	return out
}

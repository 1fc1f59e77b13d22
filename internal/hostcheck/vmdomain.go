package hostcheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"k8s.io/utils/cpuset"
)

// VMDomain is what the VM placement rules need of a libvirt domain; the
// plan package reads it from domain XML (a saved file or virsh dumpxml).
type VMDomain struct {
	Name   string
	Source string // the file it came from, for evidence
	VCPUs  int
	// VCPUPins maps a vCPU to its host cpuset (vcpupin, or the domain-wide
	// <vcpu cpuset=…> for every vCPU); a vCPU absent here floats.
	VCPUPins    map[int]string
	EmulatorPin string
	// MemoryMode and MemoryNodeset are <numatune><memory>; MemNodes the
	// per-cell memnode nodesets.
	MemoryMode    string
	MemoryNodeset string
	MemNodes      []VMMemNode
	// HugePageBytes is the backing page size (0: not hugepage-backed);
	// HugePages says <hugepages> is present at all.
	HugePages     bool
	HugePageBytes int64
	MemoryBytes   int64
	// HostPCI are the host PCI addresses passed through (hostdevs and
	// <interface type='hostdev'>).
	HostPCI []host.PCIAddress
}

// VMMemNode is one <memnode>.
type VMMemNode struct {
	Cell    int
	Mode    string
	Nodeset string
}

// The VM placement checks of `plan check`, each judged by JudgeDomains.
var (
	vcpuPinnedEntry = check.Entry{ID: "vm.vcpu.pinned", Title: "Every vCPU is pinned to host CPUs",
		Why:    "An unpinned vCPU floats over every host CPU, across NUMA nodes and onto other VMs' cores; seed 000 pins each vCPU 1:1.",
		Source: "seed 000 (vcpupin per vCPU)", Fixes: []string{"virsh vcpupin VM N CPU --config for each vCPU, or rdmalab plan vms"},
		Needs: "the domain's <vcpu> count and <cputune><vcpupin>", UnknownWhen: "never: a domain without pins is reported"}
	vcpuNUMAEntry = check.Entry{ID: "vm.vcpu.numa", Title: "vCPUs on the NUMA nodes of the VM's devices",
		Why:    "Seed 000 measured a VM pinned to nodes remote from its NIC at +29% p99 and +53% p99.9 RDMA latency.",
		Source: "seed 000 (wrong NUMA placement row)", Fixes: []string{"pin the vCPUs to cores of the devices' nodes (rdmalab plan vms)"},
		Needs: "vcpupin cpusets, the host's CPU→node map, the nodes of the hostdevs", UnknownWhen: "the VM passes no device the host knows the node of"}
	memoryNUMAEntry = check.Entry{ID: "vm.memory.numa", Title: "Guest memory strictly on the nodes of the VM's devices",
		Why:    "DMA from a device to memory on another node crosses the socket interconnect; without strict numatune the kernel may place pages anywhere.",
		Source: "seed 000 (numatune --mode strict --nodeset of the device nodes)", Fixes: []string{"virsh numatune VM --mode strict --nodeset NODES --config, with a memnode per cell"},
		Needs: "<numatune> memory and memnode, the nodes of the hostdevs", UnknownWhen: "the VM passes no device the host knows the node of"}
	vmHugePagesEntry = check.Entry{ID: "vm.hugepages", Title: "Guest memory is backed by hugepages",
		Why:    "VFIO pins all guest memory; hugepages cut TLB pressure during DMA and are reserved per node at boot.",
		Source: "seed 000 (1 GiB pages, 32 per VM)", Fixes: []string{"<memoryBacking><hugepages><page size='1' unit='GiB'/></hugepages></memoryBacking>"},
		Needs: "<memoryBacking>", UnknownWhen: "never"}
	emulatorEntry = check.Entry{ID: "vm.emulator.isolated", Title: "Emulator threads are pinned off the vCPUs' isolated CPUs",
		Why:    "QEMU's emulator and I/O threads on a vCPU's core steal its time; they belong on the host's housekeeping cores.",
		Source: "../shared/docs/VM-PLANNING.md rule 7", Fixes: []string{"virsh emulatorpin VM HOUSEKEEPING-CPUS --config"},
		Needs: "<emulatorpin>, the host's isolated CPUs (or else every judged VM's vCPU pins)", UnknownWhen: "never"}
	vcpuIsolatedEntry = check.Entry{ID: "vm.vcpu.isolated", Title: "The host CPUs behind pinned vCPUs are isolated from the host's own work",
		Why:    "Pinning keeps a vCPU on its cores, but without isolcpus/nohz_full the host scheduler still runs its processes, ticks and RCU callbacks there. Seed 000 measured, under host load, TCP down 67% with retransmits and RDMA p99.9 latency up 45% without isolation, and no loss with it.",
		Source: "seed 000 (isolcpus/nohz_full/rcu_nocbs on the kernel line; the contention test)", Fixes: []string{"isolate the vCPUs' CPUs on the kernel line (isolcpus=, nohz_full=, rcu_nocbs= with the same whole-core set), keeping housekeeping CPUs for the host, then reboot"},
		Needs: "the vcpupin cpusets and the host's isolated and nohz_full CPUs (/sys/devices/system/cpu/isolated, nohz_full)", UnknownWhen: "never: a VM with no pinned vCPU is vm.vcpu.pinned's finding"}
	cpuSharedEntry = check.Entry{ID: "vm.cpu.shared", Title: "No host CPU is pinned to vCPUs of two VMs",
		Why:    "Two vCPUs on one host CPU take turns; one VM's load becomes the other's latency.",
		Source: "../shared/docs/VM-PLANNING.md rule 7", Fixes: []string{"give each VM its own whole cores (rdmalab plan vms)"},
		Needs: "the vcpupin cpusets of every domain judged together", UnknownWhen: "never"}
	deviceLocalEntry = check.Entry{ID: "vm.device.local", Title: "Each passed device is on this host and local to the VM's CPUs or memory",
		Why:    "A device on a node where the VM has neither vCPUs nor memory does every DMA and interrupt across the interconnect.",
		Source: "seed 004 (select devices on the VM's socket / NUMA node)", Fixes: []string{"move the device to a VM on its node, or the VM to the device's node"},
		Needs: "hostdev source addresses, the host's PCI devices and their nodes", UnknownWhen: "the device reports numa_node -1"}
)

// DomainCatalog lists the VM placement checks of `plan check`.
var DomainCatalog = []check.Entry{vcpuPinnedEntry, vcpuNUMAEntry, memoryNUMAEntry, vmHugePagesEntry, emulatorEntry, vcpuIsolatedEntry, cpuSharedEntry, deviceLocalEntry}

// JudgeDomains judges libvirt domains against the host they run on: one
// finding per VM and rule at most (the cross-VM rule per CPU pair), and
// nothing for a domain placed as the rules want.
func JudgeDomains(s *host.Snapshot, doms []VMDomain) []check.Finding {
	nodeOfCPU := map[int]int{}
	for _, c := range s.CPUs {
		nodeOfCPU[c.ID] = c.NUMANode
	}
	isolated, isoSource := cpuset.New(), ""
	if iso, err := cpuset.Parse(s.Kernel.Isolation.Isolated); err == nil && iso.Size() > 0 {
		isolated, isoSource = iso, readAt(s, s.Kernel.Isolation.Sources, "isolated")
	}
	// hostIsolated is what the host really keeps its own work off:
	// isolcpus, or nohz_full where isolcpus is not set.
	hostIsolated, hostIsoSource := isolated, isoSource
	if hostIsolated.Size() == 0 {
		if nz, err := cpuset.Parse(s.Kernel.Isolation.NohzFull); err == nil && nz.Size() > 0 {
			hostIsolated, hostIsoSource = nz, readAt(s, s.Kernel.Isolation.Sources, "nohz_full")
		}
	}
	allPinned := cpuset.New()
	for _, d := range doms {
		allPinned = allPinned.Union(pinnedCPUs(d))
	}
	if isoSource == "" {
		for _, d := range doms {
			isolated = isolated.Union(pinnedCPUs(d))
		}
		isoSource = "the vCPU pins of the domains judged (the host isolates none)"
	}
	// housekeeping are the host CPUs the emulator threads belong on: those
	// neither isolated nor behind a judged vCPU.
	allCPUs := cpuset.New()
	for _, c := range s.CPUs {
		allCPUs = allCPUs.Union(cpuset.New(c.ID))
	}
	housekeeping := allCPUs.Difference(isolated).Difference(allPinned)
	var (
		pinned, vcpuNUMA, memNUMA = vcpuPinnedEntry.Reporter(s.Hostname), vcpuNUMAEntry.Reporter(s.Hostname), memoryNUMAEntry.Reporter(s.Hostname)
		huge, emulator, vcpuIso   = vmHugePagesEntry.Reporter(s.Hostname), emulatorEntry.Reporter(s.Hostname), vcpuIsolatedEntry.Reporter(s.Hostname)
		shared, local             = cpuSharedEntry.Reporter(s.Hostname), deviceLocalEntry.Reporter(s.Hostname)
		perDomain                 = []*check.Reporter{pinned, vcpuNUMA, memNUMA, huge, emulator, vcpuIso, local}
	)
	for _, d := range doms {
		judged := map[*check.Reporter]bool{}
		domainEv := check.Evidence{What: "domain", Value: d.Name, Source: d.Source}
		find := func(rep *check.Reporter, out check.Outcome, format string, a ...any) *check.Finding {
			judged[rep] = true
			f := rep.Report(out, d.Name, format, a...)
			f.Evidence = []check.Evidence{domainEv}
			return f
		}
		devNodes, devDesc, unknown := deviceNodes(s, d)
		for _, a := range unknown {
			f := find(local, check.Fail, "hostdev %s is not a PCI device of %s", a, s.Hostname)
			f.Fix = []string{fmt.Sprintf("lspci -s %s on %s, and virsh dumpxml %s | grep -A4 '<hostdev': is this the domain of another host, or did the card move?", a, s.Hostname, d.Name)}
		}
		// devCPUs are the host CPUs of the devices' nodes, where its vCPUs belong.
		devCPUs := cpuset.New()
		for c, n := range nodeOfCPU {
			if devNodes[n] {
				devCPUs = devCPUs.Union(cpuset.New(c))
			}
		}

		// vCPUs.
		var floating []int
		for v := range d.VCPUs {
			if _, ok := d.VCPUPins[v]; !ok {
				floating = append(floating, v)
			}
		}
		if len(floating) > 0 {
			f := find(pinned, check.Fail, "%d of %d vCPUs are not pinned (vCPUs %s float over every host CPU)",
				len(floating), d.VCPUs, cpuset.New(floating...).String())
			where := "host CPUs of its own whole cores"
			if devCPUs.Size() > 0 {
				where = fmt.Sprintf("CPUs of node %s, where its devices are (%s)", setString(devNodes), devCPUs.String())
			}
			f.Fix = []string{fmt.Sprintf("virsh vcpupin %s VCPU HOSTCPU --config for each of vCPUs %s, one host CPU each on %s; or rdmalab plan vms", d.Name, cpuset.New(floating...).String(), where)}
		}
		cpus := pinnedCPUs(d)
		if shared := cpus.Difference(hostIsolated); shared.Size() > 0 {
			how := fmt.Sprintf("the host isolates only %s", hostIsolated.String())
			if hostIsolated.Size() == 0 {
				how = "the host isolates no CPU (no isolcpus, no nohz_full)"
			}
			f := find(vcpuIso, check.Fail, "vCPUs pinned to host CPUs %s, which the host scheduler also runs its own work on (%s): seed 000 measured TCP −67%% and RDMA p99.9 latency +45%% under host load without isolation", shared.String(), how)
			want := hostIsolated.Union(allPinned).String()
			f.Fix = []string{fmt.Sprintf("add isolcpus=%s nohz_full=%s rcu_nocbs=%s to the kernel line (whole cores; the rest stay housekeeping), then reboot", want, want, want)}
			f.Evidence = append(f.Evidence, check.Evidence{What: "isolated CPUs", Value: cmp.Or(hostIsolated.String(), "none"), Source: cmp.Or(hostIsoSource, "/sys/devices/system/cpu/isolated, nohz_full")})
		}
		cpuNodes := map[int]bool{}
		for _, c := range cpus.List() {
			if n, ok := nodeOfCPU[c]; ok {
				cpuNodes[n] = true
			}
		}
		if len(devNodes) > 0 && cpus.Size() > 0 {
			var off []int
			for _, c := range cpus.List() {
				if n, ok := nodeOfCPU[c]; ok && !devNodes[n] {
					off = append(off, c)
				}
			}
			if len(off) > 0 {
				f := find(vcpuNUMA, check.Fail, "vCPUs pinned to CPUs %s on node %s, but its devices are on node %s (%s)",
					cpuset.New(off...).String(), nodesOfCPUs(off, nodeOfCPU), setString(devNodes), devDesc)
				f.Fix = []string{fmt.Sprintf("virsh vcpupin %s VCPU HOSTCPU --config to move the vCPUs on CPUs %s onto node %s's CPUs %s (whole cores, not another VM's); or rdmalab plan vms", d.Name, cpuset.New(off...).String(), setString(devNodes), devCPUs.String())}
				f.Evidence = append(f.Evidence, check.Evidence{What: "device nodes", Value: devDesc, Source: "numa_node of each hostdev on " + s.Hostname})
			}
		}

		// Memory.
		memNodes := map[int]bool{}
		switch {
		case d.MemoryNodeset == "" && len(d.MemNodes) == 0:
			where := "it passes no device this host knows the node of"
			if len(devNodes) > 0 {
				where = "its devices are on node " + setString(devNodes)
			}
			f := find(memNUMA, check.Fail, "memory is not bound to any node (no <numatune>): the kernel may place it anywhere; %s", where)
			if nodes := nodeset(devNodes); nodes != "" {
				f.Fix = []string{fmt.Sprintf("virsh numatune %s --mode strict --nodeset %s --config (and a <memnode> per guest cell)", d.Name, nodes)}
			} else if nodes := nodeset(cpuNodes); nodes != "" {
				f.Fix = []string{fmt.Sprintf("virsh numatune %s --mode strict --nodeset %s --config   # the nodes of its vCPUs: no passed device's node is known", d.Name, nodes)}
			}
		default:
			sets := []string{d.MemoryNodeset}
			modes := []string{d.MemoryMode}
			for _, m := range d.MemNodes {
				sets, modes = append(sets, m.Nodeset), append(modes, m.Mode)
			}
			var off []int
			for _, ns := range sets {
				set, err := cpuset.Parse(ns)
				if err != nil {
					continue
				}
				for _, n := range set.List() {
					memNodes[n] = true
					if len(devNodes) > 0 && !devNodes[n] && !slices.Contains(off, n) {
						off = append(off, n)
					}
				}
			}
			notStrict := ""
			for _, m := range modes {
				if m != "" && m != "strict" {
					notStrict = m
				}
			}
			switch {
			case len(off) > 0:
				slices.Sort(off)
				f := find(memNUMA, check.Fail, "memory on node %s (numatune nodeset %s), but its devices are on node %s (%s)",
					joinNodes(off), d.MemoryNodeset, setString(devNodes), devDesc)
				f.Fix = []string{fmt.Sprintf("virsh numatune %s --mode strict --nodeset %s --config (and the <memnode> nodesets of its cells)", d.Name, nodeset(devNodes))}
			case notStrict != "":
				f := find(memNUMA, check.Warn, "numatune mode %s, not strict: memory may spill to other nodes when its own run short", notStrict)
				f.Fix = []string{fmt.Sprintf("virsh numatune %s --mode strict --config (and mode='strict' on each <memnode>)", d.Name)}
			}
		}
		if !d.HugePages {
			f := find(huge, check.Warn, "%s of guest memory is not backed by hugepages", humanBytes(d.MemoryBytes))
			f.Fix = []string{fmt.Sprintf("virsh edit %s: add %s (with the pages reserved on its nodes at boot)", d.Name, strings.Join(vmHugePagesEntry.Fixes, " "))}
		}

		// Emulator threads.
		if d.EmulatorPin == "" {
			find(emulator, check.Warn, "emulator threads are not pinned: they run on any host CPU, the vCPUs' included").Fix = emulatorFix(d, housekeeping)
		} else if em, err := cpuset.Parse(d.EmulatorPin); err == nil {
			if both := em.Intersection(isolated); both.Size() > 0 {
				f := find(emulator, check.Fail, "emulator threads pinned to %s, which includes CPUs %s that back vCPUs", d.EmulatorPin, both.String())
				f.Fix = emulatorFix(d, housekeeping)
				f.Evidence = append(f.Evidence, check.Evidence{What: "isolated CPUs", Value: isolated.String(), Source: isoSource})
			}
		}

		// Devices on nodes where the VM has neither vCPUs nor memory.
		for _, a := range d.HostPCI {
			p := s.PCI(a)
			if p == nil || p.LocalityNUMANode < 0 {
				continue
			}
			if n := p.LocalityNUMANode; !cpuNodes[n] && !memNodes[n] && (len(cpuNodes) > 0 || len(memNodes) > 0) {
				f := find(local, check.Fail, "device %s is on node %d, where the VM has no vCPUs (nodes %s) and no memory (nodes %s)",
					a, n, setString(cpuNodes), setString(memNodes))
				f.Fix = []string{fmt.Sprintf("give %s to a VM on node %d, or move %s to node %d: virsh vcpupin and virsh numatune --nodeset %d (rdmalab plan vms)", a, n, d.Name, n, n)}
			}
		}
		// What this domain was judged on and passed is counted, so a
		// clean domain is proven, not silent.
		for _, rep := range perDomain {
			if !judged[rep] {
				rep.Pass(d.Name, "%s", rep.Entry().Title).Evidence = []check.Evidence{domainEv}
			}
		}
	}

	// One host CPU behind two VMs.
	for i := range doms {
		for j := i + 1; j < len(doms); j++ {
			if both := pinnedCPUs(doms[i]).Intersection(pinnedCPUs(doms[j])); both.Size() > 0 {
				f := shared.Fail(doms[i].Name+" + "+doms[j].Name, "host CPUs %s are pinned to vCPUs of both %s and %s", both.String(), doms[i].Name, doms[j].Name)
				f.Evidence = []check.Evidence{{What: "domain", Value: doms[i].Name, Source: doms[i].Source},
					{What: "domain", Value: doms[j].Name, Source: doms[j].Source}}
			}
		}
	}
	var fs []check.Finding
	for _, rep := range append(perDomain, shared) {
		fs = append(fs, rep.Findings()...)
	}
	check.Sort(fs)
	return fs
}

// emulatorFix pins a domain's emulator threads to the housekeeping CPUs.
func emulatorFix(d VMDomain, housekeeping cpuset.CPUSet) []string {
	if housekeeping.Size() == 0 {
		return []string{fmt.Sprintf("keep whole cores out of isolcpus and the vCPU pins for the host, then virsh emulatorpin %s THOSE-CPUS --config", d.Name)}
	}
	return []string{fmt.Sprintf("virsh emulatorpin %s %s --config   # the host's housekeeping CPUs, off every vCPU", d.Name, housekeeping.String())}
}

// nodeset spells nodes as libvirt's nodeset ("0,2"), "" for none.
func nodeset(m map[int]bool) string {
	var xs []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		xs = append(xs, strconv.Itoa(n))
	}
	return strings.Join(xs, ",")
}

func pinnedCPUs(d VMDomain) cpuset.CPUSet {
	all := cpuset.New()
	for _, p := range d.VCPUPins {
		if c, err := cpuset.Parse(p); err == nil {
			all = all.Union(c)
		}
	}
	return all
}

// deviceNodes are the known nodes of d's passed devices, a description
// ("0000:06:00.0 node 0, 0000:41:00.0 node 2"), and the addresses the host
// does not have.
func deviceNodes(s *host.Snapshot, d VMDomain) (map[int]bool, string, []string) {
	nodes := map[int]bool{}
	var desc, unknown []string
	for _, a := range d.HostPCI {
		p := s.PCI(a)
		if p == nil {
			unknown = append(unknown, a.String())
			continue
		}
		if p.LocalityNUMANode >= 0 {
			nodes[p.LocalityNUMANode] = true
			desc = append(desc, fmt.Sprintf("%s node %d", a, p.LocalityNUMANode))
		}
	}
	return nodes, strings.Join(desc, ", "), unknown
}

func nodesOfCPUs(cpus []int, nodeOf map[int]int) string {
	m := map[int]bool{}
	for _, c := range cpus {
		m[nodeOf[c]] = true
	}
	return setString(m)
}

func setString(m map[int]bool) string {
	var xs []int
	for n := range m {
		xs = append(xs, n)
	}
	slices.Sort(xs)
	return joinNodes(xs)
}

func joinNodes(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "+")
}

func humanBytes(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

package hostcheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// VMHost is the doctor profile of a hypervisor that passes GPUs and NICs
// to VMs (seed 000's lab, seed 004's HGX guide). GPUDirect happens in the
// guests; the host must hand whole, isolated devices over and keep ACS.
const VMHost = "vm-host"

// guestOnly are bare-metal rules whose subject lives in the guests on a
// VM host, so the vm-host profile does not run them.
var guestOnly = map[string]bool{"gpudirect.peermem": true}

// VMHostRules are the vm-host profile's rules, run instead of the
// guest-side ones on a hypervisor (doctor --profile vm-host).
var VMHostRules = []rule{
	{check.Entry{ID: "vmhost.vfio", Title: "GPUs and RDMA NICs meant for VMs are bound to vfio-pci",
		Why:    "A device held by its host driver cannot be passed through; seed 000 binds GPUs, their audio functions and the NIC PFs to vfio-pci.",
		Source: "seed 000 (VFIO device binding)", Fixes: []string{"rdmalab plan vms --dir DIR, then sh DIR/vfio.sh (driverctl, persistent)"},
		Needs: "each GPU's and RDMA-capable NIC function's bound driver", UnknownWhen: "never: an unbound device is reported as such"}, vmhostVFIO},
	{check.Entry{ID: "vmhost.nvidia-driver", Title: "The NVIDIA driver is not loaded on the hypervisor",
		Why:    "Seed 004: do not install the NVIDIA driver on the bare-metal host OS, to prevent resource conflicts; a GPU held by nvidia cannot go to a VM.",
		Source: "seed 004 (additional system setup considerations)", Fixes: []string{"remove the driver packages from the host (or blacklist nvidia, nvidia_drm, nvidia_modeset, nvidia_uvm, nvidia_peermem) and reboot"},
		Needs: "/proc/modules", UnknownWhen: "never"}, vmhostNVIDIA},
	{check.Entry{ID: "vmhost.iommu-group", Title: "Each passed device's IOMMU group holds only devices that go with it",
		Why:    "VFIO assigns a whole IOMMU group to one VM: a group member left on a host driver blocks the VM from starting.",
		Source: "../shared/docs/VM-PLANNING.md rule 1", Fixes: []string{"bind the named group members to vfio-pci and give them to the same VM, or move the card to a slot with its own group"},
		Needs: "iommu_group and driver of every PCI function", UnknownWhen: "never: a device in no group is reported (IOMMU off)"}, vmhostIOMMUGroup},
	{check.Entry{ID: "vmhost.acs", Title: "ACS kept on, peer traffic direct through ATS and Direct Translated P2P",
		Why:    "On a VM host ACS is what splits devices into IOMMU groups; disabling it (or the ACS override patch) merges the groups passthrough relies on. Seed 004 keeps ACS and lets ATS-translated peer requests go direct.",
		Source: "seed 004 (ATS on the NIC, ACS configured to allow ATS; Appendix)", Fixes: []string{"keep ACS", "on each switch downstream port and root port between a GPU and its NIC enable Direct Translated P2P (ACSCtl DirectTrans+), and ATS on the NIC (mlxconfig -d DEV set ATS_ENABLED=true, then reboot)"},
		Needs: "ACSCtl of the bridges above the passed devices (their config space, read by inventory as root), the kernel command line", UnknownWhen: "the snapshot was taken without root (sysfs shows the 64-byte header only: the finding says so) or holds no config space; the bridges are named"}, vmhostACS},
	{check.Entry{ID: "vmhost.hugepages", Title: "Hugepages reserved on each node that holds a passed device",
		Why:    "A VM's memory comes from its devices' nodes in hugepages (strict numatune); a node without pages cannot back its VM.",
		Source: "seed 000 (hugepages=64, 16 per node)", Fixes: []string{"reserve per node on the kernel line: hugepagesz=1G hugepages=N0:C0,N1:C1 (rdmalab plan vms prints it)"},
		Needs: "/sys/devices/system/node/node*/hugepages", UnknownWhen: "a passed device's node is unknown (numa_node -1)"}, vmhostHugepages},
	{check.Entry{ID: "vmhost.isolation", Title: "A host that passes devices to VMs isolates CPUs for their vCPUs",
		Why:    "Without isolcpus/nohz_full the host scheduler runs its own processes, ticks and RCU callbacks on the cores behind the vCPUs, pinned or not. Seed 000 measured, under host load, TCP down 67% and RDMA p99.9 latency up 45% without isolation, and no loss with it.",
		Source: "seed 000 (isolcpus=2-29,34-61 nohz_full rcu_nocbs; the contention test)", Fixes: []string{"isolate the CPUs the vCPUs are pinned to on the kernel line (isolcpus=, nohz_full=, rcu_nocbs= with one whole-core set; rdmalab plan vms prints it), then reboot", "rdmalab plan check DOMAIN.xml… names the vCPUs on housekeeping CPUs"},
		Needs: "/sys/devices/system/cpu/isolated and nohz_full, the devices bound to vfio-pci", UnknownWhen: "never: without a passed device the check does not run"}, vmhostIsolation},
}

// profileEntry is the bare-metal profile's hint that the host is a VM
// host (suggestVMHost).
var profileEntry = check.Entry{ID: "vmhost.profile", Title: "A host that binds devices to vfio-pci is checked as a VM host",
	Why:    "Bare-metal advice (load the NVIDIA driver, disable ACS) is wrong on a hypervisor.",
	Source: "seed 004", Fixes: []string{"rdmalab doctor --profile vm-host"},
	Needs: "each PCI function's bound driver", UnknownWhen: "never"}

// isPassCandidate says whether d is a GPU or an RDMA-capable NIC function
// (NVIDIA GPU classes 03xx, Mellanox/NVIDIA networking 02xx).
func isPassCandidate(s *host.Snapshot, d *host.PCIDevice) (string, bool) {
	for _, g := range s.GPUs {
		if g.Address == d.Address {
			return "GPU", true
		}
	}
	if d.Vendor == "0x15b3" && strings.HasPrefix(d.Class, "0x02") && !d.PhysFn.IsValid() {
		return "NIC", true
	}
	return "", false
}

// suggestVMHost is the bare-metal profile's hint that this is a VM host.
func suggestVMHost(s *host.Snapshot) []check.Finding {
	var bound []string
	for i := range s.PCIDevices {
		if s.PCIDevices[i].Driver == "vfio-pci" {
			bound = append(bound, s.PCIDevices[i].Address.String())
		}
	}
	if len(bound) == 0 {
		return nil
	}
	rep := profileEntry.Reporter(s.Hostname)
	f := rep.Warn("profile", "%d device(s) are bound to vfio-pci: this looks like a VM host, and bare-metal checks give it the wrong advice", len(bound))
	f.Evidence = []check.Evidence{{What: "vfio-pci", Value: strings.Join(bound, " "), Source: "/sys/bus/pci/devices/*/driver"}}
	return rep.Findings()
}

// RunVMHost runs the vm-host profile's rules on one host.
func RunVMHost(s *host.Snapshot) []check.Finding {
	var fs []check.Finding
	for _, r := range VMHostRules {
		fs = append(fs, r.apply(s, Options{Profile: VMHost})...)
	}
	check.Sort(fs)
	return fs
}

// passedDevices are the GPUs and RDMA NIC functions bound to vfio-pci:
// the devices handed to VMs.
func passedDevices(s *host.Snapshot) []*host.PCIDevice {
	var passed []*host.PCIDevice
	for i := range s.PCIDevices {
		d := &s.PCIDevices[i]
		if _, ok := isPassCandidate(s, d); ok && d.Driver == "vfio-pci" {
			passed = append(passed, d)
		}
	}
	return passed
}

func vmhostVFIO(rep *check.Reporter, s *host.Snapshot, o Options) {
	for i := range s.PCIDevices {
		d := &s.PCIDevices[i]
		kind, ok := isPassCandidate(s, d)
		if !ok {
			continue
		}
		switch {
		case d.Driver == "vfio-pci":
			rep.Pass(d.Address.String(), "%s bound to vfio-pci", kind)
		case kind == "GPU":
			f := rep.Fail(d.Address.String(), "GPU on %s, not vfio-pci: it cannot be passed to a VM", driverName(d))
			f.Fix = []string{fmt.Sprintf("driverctl set-override %s vfio-pci   # persistent; or rdmalab plan vms --out DIR, then sh DIR/vfio.sh", d.Address)}
		default:
			rep.Pass(d.Address.String(), "NIC function on %s stays with the host (as seed 000 keeps 41:00.1 and 61:00.1; a VM's NIC would be on vfio-pci)", driverName(d))
		}
	}
}

func vmhostNVIDIA(rep *check.Reporter, s *host.Snapshot, o Options) {
	var nv []string
	for _, m := range s.Kernel.Modules {
		if m.Name == "nvidia" || strings.HasPrefix(m.Name, "nvidia_") {
			nv = append(nv, m.Name)
		}
	}
	if len(nv) == 0 {
		rep.Pass("kernel", "no NVIDIA module loaded on the hypervisor")
		return
	}
	f := rep.Fail("kernel", "NVIDIA driver loaded on the hypervisor (%s): seed 004 says not to install it on the host", strings.Join(nv, ", "))
	f.Evidence = []check.Evidence{{What: "modules", Value: strings.Join(nv, " "), Source: "/proc/modules"}}
}

func vmhostIOMMUGroup(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, d := range passedDevices(s) {
		if d.IOMMUGroup == nil {
			f := rep.Fail(d.Address.String(), "in no IOMMU group: the IOMMU is off, so VFIO cannot pass it (intel_iommu=on or amd_iommu=on, iommu=pt)")
			f.Fix = []string{"grubby --update-kernel=ALL --args='intel_iommu=on iommu=pt' (amd_iommu=on on AMD), enable VT-d/AMD-Vi in the BIOS, then reboot"}
			continue
		}
		var others, addrs []string
		for i := range s.PCIDevices {
			o := &s.PCIDevices[i]
			if o.Address == d.Address || o.IOMMUGroup == nil || *o.IOMMUGroup != *d.IOMMUGroup || o.BridgeRole != "" || host.IsBridgeClass(o.Class) {
				continue
			}
			if o.Driver != "vfio-pci" {
				others = append(others, fmt.Sprintf("%s (%s)", o.Address, driverName(o)))
				addrs = append(addrs, o.Address.String())
			}
		}
		if len(others) == 0 {
			rep.Pass(d.Address.String(), "IOMMU group %d holds nothing left on the host", *d.IOMMUGroup)
			continue
		}
		f := rep.Fail(d.Address.String(), "IOMMU group %d also holds %s, still on the host: the whole group must go to the VM", *d.IOMMUGroup, strings.Join(others, ", "))
		f.Fix = []string{fmt.Sprintf("for d in %s; do driverctl set-override $d vfio-pci; done   # and give them to the VM that gets %s", strings.Join(addrs, " "), d.Address), "or move the card to a slot with its own IOMMU group"}
	}
}

func vmhostACS(rep *check.Reporter, s *host.Snapshot, o Options) {
	// The override patch merges groups; otherwise name the bridges.
	if slices.ContainsFunc(strings.Fields(s.Kernel.Cmdline), func(a string) bool { return strings.HasPrefix(a, "pcie_acs_override") }) {
		f := rep.Fail("kernel", "pcie_acs_override on the command line: IOMMU groups no longer mean isolation, and peer traffic between VMs' devices is possible")
		f.Fix = []string{"remove pcie_acs_override from the kernel line (grubby --update-kernel=ALL --remove-args=pcie_acs_override), then reboot", "keep ACS on; move cards to slots with their own IOMMU groups instead"}
		return
	}
	passed := passedDevices(s)
	if len(passed) == 0 {
		return
	}
	var bridges []host.PCIAddress
	for _, d := range passed {
		for _, b := range d.Parents {
			if !slices.Contains(bridges, b) {
				bridges = append(bridges, b)
			}
		}
	}
	slices.SortFunc(bridges, host.PCIAddress.Compare)
	if bridgesACS(rep, s, bridges) {
		return
	}
	f := rep.Unknown("PCIe bridges", "ACS and ATS are in root-only config space: keep ACS on the %d bridge(s) above the passed devices, with Direct Translated P2P, and ATS on the NICs (not \"disable ACS\": that merges the IOMMU groups)", len(bridges))
	f.Evidence = []check.Evidence{{What: "bridges", Value: host.JoinPCI(bridges, " "), Source: "lspci -vvv (ACSCtl, root only)"}}
	f.Fix = []string{fmt.Sprintf("for b in %s; do lspci -vvv -s $b | grep -E 'ACSCtl|ATSCtl'; done   # want SrcValid+ ... DirectTrans+", host.JoinPCI(bridges, " "))}
	if len(bridges) > 0 {
		if d := s.PCI(bridges[0]); d != nil && d.ConfigBytes > 0 && d.ConfigBytes < 256 {
			f.Message += fmt.Sprintf("; the snapshot saw %d bytes of config space (not root), so ACS was not read: run doctor as root", d.ConfigBytes)
		}
	}
}

// vmhostIsolation: CPU isolation for the VMs' vCPUs.
func vmhostIsolation(rep *check.Reporter, s *host.Snapshot, o Options) {
	passed := passedDevices(s)
	if len(passed) == 0 {
		return
	}
	iso := s.Kernel.Isolation
	e := []check.Evidence{{What: "isolated", Value: cmp.Or(iso.Isolated, "none"), Source: readAt(s, iso.Sources, "isolated")},
		{What: "nohz_full", Value: cmp.Or(iso.NohzFull, "none"), Source: readAt(s, iso.Sources, "nohz_full")}}
	var f *check.Finding
	if iso.Isolated == "" && iso.NohzFull == "" {
		f = rep.Warn("cpus", "%d device(s) passed to VMs, but no host CPU is isolated (no isolcpus, no nohz_full): the vCPUs, pinned or not, share their cores with the host's own work (seed 000 under host load: TCP −67%%, RDMA p99.9 +45%%)", len(passed))
	} else {
		f = rep.Pass("cpus", "CPUs %s isolated for the VMs' vCPUs (plan check says whether each VM is pinned inside them)", cmp.Or(iso.Isolated, iso.NohzFull))
	}
	f.Evidence = e
}

// vmhostHugepages: hugepages on every node holding a passed device.
func vmhostHugepages(rep *check.Reporter, s *host.Snapshot, o Options) {
	nodes := map[int][]string{}
	for _, d := range passedDevices(s) {
		if d.LocalityNUMANode < 0 {
			rep.Unknown(d.Address.String(), "numa_node -1: which node must hold its VM's hugepages is unknown")
			continue
		}
		nodes[d.LocalityNUMANode] = append(nodes[d.LocalityNUMANode], d.Address.String())
	}
	for _, n := range s.NUMANodes {
		devs, ok := nodes[n.ID]
		if !ok {
			continue
		}
		var pages []string
		for _, hp := range n.HugePages {
			if hp.Total > 0 {
				pages = append(pages, fmt.Sprintf("%d×%dM", hp.Total, hp.PageSizeBytes>>20))
			}
		}
		if len(pages) == 0 {
			f := rep.Fail(fmt.Sprintf("node %d", n.ID), "no hugepages reserved on node %d, which holds passed device(s) %s", n.ID, strings.Join(devs, ", "))
			f.Fix = []string{fmt.Sprintf("reserve 1G pages on node %d: at boot hugepagesz=1G hugepages=N per node (rdmalab plan vms prints the kernel line), or now: echo N > /sys/devices/system/node/node%d/hugepages/hugepages-1048576kB/nr_hugepages", n.ID, n.ID)}
		} else {
			rep.Pass(fmt.Sprintf("node %d", n.ID), "node %d has %s hugepages for the VMs of %s", n.ID, strings.Join(pages, ", "), strings.Join(devs, ", "))
		}
	}
}

// bridgesACS judges ACS on the bridges above the passed devices when the
// snapshot read their config space (as root): on a VM host ACS must stay
// on (it is what splits the IOMMU groups), with Direct Translated P2P
// letting ATS-translated peer traffic go direct. It reports nothing and
// returns false when the config space was not read.
func bridgesACS(rep *check.Reporter, s *host.Snapshot, bridges []host.PCIAddress) bool {
	var off, noDirect, good []string
	for _, b := range bridges {
		d := s.PCI(b)
		if d == nil || d.ConfigBytes < 256 {
			return false
		}
		switch {
		case d.ACSCtl == nil:
			continue // no ACS capability on this bridge: nothing to set
		case *d.ACSCtl&host.ACSSrcValid == 0 || *d.ACSCtl&(host.ACSReqRedir|host.ACSCmpltRedir) == 0:
			off = append(off, fmt.Sprintf("%s (ACSCtl %#04x)", b, *d.ACSCtl))
		case *d.ACSCtl&host.ACSDirectTrans == 0:
			noDirect = append(noDirect, fmt.Sprintf("%s (ACSCtl %#04x)", b, *d.ACSCtl))
		default:
			good = append(good, b.String())
		}
	}
	var f *check.Finding
	switch {
	case len(off) > 0:
		f = rep.Fail("PCIe bridges", "ACS is off (no source validation or request redirect) on %s: the IOMMU groups passthrough relies on no longer isolate the VMs' devices", strings.Join(off, ", "))
		f.Fix = []string{"enable ACS on these bridges (BIOS PCIe ACS setting; never the pcie_acs_override patch)"}
	case len(noDirect) > 0:
		f = rep.Warn("PCIe bridges", "ACS on, but Direct Translated P2P off on %s: GPU↔NIC peer traffic goes up to the root complex (seed 004 enables it with ATS on the NIC)", strings.Join(noDirect, ", "))
		f.Fix = []string{"setpci the ACS Control DirectTrans bit on these bridges, and mlxconfig -d NIC set ATS_ENABLED=true on the passed NICs"}
	default:
		f = rep.Pass("PCIe bridges", "ACS on with Direct Translated P2P on the bridges above the passed devices")
	}
	f.Evidence = []check.Evidence{{What: "bridges above the passed devices", Value: host.JoinPCI(bridges, " "), Source: "/sys/bus/pci/devices/*/config (ACS extended capability)"}}
	return true
}

func driverName(d *host.PCIDevice) string {
	if d.Driver == "" {
		return "no driver"
	}
	return d.Driver
}

package hostcheck

// The host tuning rules: PCIe links, kernel modules, peer memory, locked
// memory, IOMMU, hugepages, CPU isolation and governor, NUMA, and the GPUs
// against their baseboard and their NICs.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"k8s.io/utils/cpuset"
)

func pcieDegraded(rep *check.Reporter, s *host.Snapshot, o Options) {
	var addrs []host.PCIAddress
	for _, d := range s.RDMADevices {
		if d.PCIAddress.IsValid() && !slices.Contains(addrs, d.PCIAddress) {
			addrs = append(addrs, d.PCIAddress)
		}
	}
	for _, g := range s.GPUs {
		addrs = append(addrs, g.Address)
	}
	for _, a := range addrs {
		d := s.PCI(a)
		if d == nil {
			continue
		}
		isGPU := host.IsGPUClass(d.Class, d.Vendor)
		gt, w := s.LinkCeiling(d)
		sub := d.Address.String()
		e := []check.Evidence{
			ev("current", linkValue(d.CurrentLinkSpeedGTps, d.CurrentLinkWidth), readAtAll(s, d.Sources, "current_link_speed", "current_link_width")),
			ev("capable", linkValue(gt, w)+" (device and slot)", readAtAll(s, d.Sources, "max_link_speed", "max_link_width")+" and its upstream port"),
		}
		var f *check.Finding
		switch {
		case d.CurrentLinkWidth == 0 || w == 0 || d.CurrentLinkSpeedGTps == 0 || gt == 0:
			f = rep.Unknown(sub, "PCIe link not readable")
		case d.CurrentLinkWidth < w:
			f = rep.Fail(sub, "PCIe link trained at x%d, the device and slot can do x%d", d.CurrentLinkWidth, w)
		case d.CurrentLinkSpeedGTps < gt && isGPU:
			// GPUs drop their link speed when idle; judge them under load.
			f = rep.Warn(sub, "GPU link at Gen%d, capable of Gen%d (normal at idle; check under load)", linkrate.PCIeGen(d.CurrentLinkSpeedGTps), linkrate.PCIeGen(gt))
			f.Fix = []string{fmt.Sprintf("lspci -vv -s %s | grep LnkSta   # while a job runs: Gen%d is right under load", sub, linkrate.PCIeGen(gt))}
		case d.CurrentLinkSpeedGTps < gt:
			f = rep.Fail(sub, "PCIe link at Gen%d, the device and slot can do Gen%d", linkrate.PCIeGen(d.CurrentLinkSpeedGTps), linkrate.PCIeGen(gt))
		default:
			f = rep.Pass(sub, "Gen%d x%d, full width and speed", linkrate.PCIeGen(d.CurrentLinkSpeedGTps), d.CurrentLinkWidth)
		}
		f.Evidence = e
	}
}

// linkValue prints a PCIe link as read; a value not read is "unknown".
func linkValue(gtps float64, width int) string {
	sp, w := "unknown speed", "unknown width"
	if gtps > 0 {
		sp = fmt.Sprintf("%g GT/s", gtps)
	}
	if width > 0 {
		w = fmt.Sprintf("x%d", width)
	}
	if gtps <= 0 && width <= 0 {
		return "unknown"
	}
	return sp + " " + w
}

func rdmaModules(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) == 0 {
		return
	}
	if len(s.Kernel.Modules) == 0 {
		rep.Unknown("kernel", "/proc/modules not read")
		return
	}
	ib := false
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			ib = ib || p.LinkLayer == "InfiniBand"
		}
	}
	need := []string{"ib_uverbs"}
	if ib {
		need = append(need, "ib_umad")
	}
	if o.ExpectIPoIB != "" {
		need = append(need, "ib_ipoib") // IPoIB is expected (--expect-ipoib)
	}
	var missing []string
	for _, m := range need {
		if !s.Kernel.HasModule(m) {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		rep.Pass("kernel", "%s loaded", strings.Join(need, ", "))
		return
	}
	f := rep.Fail("kernel", "RDMA devices present but %s not loaded", strings.Join(missing, ", "))
	f.Evidence = []check.Evidence{ev("missing", strings.Join(missing, " "), "/proc/modules")}
	f.Fix = []string{"modprobe " + strings.Join(missing, " "), fmt.Sprintf("printf '%%s\\n' %s > /etc/modules-load.d/rdma.conf", strings.Join(missing, " "))}
}

func hasNVIDIAGPU(s *host.Snapshot) bool {
	return slices.ContainsFunc(s.GPUs, func(g host.GPU) bool { return g.Vendor == host.VendorNVIDIA && g.Driver == "nvidia" })
}

func peermem(rep *check.Reporter, s *host.Snapshot, o Options) {
	if !hasNVIDIAGPU(s) || len(s.RDMADevices) == 0 {
		return
	}
	gd := s.Kernel.GPUDirect
	switch {
	case gd.PeerMem != "":
		rep.Pass("kernel", "%s loaded", gd.PeerMem)
		return
	case gd.OpenKernelModule:
		rep.Pass("kernel", "no peermem, but the open kernel module allows DMA-BUF (kernel ≥ 5.12, CUDA ≥ 11.7)")
		return
	case len(s.Kernel.Modules) == 0:
		rep.Unknown("kernel", "/proc/modules not read")
		return
	}
	f := rep.Fail("kernel", "NVIDIA GPUs and RDMA NICs, but nvidia-peermem is not loaded: GPUDirect RDMA will stage through host memory")
	f.Evidence = []check.Evidence{ev("nvidia_peermem", "not in /proc/modules", "/proc/modules")}
	f.Fix = []string{"modprobe nvidia-peermem", "echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf", "if it fails to load: install MLNX_OFED/DOCA first, then the NVIDIA driver"}
}

func memlock(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) == 0 {
		return
	}
	ml := s.Kernel.Memlock
	soft, hard := "", ""
	var e []check.Evidence
	for _, rule := range ml.Rules {
		if rule.Domain != "*" && !strings.HasPrefix(rule.Domain, "@") {
			continue
		}
		e = append(e, ev(rule.Domain+" "+rule.Type, rule.Value, fmt.Sprintf("%s:%d", rule.File, rule.Line)))
		switch rule.Type {
		case "soft":
			soft = rule.Value
		case "hard":
			hard = rule.Value
		case "-":
			soft, hard = rule.Value, rule.Value
		}
	}
	sub := "limits"
	switch {
	case soft == "unlimited" && hard == "unlimited":
		f := rep.Pass(sub, "memlock unlimited for all users")
		f.Evidence = e
		return
	case ml.ProcessSoftBytes != nil && *ml.ProcessSoftBytes == -1 && len(ml.Rules) == 0:
		rep.Pass(sub, "this process runs with memlock unlimited")
		return
	case len(ml.Rules) == 0 && len(ml.FilesRead) > 0 && (ml.ProcessSoftBytes == nil || *ml.ProcessSoftBytes >= 0):
		// Read, and silent: the default limit applies to every login.
		f := rep.Fail(sub, "no memlock rule in %s: logins get the default locked-memory limit (8 MiB on kernels ≥ 5.16, 64 KiB before), so RDMA registration of large buffers fails", strings.Join(ml.FilesRead, ", "))
		f.Evidence = []check.Evidence{ev("memlock rules", "none", strings.Join(ml.FilesRead, ", "))}
		if ml.ProcessSoftBytes != nil {
			f.Evidence = append(f.Evidence, ev("process soft limit", strconv.FormatInt(*ml.ProcessSoftBytes, 10)+" bytes", "/proc/self/limits"))
		}
		f.Fix = []string{"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/99-rdma.conf", "systemd services: LimitMEMLOCK=infinity", "log in again"}
		return
	case len(ml.Rules) == 0 && ml.ProcessSoftBytes == nil:
		rep.Unknown(sub, "no limits files and no process limits in the snapshot")
		return
	}
	msg := "memlock is not unlimited"
	if ml.ProcessSoftBytes != nil && *ml.ProcessSoftBytes >= 0 {
		msg += fmt.Sprintf(" (this process: %d KiB)", *ml.ProcessSoftBytes>>10)
		e = append(e, ev("process soft limit", strconv.FormatInt(*ml.ProcessSoftBytes, 10)+" bytes", "/proc/self/limits"))
	}
	f := rep.Fail(sub, "%s: RDMA memory registration will fail for large buffers", msg)
	f.Evidence = e
	f.Fix = []string{"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/99-rdma.conf", "systemd services: LimitMEMLOCK=infinity", "log in again"}
}

func iommuPT(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) == 0 || len(s.Kernel.Params) == 0 {
		return
	}
	io := s.Kernel.IOMMU
	var f *check.Finding
	switch {
	case !io.Present:
		f = rep.Pass("kernel", "IOMMU off: DMA is untranslated")
	case io.Passthrough:
		f = rep.Pass("kernel", "IOMMU on with iommu=pt")
	default:
		f = rep.Warn("kernel", "IOMMU translates DMA for host devices (no iommu=pt): GPU↔NIC peer traffic pays for it")
	}
	f.Evidence = []check.Evidence{ev("iommu groups", strconv.Itoa(io.Groups), "/sys/kernel/iommu_groups"), ev("cmdline", s.Kernel.Cmdline, "/proc/cmdline")}
}

func hugepages(rep *check.Reporter, s *host.Snapshot, o Options) {
	want, ok := s.Kernel.Param("hugepages")
	if !ok {
		return
	}
	n, err := strconv.ParseInt(want, 10, 64)
	if err != nil {
		return // the per-node "0:32,1:32" form is checked by plan
	}
	size := s.Kernel.DefaultHugePageBytes
	if v, ok := s.Kernel.Param("hugepagesz"); ok {
		if b, err := host.ParseSize(v); err == nil {
			size = b
		}
	}
	for _, p := range s.Kernel.HugePages {
		if p.PageSizeBytes != size {
			continue
		}
		e := []check.Evidence{ev("asked", want, "/proc/cmdline"), ev("nr_hugepages", strconv.FormatInt(p.Total, 10), fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", size>>10)), ev("free", strconv.FormatInt(p.Free, 10), "")}
		var f *check.Finding
		if p.Total < n {
			f = rep.Fail("kernel", "asked for %d × %s pages at boot, got %d", n, sizeText(size), p.Total)
			f.Fix = []string{fmt.Sprintf("grep -E 'MemTotal|HugePages_Total' /sys/devices/system/node/node*/meminfo   # hugepages=%d × %s is spread over the nodes: each needs room for its share", n, sizeText(size)),
				fmt.Sprintf("lower hugepages=%d on the kernel line to what fits, or at runtime before memory fragments: echo %d > /sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", n, n, size>>10)}
		} else {
			f = rep.Pass("kernel", "%d × %s pages allocated as asked, %d free", p.Total, sizeText(size), p.Free)
		}
		f.Evidence = e
		return
	}
	f := rep.Fail("kernel", "asked for %s hugepages of %s, but no such pool exists", want, sizeText(size))
	f.Fix = []string{fmt.Sprintf("ls /sys/kernel/mm/hugepages   # the page sizes this CPU supports; give hugepagesz= one of them before hugepages=%s", want)}
}

func sizeText(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%dG", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%dM", b>>20)
	}
	return fmt.Sprintf("%dK", b>>10)
}

func isolationSMT(rep *check.Reporter, s *host.Snapshot, o Options) {
	iso := s.Kernel.Isolation
	isolcpus, _ := s.Kernel.Param("isolcpus")
	if iso.Isolated == "" && iso.NohzFull == "" && isolcpus == "" {
		return
	}
	sets := map[string]string{"isolated": iso.Isolated, "nohz_full": iso.NohzFull, "rcu_nocbs": iso.RCUNoCBs}
	var e []check.Evidence
	var differ []string
	base, _ := cpuset.Parse(iso.Isolated)
	for _, k := range []string{"isolated", "nohz_full", "rcu_nocbs"} {
		e = append(e, ev(k, sets[k], readAt(s, iso.Sources, k)))
		if set, err := cpuset.Parse(sets[k]); err == nil && sets[k] != "" && !set.Equals(base) {
			differ = append(differ, k)
		}
	}
	// Whole cores: every isolated CPU's siblings are isolated too.
	var split []string
	for _, c := range s.CPUs {
		if !base.Contains(c.ID) {
			continue
		}
		sib, err := cpuset.Parse(c.Siblings)
		if err == nil && !sib.IsSubsetOf(base) {
			split = append(split, fmt.Sprintf("cpu%d (siblings %s)", c.ID, c.Siblings))
		}
	}
	switch {
	case len(split) > 0:
		f := rep.Fail("cpus", "isolation splits SMT siblings: %s", strings.Join(firstN(split, 4), ", "))
		f.Evidence = e
	case len(differ) > 0:
		f := rep.Warn("cpus", "%s differ from isolated CPUs %s", strings.Join(differ, ", "), iso.Isolated)
		f.Evidence = e
	default:
		f := rep.Pass("cpus", "isolated %s covers whole cores; nohz_full and rcu_nocbs agree", iso.Isolated)
		f.Evidence = e
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

func governor(rep *check.Reporter, s *host.Snapshot, o Options) {
	count := map[string]int{}
	for _, c := range s.CPUs {
		if c.Governor != "" {
			count[c.Governor]++
		}
	}
	if len(count) == 0 {
		return // no cpufreq (VMs, captures): nothing to judge
	}
	var others []string
	for g, n := range count {
		if g != "performance" {
			others = append(others, fmt.Sprintf("%s on %d CPUs", g, n))
		}
	}
	slices.Sort(others)
	if len(others) == 0 {
		rep.Pass("cpus", "performance on every CPU")
		return
	}
	f := rep.Warn("cpus", "governor is %s", strings.Join(others, ", "))
	f.Evidence = []check.Evidence{ev("scaling_governor", strings.Join(others, ", "), "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")}
}

func numaUnknown(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.NUMANodes) < 2 {
		return
	}
	seen := map[host.PCIAddress]bool{}
	check1 := func(a host.PCIAddress, what string) {
		d := s.PCI(a)
		if d == nil || seen[a] {
			return
		}
		seen[a] = true
		addr := a.String()
		e := []check.Evidence{ev("numa_node", strconv.Itoa(d.NUMANode), readAt(s, d.Sources, "numa_node")), ev("local_cpulist", d.LocalCPUs, readAtAll(s, d.Sources, "local_cpulist", "local_cpus"))}
		var f *check.Finding
		switch d.LocalitySource {
		case "unknown":
			f = rep.Warn(addr, "%s has no known NUMA node", what)
		case "local_cpulist":
			f = rep.Pass(addr, "%s: numa_node is -1, local_cpulist places it on node %d", what, d.LocalityNUMANode)
		default:
			f = rep.Pass(addr, "%s on NUMA node %d", what, d.LocalityNUMANode)
		}
		f.Evidence = e
	}
	for _, d := range s.RDMADevices {
		check1(d.PCIAddress, d.Name)
	}
	for _, g := range s.GPUs {
		check1(g.Address, "GPU")
	}
}

// hgxGPUs is how many GPUs an HGX baseboard with N NVSwitch chips holds.
var hgxGPUs = map[int]int{2: 8, 4: 8, 6: 8, 12: 16}

func gpuBaseboard(rep *check.Reporter, s *host.Snapshot, o Options) {
	b := s.Baseboard
	if b == nil {
		return
	}
	want, ok := hgxGPUs[len(b.NVSwitches)]
	if !ok {
		return
	}
	e := []check.Evidence{ev("GPUs", fmt.Sprintf("%d: %s", len(b.GPUs), host.JoinPCI(b.GPUs, " ")), "PCI functions (vendor 10de, class 03xx)"),
		ev("NVSwitches", fmt.Sprintf("%d: %s", len(b.NVSwitches), host.JoinPCI(b.NVSwitches, " ")), "PCI functions (vendor 10de, class 0680)")}
	if len(b.GPUs) >= want {
		f := rep.Pass("baseboard", "all %d GPUs of the %d-NVSwitch baseboard are on the bus", len(b.GPUs), len(b.NVSwitches))
		f.Evidence = e
		return
	}
	// Where it went missing: a PCIe switch that holds a rail NIC but,
	// unlike the others, no GPU.
	gpuSwitch, nicSwitch := map[host.PCIAddress]bool{}, map[host.PCIAddress]bool{}
	for _, g := range s.GPUs {
		if g.Switch.IsValid() {
			gpuSwitch[g.Switch] = true
		}
	}
	for _, d := range s.RDMADevices {
		if p := s.PCI(d.PCIAddress); p != nil && p.Switch.IsValid() {
			nicSwitch[p.Switch] = true
		}
	}
	var empty []host.PCIAddress
	if len(gpuSwitch) > 0 {
		for sw := range nicSwitch {
			if !gpuSwitch[sw] {
				empty = append(empty, sw)
			}
		}
	}
	slices.SortFunc(empty, host.PCIAddress.Compare)
	where := ""
	if len(empty) > 0 {
		where = fmt.Sprintf("; the PCIe switch %s holds a rail NIC but no GPU, unlike the others: the missing GPU's slot", host.JoinPCI(empty, ", "))
	}
	f := rep.Fail("baseboard", "%d of %d GPUs on the %d-NVSwitch HGX baseboard: %d GPU(s) missing from the bus%s", len(b.GPUs), want, len(b.NVSwitches), want-len(b.GPUs), where)
	f.Evidence = e
}

func gpuNIC(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.GPUs) == 0 || len(s.Affinity) == 0 {
		return
	}
	// host.Rails is the one nearest-NIC answer (gpudirect, nccl env and
	// plan give the same).
	for _, rail := range s.Rails() {
		best, nic := rail.Level, rail.RDMA
		if nic == "" {
			continue
		}
		e := []check.Evidence{ev("nearest NIC", nic+" at "+best, "PCI tree under /sys/devices")}
		var f *check.Finding
		// NCCL's default GDR level (PXB), the rule gpudirect.path applies:
		// doctor reports this finding only where gpudirect.path does not
		// judge the GPU (the vm-host profile, a rail with no active port).
		if host.LevelRank(best) <= host.LevelRank(host.LevelPXB) {
			f = rep.Pass(rail.GPU.String(), "nearest NIC %s is %s: within NCCL's default GPUDirect RDMA level (PXB)", nic, best)
		} else {
			f = rep.Warn(rail.GPU.String(), "nearest NIC %s is %s: beyond NCCL's default GPUDirect RDMA level (PXB), so NCCL stages through host memory", nic, best)
		}
		f.Evidence = e
	}
}

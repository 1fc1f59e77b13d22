package inventory

import (
	"path"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/rdmalab/rdmalab/internal/host"
)

// versionedModules are the modules whose /sys/module/<name>/version tells
// the driver stack apart (inbox modules have none; MLNX_OFED/DOCA and NVIDIA do).
var versionedModules = []string{"mlx5_core", "mlx5_ib", "mlx4_core", "ib_core", "mlx_compat", "ib_uverbs", "rdma_cm", "nvidia", "nvidia_peermem", "nv_peer_mem"}

func (c *collector) kernel() {
	k := &c.snap.Kernel
	k.Release, _ = c.str("kernel", "/proc/sys/kernel/osrelease")
	if s, ok := c.str("kernel", "/proc/cmdline"); ok {
		k.Cmdline = s
		k.Params = host.ParseCmdline(s)
	}
	if k.Params == nil {
		k.Params = []host.KernelParam{}
	}
	if s, ok := c.str("kernel", "/proc/modules"); ok {
		mods, errs := host.ParseModules(s)
		k.Modules = mods
		for _, err := range errs {
			c.fail("kernel", "/proc/modules", err)
		}
	}
	if k.Modules == nil {
		k.Modules = []host.Module{}
	}
	c.meminfo()
	k.HugePages = c.hugePools("hugepages", "/sys/kernel/mm/hugepages")
	c.mounts()
	c.iommu()
	c.memlock()
	c.gpudirect()
	for _, m := range versionedModules {
		if v, ok := c.str("kernel", "/sys/module/"+m+"/version"); ok && v != "" {
			if k.ModuleVersions == nil {
				k.ModuleVersions = map[string]string{}
			}
			k.ModuleVersions[m] = v
		}
	}
}

func (c *collector) meminfo() {
	if !c.fs.Exists("/proc/meminfo") {
		return
	}
	pfs, err := procfs.NewFS(path.Join(c.fs.Root(), "proc"))
	if err != nil {
		c.fail("kernel", "/proc/meminfo", err)
		return
	}
	c.fs.Note("/proc/meminfo")
	mi, err := pfs.Meminfo()
	if err != nil {
		c.fail("kernel", "/proc/meminfo", err)
		return
	}
	if mi.MemTotal != nil {
		c.snap.Kernel.MemTotalBytes = int64(*mi.MemTotal) << 10
	}
	if mi.Hugepagesize != nil {
		c.snap.Kernel.DefaultHugePageBytes = int64(*mi.Hugepagesize) << 10
	}
}

func (c *collector) mounts() {
	for _, p := range []string{"/proc/mounts", "/proc/self/mounts"} {
		s, ok := c.str("kernel", p)
		if !ok {
			continue
		}
		c.bootDisk(p, s)
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || f[2] != "hugetlbfs" {
				continue
			}
			m := host.Mount{Path: f[1]}
			for _, o := range strings.Split(f[3], ",") {
				if v, ok := strings.CutPrefix(o, "pagesize="); ok {
					m.PageSizeBytes, _ = host.ParseSize(v)
				}
			}
			c.snap.Kernel.HugetlbfsMounts = append(c.snap.Kernel.HugetlbfsMounts, m)
		}
		return
	}
}

// bootDisk follows the root file system's device down to its disk and
// the disk's PCI controller: /dev/mapper/x to dm-N, a device-mapper
// device to its slaves (LVM, LUKS), a partition to its disk, and the
// disk's sysfs path to the last PCI function on it. The planner keeps
// that controller on the host (seed 004).
func (c *collector) bootDisk(mountsFile, mounts string) {
	dev := ""
	for _, line := range strings.Split(mounts, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[1] == "/" && strings.HasPrefix(f[0], "/dev/") {
			dev = f[0] // the last mount on / is the one in use
		}
	}
	if dev == "" {
		return
	}
	name := strings.TrimPrefix(dev, "/dev/")
	if rp, err := c.fs.Realpath(dev); err == nil && strings.HasPrefix(rp, "/dev/") {
		name = path.Base(rp) // /dev/mapper/cs-root → dm-0
	} else if strings.Contains(name, "/") {
		name = path.Base(name)
	}
	for range 4 { // dm on dm (LUKS on LVM) is as deep as it goes
		slaves, err := c.fs.ReadDir("/sys/class/block/" + name + "/slaves")
		if err != nil || len(slaves) == 0 {
			break
		}
		name = slaves[0]
	}
	bd := &host.BootDisk{Mount: "/", Device: dev, Disk: name, Source: mountsFile}
	if rp, err := c.fs.Realpath("/sys/class/block/" + name); err == nil {
		bd.Source += ", " + "/sys/class/block/" + name
		parts := strings.Split(rp, "/")
		for i := len(parts) - 1; i >= 0; i-- {
			if a, err := host.ParsePCIAddress(parts[i]); err == nil {
				bd.PCI = a
				break
			}
		}
		// A partition's directory sits inside its disk's.
		if i := len(parts) - 2; i > 0 && c.fs.Exists("/sys/class/block/"+name+"/partition") {
			bd.Disk = parts[i]
		}
	}
	c.snap.BootDisk = bd
}

func (c *collector) iommu() {
	io := &c.snap.Kernel.IOMMU
	io.Groups = len(c.list("iommu", "/sys/kernel/iommu_groups"))
	io.Units = c.list("iommu", "/sys/class/iommu")
	io.Present = io.Groups > 0 || len(io.Units) > 0
	if v, ok := c.snap.Kernel.Param("iommu"); ok {
		io.Passthrough = v == "pt"
	}
}

func (c *collector) memlock() {
	ml := &c.snap.Kernel.Memlock
	files := []string{"/etc/security/limits.conf"}
	for _, n := range c.list("memlock", "/etc/security/limits.d") {
		if strings.HasSuffix(n, ".conf") {
			files = append(files, "/etc/security/limits.d/"+n)
		}
	}
	for _, f := range files {
		s, ok := c.str("memlock", f)
		if !ok {
			continue
		}
		ml.FilesRead = append(ml.FilesRead, f)
		ml.Rules = append(ml.Rules, ParseLimitsMemlock(f, s)...)
	}
	if s, ok := c.str("memlock", "/proc/self/limits"); ok {
		soft, hard, found := parseProcLimitsMemlock(s)
		if found {
			ml.ProcessSoftBytes, ml.ProcessHardBytes = &soft, &hard
		}
	}
}

// ParseLimitsMemlock returns the memlock rules of a limits.conf-format file.
func ParseLimitsMemlock(file, s string) []host.LimitRule {
	var out []host.LimitRule
	for i, line := range strings.Split(s, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) != 4 || f[2] != "memlock" {
			continue
		}
		out = append(out, host.LimitRule{File: file, Line: i + 1, Domain: f[0], Type: f[1], Value: f[3]})
	}
	return out
}

// parseProcLimitsMemlock reads the "Max locked memory" row of
// /proc/<pid>/limits; -1 means unlimited.
func parseProcLimitsMemlock(s string) (soft, hard int64, ok bool) {
	for _, line := range strings.Split(s, "\n") {
		rest, found := strings.CutPrefix(line, "Max locked memory")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return 0, 0, false
		}
		parse := func(v string) (int64, bool) {
			if v == "unlimited" {
				return -1, true
			}
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
		s1, ok1 := parse(f[0])
		h1, ok2 := parse(f[1])
		return s1, h1, ok1 && ok2
	}
	return 0, 0, false
}

func (c *collector) gpudirect() {
	k := &c.snap.Kernel
	switch {
	case k.HasModule("nvidia_peermem") || c.fs.Exists("/sys/module/nvidia_peermem/version"):
		k.GPUDirect.PeerMem = "nvidia_peermem"
	case k.HasModule("nv_peer_mem") || c.fs.Exists("/sys/kernel/mm/memory_peers/nv_mem/version") || c.fs.Exists("/sys/kernel/mm/memory_peers/nv_mem_nc/version"):
		k.GPUDirect.PeerMem = "nv_peer_mem"
	}
	if s, ok := c.str("kernel", "/proc/driver/nvidia/version"); ok {
		first, _, _ := strings.Cut(s, "\n")
		k.NVIDIADriver = strings.TrimSpace(first)
		k.GPUDirect.OpenKernelModule = strings.Contains(s, "Open Kernel Module")
	}
}

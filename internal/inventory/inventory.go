// Package inventory reads a host (live, or a captured tree under --root)
// into a host.Snapshot. It lists first and parses each device on its own, so
// one unreadable device or port is recorded in Snapshot.Errors and never
// blanks the rest.
package inventory

import (
	"cmp"
	"errors"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"k8s.io/utils/cpuset"
)

// Options tune a collection.
type Options struct {
	// Now stamps the snapshot; nil means time.Now. Tests pass a fixed clock.
	Now func() time.Time
	// Recorder, when set, records every path Open reads (for gather).
	Recorder *hostfs.Recorder
	// Tools runs mlnx_qos, dcb, ethtool and ibv_devinfo for RoCE; nil runs them
	// from PATH on a live host and not at all on any other root.
	Tools Tool
}

type collector struct {
	fs    *hostfs.FS
	snap  *host.Snapshot
	tools Tool
	// at, when set, is told each file before it is read (DeviceReader
	// names the file a hung read is stuck on).
	at func(string)
}

// Collect reads the host under fsys into a snapshot. It does not fail: what
// it cannot read is listed in the snapshot's Errors.
func Collect(fsys *hostfs.FS, opt Options) *host.Snapshot {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	c := &collector{fs: fsys, snap: &host.Snapshot{
		SchemaVersion: host.SchemaVersion,
		CollectedAt:   now().UTC(),
		Source:        fsys.Root(),
	}, tools: opt.Tools}
	if c.tools == nil && fsys.IsLive() {
		c.tools = ExecTool(ToolTimeout)
	}
	c.hostname()
	c.kernel()
	c.cpus()
	c.numa()
	c.pci()
	c.rdma()
	c.netdevs()
	c.linkNetdevs()
	c.rdmaMTU()
	c.roce()
	c.phy()
	c.gpus()
	c.snap.ComputeAffinity()
	c.snap.Baseboard = baseboard(c.snap)
	c.snap.Normalize()
	return c.snap
}

// fail records an error about subject; absent files are not errors.
func (c *collector) fail(subject, p string, err error) {
	c.snap.Errors = append(c.snap.Errors, host.CollectError{Subject: subject, Path: p, Error: err.Error()})
}

// str reads an optional attribute: ok is false when it is absent or
// unreadable, and only the unreadable case is recorded.
func (c *collector) str(subject, p string) (string, bool) {
	if c.at != nil {
		c.at(p)
	}
	s, err := c.fs.ReadString(p)
	if err != nil {
		if !hostfs.IsNotExist(err) {
			c.fail(subject, p, err)
		}
		return "", false
	}
	return s, true
}

// sources is where one device's, port's or PCI function's attributes were
// read (their Sources): what findings quote instead of spelling paths.
type sources map[string]string

// note records that file under dir was read, when ok.
func (s sources) note(ok bool, dir, file string) {
	if ok {
		s[file] = dir + "/" + file
	}
}

// or nil is s, or nil when nothing was read (a snapshot then says nothing).
func (s sources) orNil() map[string]string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// num reads an optional integer attribute (decimal or 0x hex).
func (c *collector) num(subject, p string) (int64, bool) {
	s, ok := c.str(subject, p)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		c.fail(subject, p, err)
		return 0, false
	}
	return v, true
}

// list lists an optional directory.
func (c *collector) list(subject, p string) []string {
	names, err := c.fs.ReadDir(p)
	if err != nil && !hostfs.IsNotExist(err) {
		c.fail(subject, p, err)
	}
	return names
}

// linkBase returns the last component of a symlink's target ("mlx5_core"
// for a driver link), or "".
func (c *collector) linkBase(p string) string {
	t, err := c.fs.Readlink(p)
	if err != nil {
		return ""
	}
	return path.Base(t)
}

func (c *collector) hostname() {
	for _, p := range []string{"/proc/sys/kernel/hostname", "/etc/hostname"} {
		if s, ok := c.str("host", p); ok && s != "" {
			c.snap.Hostname = s
			return
		}
	}
	if c.fs.IsLive() {
		c.snap.Hostname, _ = os.Hostname()
	}
}

var numbered = lazyre.New(`^(cpu|node)(\d+)$`)

// numberedEntries returns the N of the prefixN entries of a directory, sorted.
func numberedEntries(names []string, prefix string) []int {
	var ids []int
	for _, n := range names {
		if m := numbered().FindStringSubmatch(n); m != nil && m[1] == prefix {
			id, _ := strconv.Atoi(m[2])
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (c *collector) cpus() {
	const base = "/sys/devices/system/cpu"
	var online cpuset.CPUSet
	onlineKnown := false
	if s, ok := c.str("cpus", base+"/online"); ok {
		if set, err := cpuset.Parse(s); err == nil {
			online, onlineKnown = set, true
		} else {
			c.fail("cpus", base+"/online", err)
		}
	}
	for _, id := range numberedEntries(c.list("cpus", base), "cpu") {
		dir := base + "/cpu" + strconv.Itoa(id)
		subject := "cpu " + strconv.Itoa(id)
		cpu := host.CPU{ID: id, Package: -1, Die: -1, NUMANode: -1, Online: !onlineKnown || online.Contains(id)}
		if v, ok := c.num(subject, dir+"/topology/physical_package_id"); ok {
			cpu.Package = int(v)
		}
		if v, ok := c.num(subject, dir+"/topology/die_id"); ok {
			cpu.Die = int(v)
		}
		if v, ok := c.num(subject, dir+"/topology/core_id"); ok {
			cpu.Core = int(v)
		}
		s, haveSiblings := c.str(subject, dir+"/topology/thread_siblings_list")
		// One stat, and only when a topology file was missing.
		hasTopology := cpu.Package >= 0 || haveSiblings || c.fs.IsDir(dir+"/topology")
		if haveSiblings {
			cpu.Siblings = canonCPUList(s)
		} else if cpu.Online && hasTopology {
			cpu.Siblings = strconv.Itoa(id)
		}
		if cpu.Online && !hasTopology && onlineKnown {
			// The kernel drops topology/ of offline CPUs; a capture that
			// lost it is not the same as an offline CPU, so say so.
			c.fail(subject, dir+"/topology", errors.New("no topology directory for an online CPU"))
		}
		if s, ok := c.str(subject, dir+"/cpufreq/scaling_governor"); ok {
			cpu.Governor = s
		}
		c.snap.CPUs = append(c.snap.CPUs, cpu)
	}
	iso := &c.snap.Kernel.Isolation
	src := sources{}
	var ok bool
	iso.Isolated, ok = c.str("cpus", base+"/isolated")
	src.note(ok, base, "isolated")
	iso.NohzFull, ok = c.str("cpus", base+"/nohz_full")
	src.note(ok, base, "nohz_full")
	if iso.NohzFull == "(null)" {
		iso.NohzFull = ""
	}
	if iso.RCUNoCBs, ok = c.snap.Kernel.Param("rcu_nocbs"); ok {
		src["rcu_nocbs"] = "/proc/cmdline"
	}
	iso.Sources = src.orNil()
}

// canonCPUList rewrites a cpulist in the kernel's canonical form; unparseable
// text is kept as read.
func canonCPUList(s string) string {
	set, err := cpuset.Parse(strings.TrimSpace(s))
	if err != nil {
		return s
	}
	return set.String()
}

func (c *collector) numa() {
	const base = "/sys/devices/system/node"
	ids := numberedEntries(c.list("numa", base), "node")
	for _, id := range ids {
		dir := base + "/node" + strconv.Itoa(id)
		subject := "numa node " + strconv.Itoa(id)
		n := host.NUMANode{ID: id, HugePages: []host.HugePagePool{}}
		if s, ok := c.str(subject, dir+"/cpulist"); ok {
			n.CPUs = canonCPUList(s)
		}
		if s, ok := c.str(subject, dir+"/meminfo"); ok {
			n.MemTotalBytes, n.MemFreeBytes = parseNodeMeminfo(s)
		}
		if s, ok := c.str(subject, dir+"/distance"); ok {
			for _, f := range strings.Fields(s) {
				d, err := strconv.Atoi(f)
				if err != nil {
					c.fail(subject, dir+"/distance", err)
					break
				}
				n.Distances = append(n.Distances, d)
			}
		}
		n.HugePages = c.hugePools(subject, dir+"/hugepages")
		c.snap.NUMANodes = append(c.snap.NUMANodes, n)
	}
	c.gpuMemoryNodes()
	if len(c.snap.NUMANodes) == 0 && len(c.snap.CPUs) > 0 {
		// A kernel without NUMA (or a capture without node/) has one node
		// holding every CPU, which is how hwloc models it too.
		var all []int
		for _, cpu := range c.snap.CPUs {
			all = append(all, cpu.ID)
		}
		c.snap.NUMANodes = []host.NUMANode{{ID: 0, CPUs: cpuset.New(all...).String(), MemTotalBytes: c.snap.Kernel.MemTotalBytes, Distances: []int{10}, HugePages: c.snap.Kernel.HugePages}}
	}
	if len(c.snap.CPUs) > 0 {
		// A node can list CPUs that have no cpuN directory only in a pruned
		// capture; keep the node to the CPUs that exist, as hwloc does.
		var known []int
		for _, cpu := range c.snap.CPUs {
			known = append(known, cpu.ID)
		}
		all := cpuset.New(known...)
		for i := range c.snap.NUMANodes {
			if set, err := cpuset.Parse(c.snap.NUMANodes[i].CPUs); err == nil {
				c.snap.NUMANodes[i].CPUs = set.Intersection(all).String()
			}
		}
	}
	// Each node's set parsed once, not once per CPU (hundreds of CPUs).
	nodeSets := make([]cpuset.CPUSet, len(c.snap.NUMANodes))
	for i, n := range c.snap.NUMANodes {
		nodeSets[i], _ = cpuset.Parse(n.CPUs)
	}
	for i := range c.snap.CPUs {
		for j, n := range c.snap.NUMANodes {
			if nodeSets[j].Contains(c.snap.CPUs[i].ID) {
				c.snap.CPUs[i].NUMANode = n.ID
			}
		}
	}
}

// gpuMemoryNodes marks NUMA nodes that are GPU memory (the NVIDIA driver
// names them in /proc/driver/nvidia/gpus/<bdf>/numa_status).
func (c *collector) gpuMemoryNodes() {
	const base = "/proc/driver/nvidia/gpus"
	for _, bdf := range c.list("numa", base) {
		s, ok := c.str("gpu "+bdf, base+"/"+bdf+"/numa_status")
		if !ok {
			continue
		}
		for _, line := range strings.Split(s, "\n") {
			v, found := strings.CutPrefix(line, "Node:")
			if !found {
				continue
			}
			id, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || id < 0 {
				continue
			}
			for i := range c.snap.NUMANodes {
				if c.snap.NUMANodes[i].ID == id {
					c.snap.NUMANodes[i].GPUMemoryOf = bdf
				}
			}
		}
	}
}

func parseNodeMeminfo(s string) (total, free int64) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		// "Node 0 MemTotal:       32768 kB"
		if len(f) < 4 || f[0] != "Node" {
			continue
		}
		v, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 4 && f[4] == "kB" {
			v <<= 10
		}
		switch f[2] {
		case "MemTotal:":
			total = v
		case "MemFree:":
			free = v
		}
	}
	return total, free
}

var hugeDir = lazyre.New(`^hugepages-(\d+)kB$`)

func (c *collector) hugePools(subject, dir string) []host.HugePagePool {
	pools := []host.HugePagePool{}
	for _, name := range c.list(subject, dir) {
		m := hugeDir().FindStringSubmatch(name)
		if m == nil {
			continue
		}
		kb, _ := strconv.ParseInt(m[1], 10, 64)
		p := host.HugePagePool{PageSizeBytes: kb << 10}
		p.Total, _ = c.num(subject, dir+"/"+name+"/nr_hugepages")
		p.Free, _ = c.num(subject, dir+"/"+name+"/free_hugepages")
		p.Surplus, _ = c.num(subject, dir+"/"+name+"/surplus_hugepages")
		pools = append(pools, p)
	}
	slices.SortFunc(pools, func(a, b host.HugePagePool) int { return cmp.Compare(a.PageSizeBytes, b.PageSizeBytes) })
	return pools
}

// Package testhost writes sysfs/procfs trees from a compact description, so
// tests and the embedded example run the real inventory code on machines
// this one is not: the seed articles' hosts, and faults injected into them.
package testhost

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/host"
	"golang.org/x/sys/unix"
	"k8s.io/utils/cpuset"
)

// Machine describes a host compactly.
type Machine struct {
	Hostname, Kernel, Cmdline string
	Sockets, NodesPerSocket   int
	CoresPerNode, Threads     int // threads per core (1 or 2)
	MemPerNodeGiB             int
	// Distances[i][j]; nil means 10 local, 21 same socket, 32 across sockets.
	Distances [][]int
	// HugePages1G and HugePages2M are per-node totals (free = total).
	HugePages1G, HugePages2M int
	Isolated, NohzFull       string
	Governor                 string
	Modules                  []string
	// Limits is the text of /etc/security/limits.d/99-rdma.conf.
	Limits string
	IOMMU  bool
	PCI    []PCIFunc
	RDMA   []RDMADev
	Net    []NetDev
	// Files are extra files, by host path.
	Files map[string]string
}

// PCIFunc is one PCI function. Parent is the upstream bridge address, or
// "" for a root port or device on the host bridge named by HostBridge.
type PCIFunc struct {
	Addr, Parent, HostBridge string
	Class, Vendor, Device    string
	Driver                   string
	Node                     int
	// Link is "16.0 GT/s PCIe x16"; MaxLink defaults to Link.
	Link, MaxLink string
	IOMMUGroup    int
	ResetMethod   string
}

// RDMADev is an RDMA device on a PCI function.
type RDMADev struct {
	Name, PCI, NodeGUID, FW, BoardID, HCAType string
	Ports                                     []Port
}

// Port is one RDMA port.
type Port struct {
	State, Phys, Rate, LinkLayer string
	LID, SMLID                   int
	// TrafficClass is the MLNX_OFED tc/<port>/traffic_class content ("": absent).
	TrafficClass         string
	GIDs                 []GIDEntry
	Counters, HWCounters map[string]uint64
}

// GIDEntry is one GID table slot.
type GIDEntry struct {
	Index          int
	GID, Type, Dev string
}

// NetDev is a netdev on a PCI function.
type NetDev struct {
	Name, PCI, Mode, OperState string
	MTU, SpeedMbps, Type, Port int
	// ECN, when set, writes the MLNX_OFED ecn/ tree with these priorities enabled.
	ECN []int
	// AdminDown leaves the interface down (flags without IFF_UP).
	AdminDown bool
	// QoS, when set, writes MLNX_OFED's qos/ files and the CNP's ecn files.
	QoS *QoS
}

// QoS is a RoCE netdev's QoS as MLNX_OFED's sysfs shows it.
type QoS struct {
	Trust            string
	PFC              []int
	CNPDSCP, CNPPrio int
}

// Write writes the tree under dir.
func (m Machine) Write(dir string) error {
	w := &writer{dir: dir}
	m.cpus(w)
	m.numa(w)
	m.kernel(w)
	devPath := map[string]string{}
	for _, f := range m.PCI {
		devPath[f.Addr] = m.pciPath(f.Addr)
		m.pciFunc(w, f)
	}
	for _, r := range m.RDMA {
		m.rdmaDev(w, r, devPath[r.PCI])
	}
	for _, n := range m.Net {
		m.netdev(w, n, devPath[n.PCI])
	}
	for p, c := range m.Files {
		w.file(p, c)
	}
	return w.err
}

type writer struct {
	dir string
	err error
}

func (w *writer) file(p, content string) {
	if w.err != nil {
		return
	}
	full := filepath.Join(w.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		w.err = err
		return
	}
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	w.err = os.WriteFile(full, []byte(content), 0o644)
}

func (w *writer) mkdir(p string) {
	if w.err == nil {
		w.err = os.MkdirAll(filepath.Join(w.dir, filepath.FromSlash(p)), 0o755)
	}
}

// link makes a relative symlink at host path p pointing to host path target.
func (w *writer) link(p, target string) {
	if w.err != nil {
		return
	}
	rel, err := filepath.Rel(filepath.Dir(p), target)
	if err != nil {
		w.err = err
		return
	}
	full := filepath.Join(w.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		w.err = err
		return
	}
	os.Remove(full)
	w.err = os.Symlink(rel, full)
}

func (m Machine) nodes() int { return m.Sockets * m.NodesPerSocket }

// CPUsOfNode lists node n's CPUs: cores are numbered node by node, and the
// second thread of core c is c + total cores (Linux's usual x86 numbering).
func (m Machine) CPUsOfNode(n int) []int {
	total := m.nodes() * m.CoresPerNode
	var out []int
	for t := 0; t < m.Threads; t++ {
		for c := 0; c < m.CoresPerNode; c++ {
			out = append(out, t*total+n*m.CoresPerNode+c)
		}
	}
	return out
}

func (m Machine) cpus(w *writer) {
	const base = "/sys/devices/system/cpu"
	total := m.nodes() * m.CoresPerNode
	all := total * m.Threads
	w.file(base+"/online", fmt.Sprintf("0-%d", all-1))
	w.file(base+"/possible", fmt.Sprintf("0-%d", all-1))
	w.file(base+"/isolated", m.Isolated)
	w.file(base+"/nohz_full", m.NohzFull)
	for id := 0; id < all; id++ {
		core := id % total
		node := core / m.CoresPerNode
		pkg := node / m.NodesPerSocket
		var sib []int
		for t := 0; t < m.Threads; t++ {
			sib = append(sib, t*total+core)
		}
		d := fmt.Sprintf("%s/cpu%d", base, id)
		w.file(d+"/topology/physical_package_id", strconv.Itoa(pkg))
		w.file(d+"/topology/die_id", strconv.Itoa(node%m.NodesPerSocket))
		w.file(d+"/topology/core_id", strconv.Itoa(core%(m.CoresPerNode*m.NodesPerSocket)))
		pkgCPUs := m.socketCPUs(pkg)
		for _, f := range []struct {
			name string
			cpus []int
		}{{"thread_siblings", sib}, {"core_cpus", sib}, {"core_siblings", pkgCPUs}, {"package_cpus", pkgCPUs}, {"die_cpus", m.CPUsOfNode(node)}} {
			w.file(d+"/topology/"+f.name, cpuMask(f.cpus, all))
			w.file(d+"/topology/"+f.name+"_list", cpuset.New(f.cpus...).String())
		}
		if m.Governor != "" {
			w.file(d+"/cpufreq/scaling_governor", m.Governor)
		}
	}
}

// cpuMask prints CPUs as the kernel's bitmap: 32-bit hex words, most
// significant first, joined by commas.
func cpuMask(cpus []int, total int) string {
	words := make([]uint32, (total+31)/32)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, len(words))
	for i, wd := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", wd)
	}
	return strings.Join(parts, ",")
}

func (m Machine) socketCPUs(pkg int) []int {
	var out []int
	for n := pkg * m.NodesPerSocket; n < (pkg+1)*m.NodesPerSocket; n++ {
		out = append(out, m.CPUsOfNode(n)...)
	}
	return out
}

func (m Machine) distance(i, j int) int {
	if m.Distances != nil {
		return m.Distances[i][j]
	}
	switch {
	case i == j:
		return 10
	case i/m.NodesPerSocket == j/m.NodesPerSocket:
		return 21
	default:
		return 32
	}
}

func (m Machine) numa(w *writer) {
	const base = "/sys/devices/system/node"
	n := m.nodes()
	w.file(base+"/online", fmt.Sprintf("0-%d", n-1))
	w.file(base+"/possible", fmt.Sprintf("0-%d", n-1))
	for i := 0; i < n; i++ {
		d := fmt.Sprintf("%s/node%d", base, i)
		w.file(d+"/cpulist", cpuset.New(m.CPUsOfNode(i)...).String())
		w.file(d+"/cpumap", cpuMask(m.CPUsOfNode(i), m.nodes()*m.CoresPerNode*m.Threads))
		var dist []string
		for j := 0; j < n; j++ {
			dist = append(dist, strconv.Itoa(m.distance(i, j)))
		}
		w.file(d+"/distance", strings.Join(dist, " "))
		kb := int64(m.MemPerNodeGiB) << 20
		huge := int64(m.HugePages1G)<<20 + int64(m.HugePages2M)<<11
		w.file(d+"/meminfo", fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d HugePages_Total:   %d\n", i, kb, i, kb-huge-kb/8, i, m.HugePages2M))
		for _, p := range []struct {
			kb int64
			n  int
		}{{2048, m.HugePages2M}, {1048576, m.HugePages1G}} {
			hd := fmt.Sprintf("%s/hugepages/hugepages-%dkB", d, p.kb)
			w.file(hd+"/nr_hugepages", strconv.Itoa(p.n))
			w.file(hd+"/free_hugepages", strconv.Itoa(p.n))
			w.file(hd+"/surplus_hugepages", "0")
		}
	}
}

func (m Machine) kernel(w *writer) {
	w.file("/proc/sys/kernel/hostname", m.Hostname)
	w.file("/etc/hostname", m.Hostname)
	w.file("/proc/sys/kernel/osrelease", m.Kernel)
	w.file("/proc/cmdline", m.Cmdline)
	var mods strings.Builder
	for _, name := range m.Modules {
		fmt.Fprintf(&mods, "%s 16384 0 - Live 0x0000000000000000\n", name)
	}
	w.file("/proc/modules", mods.String())
	n := m.nodes()
	total := int64(m.MemPerNodeGiB*n) << 20
	defSize := int64(2048)
	if strings.Contains(m.Cmdline, "default_hugepagesz=1G") {
		defSize = 1048576
	}
	w.file("/proc/meminfo", fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nHugePages_Total:       %d\nHugePages_Free:        %d\nHugepagesize:       %d kB\n", total, total/2, m.HugePages1G*n, m.HugePages1G*n, defSize))
	for _, p := range []struct {
		kb int64
		n  int
	}{{2048, m.HugePages2M * n}, {1048576, m.HugePages1G * n}} {
		hd := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB", p.kb)
		w.file(hd+"/nr_hugepages", strconv.Itoa(p.n))
		w.file(hd+"/free_hugepages", strconv.Itoa(p.n))
		w.file(hd+"/surplus_hugepages", "0")
	}
	mounts := "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
	if m.HugePages1G > 0 {
		mounts += "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=1024M 0 0\n"
	}
	w.file("/proc/mounts", mounts)
	w.file("/etc/security/limits.conf", "# /etc/security/limits.conf\n#<domain> <type> <item> <value>\n")
	if m.Limits != "" {
		w.file("/etc/security/limits.d/99-rdma.conf", m.Limits)
	}
	if m.IOMMU {
		w.mkdir("/sys/class/iommu/ivhd0")
		for _, f := range m.PCI {
			w.mkdir(fmt.Sprintf("/sys/kernel/iommu_groups/%d/devices", f.IOMMUGroup))
		}
	}
	for _, mod := range m.Modules {
		if mod == "nvidia" {
			w.file("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:06:15 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)")
		}
	}
}

// pciPath is the /sys/devices path of a function, through its bridges.
func (m Machine) pciPath(addr string) string {
	for _, f := range m.PCI {
		if f.Addr != addr {
			continue
		}
		if f.Parent == "" {
			return "/sys/devices/" + f.HostBridge + "/" + f.Addr
		}
		return m.pciPath(f.Parent) + "/" + f.Addr
	}
	panic("testhost: no PCI function " + addr)
}

func (m Machine) pciFunc(w *writer, f PCIFunc) {
	d := m.pciPath(f.Addr)
	w.link("/sys/bus/pci/devices/"+f.Addr, d)
	w.file(d+"/vendor", f.Vendor)
	w.file(d+"/device", f.Device)
	w.file(d+"/subsystem_vendor", f.Vendor)
	w.file(d+"/subsystem_device", "0x0000")
	w.file(d+"/class", f.Class)
	w.file(d+"/numa_node", strconv.Itoa(f.Node))
	if f.Node >= 0 {
		w.file(d+"/local_cpulist", cpuset.New(m.CPUsOfNode(f.Node)...).String())
		w.file(d+"/local_cpus", cpuMask(m.CPUsOfNode(f.Node), m.nodes()*m.CoresPerNode*m.Threads))
	}
	if f.Link != "" {
		speed, width, _ := strings.Cut(f.Link, " x")
		max := f.MaxLink
		if max == "" {
			max = f.Link
		}
		mspeed, mwidth, _ := strings.Cut(max, " x")
		w.file(d+"/current_link_speed", speed)
		w.file(d+"/current_link_width", width)
		w.file(d+"/max_link_speed", mspeed)
		w.file(d+"/max_link_width", mwidth)
	}
	if f.ResetMethod != "" {
		w.file(d+"/reset_method", f.ResetMethod)
	}
	if f.Driver != "" {
		w.link(d+"/driver", "/sys/bus/pci/drivers/"+f.Driver)
		w.mkdir("/sys/bus/pci/drivers/" + f.Driver)
	}
	if m.IOMMU {
		w.link(d+"/iommu_group", fmt.Sprintf("/sys/kernel/iommu_groups/%d", f.IOMMUGroup))
	}
}

func (m Machine) rdmaDev(w *writer, r RDMADev, pciDir string) {
	d := pciDir + "/infiniband/" + r.Name
	w.link("/sys/class/infiniband/"+r.Name, d)
	w.link(d+"/device", pciDir)
	w.file(d+"/node_type", "1: CA")
	w.file(d+"/node_guid", r.NodeGUID)
	w.file(d+"/sys_image_guid", r.NodeGUID)
	w.file(d+"/fw_ver", r.FW)
	w.file(d+"/board_id", r.BoardID)
	w.file(d+"/hca_type", r.HCAType)
	w.file(d+"/node_desc", m.Hostname+" "+r.Name)
	for i, p := range r.Ports {
		pd := fmt.Sprintf("%s/ports/%d", d, i+1)
		w.file(pd+"/state", p.State)
		w.file(pd+"/phys_state", p.Phys)
		w.file(pd+"/rate", p.Rate)
		w.file(pd+"/link_layer", p.LinkLayer)
		w.file(pd+"/lid", fmt.Sprintf("0x%x", p.LID))
		w.file(pd+"/sm_lid", fmt.Sprintf("0x%x", p.SMLID))
		w.file(pd+"/sm_sl", "0")
		w.file(pd+"/lid_mask_count", "0")
		w.file(pd+"/cap_mask", "0x00010000")
		if p.TrafficClass != "" {
			w.file(fmt.Sprintf("%s/tc/%d/traffic_class", d, i+1), p.TrafficClass)
		}
		for i := 0; i < 8; i++ {
			w.file(fmt.Sprintf("%s/gids/%d", pd, i), "0000:0000:0000:0000:0000:0000:0000:0000")
		}
		for _, g := range p.GIDs {
			a, err := host.ParseGID(g.GID)
			if err != nil {
				panic(err)
			}
			b := a.As16()
			var groups []string
			for k := 0; k < 16; k += 2 {
				groups = append(groups, fmt.Sprintf("%02x%02x", b[k], b[k+1]))
			}
			w.file(fmt.Sprintf("%s/gids/%d", pd, g.Index), strings.Join(groups, ":"))
			w.file(fmt.Sprintf("%s/gid_attrs/types/%d", pd, g.Index), g.Type)
			if g.Dev != "" {
				w.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", pd, g.Index), g.Dev)
			}
		}
		// Every counter of the one table, as a port that has carried
		// traffic shows them; Counters and HWCounters override.
		for _, c := range counters.Table {
			dir, over := "/counters/", p.Counters
			if c.Family == counters.HWCounters {
				dir, over = "/hw_counters/", p.HWCounters
			}
			v, ok := over[c.Sysfs]
			if !ok && (c.Kind == counters.Data || c.Kind == counters.Packets) {
				v = 123456789
			}
			w.file(pd+dir+c.Sysfs, strconv.FormatUint(v, 10))
		}
	}
}

func (m Machine) netdev(w *writer, n NetDev, pciDir string) {
	d := pciDir + "/net/" + n.Name
	w.link("/sys/class/net/"+n.Name, d)
	w.link(d+"/device", pciDir)
	w.file(d+"/mtu", strconv.Itoa(n.MTU))
	w.file(d+"/speed", strconv.Itoa(n.SpeedMbps))
	state := n.OperState
	if state == "" {
		state = "up"
	}
	w.file(d+"/operstate", state)
	flags := "0x1003" // IFF_UP|IFF_BROADCAST|IFF_MULTICAST
	if n.AdminDown {
		flags = "0x1002"
	}
	w.file(d+"/flags", flags)
	typ := n.Type
	if typ == 0 {
		typ = 1
	}
	w.file(d+"/type", strconv.Itoa(typ))
	w.file(d+"/dev_port", strconv.Itoa(n.Port))
	w.file(d+"/address", "50:6b:4b:43:fe:3a")
	if n.Mode != "" {
		w.file(d+"/mode", n.Mode)
	}
	if n.ECN != nil {
		for _, role := range []string{"roce_np", "roce_rp"} {
			for p := 0; p < 8; p++ {
				v := "0"
				if slices.Contains(n.ECN, p) {
					v = "1"
				}
				w.file(fmt.Sprintf("%s/ecn/%s/enable/%d", d, role, p), v)
			}
		}
		w.file(d+"/qos/trust", "dscp")
	}
	if q := n.QoS; q != nil {
		w.file(d+"/qos/trust", q.Trust)
		var b strings.Builder
		b.WriteString("PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     ")
		for p := 0; p < 8; p++ {
			fmt.Fprintf(&b, "%d   ", map[bool]int{true: 1}[slices.Contains(q.PFC, p)])
		}
		w.file(d+"/qos/pfc", b.String())
		b.Reset()
		b.WriteString("dscp2prio mapping:\n")
		for p := 0; p < 8; p++ {
			fmt.Fprintf(&b, "\tprio:%d dscp:", p)
			for x := 7; x >= 0; x-- {
				fmt.Fprintf(&b, "%02d,", p*8+x)
			}
			b.WriteString("\n")
		}
		w.file(d+"/qos/dscp2prio", b.String())
		w.file(d+"/ecn/roce_np/cnp_dscp", strconv.Itoa(q.CNPDSCP))
		w.file(d+"/ecn/roce_np/cnp_802p_prio", strconv.Itoa(q.CNPPrio))
	}
}

// fastTmp prefers a tmpfs: unpacking tens of thousands of small sysfs files
// costs seconds on a disk and milliseconds in memory. Not when the tmpfs is
// short of room or inodes (every test binary unpacks its own copy of the
// captures, some 60,000 files each), and never before the directories of
// test binaries that died without cleaning up are gone.
func fastTmp() string {
	fastTmpOnce.Do(func() {
		fastTmpDir = os.TempDir()
		const shm = "/dev/shm"
		sweepDead(shm)
		sweepDead(os.TempDir())
		var st unix.Statfs_t
		if unix.Statfs(shm, &st) != nil || st.Bavail*uint64(st.Bsize) < 1<<30 || (st.Files > 0 && st.Ffree < 500_000) {
			return
		}
		if f, err := os.CreateTemp(shm, "probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			fastTmpDir = shm
		}
	})
	return fastTmpDir
}

var (
	fastTmpOnce sync.Once
	fastTmpDir  string
)

// tempPrefix names a test binary's temporary directories by its PID, so a
// later run can tell the leftovers of a killed one.
func tempPrefix(kind string) string { return fmt.Sprintf("rdmalab-%s-%d-", kind, os.Getpid()) }

// sweepDead removes rdmalab-*-PID-* directories whose test binary is gone.
func sweepDead(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		f := strings.Split(e.Name(), "-")
		if !e.IsDir() || len(f) < 4 || f[0] != "rdmalab" {
			continue
		}
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid <= 0 {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// TempDir is t.TempDir on a tmpfs when there is one.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(fastTmp(), tempPrefix("test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// WriteTree writes m under a fresh temporary directory and returns it.
func WriteTree(t testing.TB, m Machine) string {
	t.Helper()
	d := TempDir(t)
	if err := m.Write(d); err != nil {
		t.Fatal(err)
	}
	return d
}

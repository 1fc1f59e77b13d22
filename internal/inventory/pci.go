package inventory

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"k8s.io/utils/cpuset"
)

func (c *collector) pci() {
	const base = "/sys/bus/pci/devices"
	for _, name := range c.list("pci", base) {
		addr, err := host.ParsePCIAddress(name)
		if err != nil {
			c.fail("pci "+name, base+"/"+name, err)
			continue
		}
		c.snap.PCIDevices = append(c.snap.PCIDevices, c.pciDevice(addr, base+"/"+name))
	}
	slices.SortFunc(c.snap.PCIDevices, func(a, b host.PCIDevice) int { return a.Address.Compare(b.Address) })
	c.pciRoles()
	c.pciLocality()
}

func (c *collector) pciDevice(addr host.PCIAddress, dir string) host.PCIDevice {
	subject := "pci " + addr.String()
	d := host.PCIDevice{Address: addr, NUMANode: -1, LocalityNUMANode: -1}
	if real, err := c.fs.Realpath(dir); err != nil {
		c.fail(subject, dir, err)
	} else {
		// /sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0: the components
		// between the host bridge and the device are its upstream bridges.
		parts := strings.Split(strings.TrimPrefix(real, "/sys/devices/"), "/")
		for i, p := range parts {
			if strings.HasPrefix(p, "pci") && d.HostBridge == "" {
				d.HostBridge = p
				continue
			}
			if a, err := host.ParsePCIAddress(p); err == nil && i < len(parts)-1 && d.HostBridge != "" {
				d.Parents = append([]host.PCIAddress{a}, d.Parents...)
			}
		}
	}
	src := sources{}
	str := func(file string) (string, bool) {
		s, ok := c.str(subject, dir+"/"+file)
		src.note(ok, dir, file)
		return s, ok
	}
	d.Class, _ = str("class")
	d.ClassName = host.ClassName(d.Class)
	d.Vendor, _ = str("vendor")
	d.Device, _ = str("device")
	d.SubsystemVendor, _ = c.str(subject, dir+"/subsystem_vendor")
	d.SubsystemDevice, _ = c.str(subject, dir+"/subsystem_device")
	d.Driver = c.linkBase(dir + "/driver")
	src.note(d.Driver != "", dir, "driver")
	if v, ok := c.num(subject, dir+"/numa_node"); ok {
		d.NUMANode = int(v)
		src.note(true, dir, "numa_node")
	}
	if s, ok := str("local_cpulist"); ok {
		d.LocalCPUs = canonCPUList(s)
	} else if s, ok := str("local_cpus"); ok {
		// Older kernels and some arches (POWER) only have the mask.
		cpus, err := host.ParseCPUMask(s)
		if err != nil {
			c.fail(subject, dir+"/local_cpus", err)
		} else {
			d.LocalCPUs = cpuset.New(cpus...).String()
		}
	}
	if g := c.linkBase(dir + "/iommu_group"); g != "" {
		if n, err := strconv.Atoi(g); err == nil {
			d.IOMMUGroup = &n
		}
	}
	d.ResetMethod, _ = c.str(subject, dir+"/reset_method")
	// ACS on bridges and ATS on RDMA NICs decide whether GPU↔NIC peer
	// traffic goes direct; sysfs shows the extended capabilities to root
	// only (64 bytes otherwise), and ConfigBytes says which was seen.
	if host.IsBridgeClass(d.Class) || (d.Vendor == "0x15b3" && strings.HasPrefix(d.Class, "0x02")) {
		if b, err := c.fs.ReadFile(dir + "/config"); err == nil {
			d.ConfigBytes = len(b)
			d.ACSCtl, d.ATSEnabled = host.ParsePCIConfig(b)
			src.note(true, dir, "config")
		}
	}
	d.CurrentLinkSpeedGTps = c.pcieSpeed(subject, dir+"/current_link_speed")
	d.MaxLinkSpeedGTps = c.pcieSpeed(subject, dir+"/max_link_speed")
	d.CurrentLinkWidth = c.pcieWidth(subject, dir+"/current_link_width")
	d.MaxLinkWidth = c.pcieWidth(subject, dir+"/max_link_width")
	src.note(d.CurrentLinkSpeedGTps != 0, dir, "current_link_speed")
	src.note(d.MaxLinkSpeedGTps != 0, dir, "max_link_speed")
	src.note(d.CurrentLinkWidth != 0, dir, "current_link_width")
	src.note(d.MaxLinkWidth != 0, dir, "max_link_width")
	if v, ok := c.num(subject, dir+"/sriov_totalvfs"); ok {
		d.SRIOVTotalVFs = int(v)
	}
	if v, ok := c.num(subject, dir+"/sriov_numvfs"); ok {
		d.SRIOVNumVFs = int(v)
	}
	if fn := c.linkBase(dir + "/physfn"); fn != "" {
		a, err := host.ParsePCIAddress(fn)
		if err != nil {
			c.fail(subject, dir+"/physfn", err)
		}
		d.PhysFn = a
	}
	d.Sources = src.orNil()
	return d
}

func (c *collector) pcieSpeed(subject, p string) float64 {
	s, ok := c.str(subject, p)
	if !ok {
		return 0
	}
	v, err := host.ParsePCIeSpeed(s)
	if err != nil {
		c.fail(subject, p, err)
	}
	return v
}

func (c *collector) pcieWidth(subject, p string) int {
	v, ok := c.num(subject, p)
	if !ok {
		return 0
	}
	// 63 and other non-widths mean the device fell off the bus or never trained.
	if !slices.Contains([]int64{0, 1, 2, 4, 8, 12, 16, 32}, v) {
		c.fail(subject, p, fmt.Errorf("link width %d is not a PCIe width (device fell off the bus?)", v))
		return 0
	}
	return int(v)
}

// pciRoles tells root ports, switch ports and plain bridges apart by the
// shape of the tree: config space beyond 64 bytes is root-only, the tree is not.
func (c *collector) pciRoles() {
	devs := c.snap.PCIDevices
	idx := map[host.PCIAddress]int{}
	hasBridgeChild := map[host.PCIAddress]bool{}
	for i, d := range devs {
		idx[d.Address] = i
		if host.IsBridgeClass(d.Class) && len(d.Parents) > 0 {
			hasBridgeChild[d.Parents[0]] = true
		}
	}
	// Parents come before children in address order within a host bridge,
	// but not across renumbered buses, so resolve roles by depth.
	order := slices.Clone(devs)
	slices.SortStableFunc(order, func(a, b host.PCIDevice) int { return len(a.Parents) - len(b.Parents) })
	for _, o := range order {
		i := idx[o.Address]
		d := &devs[i]
		if !host.IsBridgeClass(d.Class) {
			continue
		}
		if len(d.Parents) == 0 {
			d.BridgeRole = "root_port"
			continue
		}
		parentRole := ""
		if j, ok := idx[d.Parents[0]]; ok {
			parentRole = devs[j].BridgeRole
		}
		switch {
		case parentRole == "switch_upstream":
			d.BridgeRole = "switch_downstream"
		case (parentRole == "root_port" || parentRole == "switch_downstream") && hasBridgeChild[d.Address]:
			d.BridgeRole = "switch_upstream"
		default:
			d.BridgeRole = "bridge"
		}
	}
	for i := range devs {
		d := &devs[i]
		for _, p := range d.Parents {
			j, ok := idx[p]
			if !ok {
				break
			}
			if devs[j].BridgeRole == "switch_downstream" && len(devs[j].Parents) > 0 {
				d.Switch = devs[j].Parents[0]
				break
			}
			if devs[j].BridgeRole == "switch_upstream" {
				d.Switch = p
				break
			}
		}
	}
}

// pciLocality sets each device's effective NUMA node: numa_node when the
// kernel knows it; else, like hwloc, the node whose CPUs local_cpulist
// names; else the only node of a single-node host.
func (c *collector) pciLocality() {
	type nodeSet struct {
		id  int
		set cpuset.CPUSet
	}
	var nodes []nodeSet
	for _, n := range c.snap.NUMANodes {
		if s, err := cpuset.Parse(n.CPUs); err == nil {
			nodes = append(nodes, nodeSet{n.ID, s})
		}
	}
	for i := range c.snap.PCIDevices {
		d := &c.snap.PCIDevices[i]
		switch {
		case d.NUMANode >= 0:
			d.LocalityNUMANode, d.LocalitySource = d.NUMANode, "numa_node"
			continue
		case len(c.snap.NUMANodes) == 1:
			d.LocalityNUMANode, d.LocalitySource = c.snap.NUMANodes[0].ID, "single_node"
			continue
		}
		d.LocalitySource = "unknown"
		local, err := cpuset.Parse(d.LocalCPUs)
		if d.LocalCPUs == "" || err != nil || local.IsEmpty() {
			continue
		}
		var touching []int
		for _, n := range nodes {
			if n.set.Intersection(local).Size() > 0 {
				touching = append(touching, n.id)
			}
		}
		if len(touching) == 1 {
			d.LocalityNUMANode, d.LocalitySource = touching[0], "local_cpulist"
		}
	}
}

package inventory

import (
	"path"
	"slices"
	"strconv"

	"github.com/rdmalab/rdmalab/internal/host"
)

const netClass = "/sys/class/net"

func (c *collector) netdevs() {
	for _, name := range c.list("netdevs", netClass) {
		if name == "lo" || name == "bonding_masters" {
			continue
		}
		c.snap.NetDevs = append(c.snap.NetDevs, c.netdev(name))
	}
}

func (c *collector) netdev(name string) host.NetDev {
	dir := netClass + "/" + name
	subject := "netdev " + name
	n := host.NetDev{Name: name, SpeedMbps: -1}
	src := sources{}
	if v, ok := c.num(subject, dir+"/mtu"); ok {
		n.MTUBytes = int(v)
		src.note(true, dir, "mtu")
	}
	// speed reads EINVAL while the link is down; that is "unknown", not an error.
	if s, err := c.fs.ReadString(dir + "/speed"); err == nil {
		if v, err := strconv.Atoi(s); err == nil {
			n.SpeedMbps = v
		}
	}
	n.OperState, _ = c.str(subject, dir+"/operstate")
	if v, ok := c.num(subject, dir+"/flags"); ok {
		up := v&1 != 0 // IFF_UP: set by "ip link set up", whatever the carrier
		n.AdminUp = &up
		src.note(true, dir, "flags")
	}
	if v, ok := c.num(subject, dir+"/type"); ok {
		n.Type = int(v)
	}
	n.Address, _ = c.str(subject, dir+"/address")
	var ok bool
	n.IPoIBMode, ok = c.str(subject, dir+"/mode")
	src.note(ok, dir, "mode")
	n.Master = c.linkBase(dir + "/master")
	n.Trust, _ = c.str(subject, dir+"/qos/trust")
	if c.fs.IsDir(dir + "/ecn") {
		n.ECN = &host.ECN{NotificationPoint: c.ecnPrios(subject, dir+"/ecn/roce_np/enable"), ReactionPoint: c.ecnPrios(subject, dir+"/ecn/roce_rp/enable")}
	}
	if real, err := c.fs.Realpath(dir + "/device"); err == nil {
		if a, err := host.ParsePCIAddress(path.Base(real)); err == nil {
			n.PCIAddress = a
			n.Driver = c.linkBase(dir + "/device/driver")
		}
	}
	n.Sources = src.orNil()
	return n
}

// ecnPrios lists the priorities whose enable file reads 1.
func (c *collector) ecnPrios(subject, dir string) []int {
	prios := []int{}
	for _, name := range c.list(subject, dir) {
		p, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if v, ok := c.num(subject, dir+"/"+name); ok && v == 1 {
			prios = append(prios, p)
		}
	}
	slices.Sort(prios)
	return prios
}

// linkNetdevs ties RDMA ports and netdevs together: through the GID table
// (RoCE, including VLAN and bond uppers) or, for IPoIB and ports without
// GIDs, through the PCI function they share.
func (c *collector) linkNetdevs() {
	for di := range c.snap.RDMADevices {
		d := &c.snap.RDMADevices[di]
		for pi := range d.Ports {
			p := &d.Ports[pi]
			if len(p.NetDevs) == 0 && d.PCIAddress.IsValid() {
				for _, n := range c.snap.NetDevs {
					if n.PCIAddress == d.PCIAddress && (len(d.Ports) == 1 || c.netdevPort(n.Name) == p.Port) {
						p.NetDevs = append(p.NetDevs, n.Name)
					}
				}
			}
			for _, name := range p.NetDevs {
				if n := c.snap.NetDev(name); n != nil && n.RDMADevice == "" {
					n.RDMADevice, n.RDMAPort = d.Name, p.Port
				}
			}
			slices.Sort(p.NetDevs)
		}
	}
}

// netdevPort is the 1-based RDMA port of a netdev on a multi-port function
// (dev_port, or dev_id on older drivers such as mlx4).
func (c *collector) netdevPort(name string) int {
	for _, f := range []string{"dev_port", "dev_id"} {
		if v, err := c.fs.ReadInt(netClass + "/" + name + "/" + f); err == nil {
			return int(v) + 1
		}
	}
	return 0
}

func (c *collector) gpus() {
	// The NVIDIA driver lists its GPUs; that names them even where a
	// capture lost the vendor file.
	nv := map[host.PCIAddress]bool{}
	for _, bdf := range c.list("gpus", "/proc/driver/nvidia/gpus") {
		if a, err := host.ParsePCIAddress(bdf); err == nil {
			nv[a] = true
		}
	}
	for _, d := range c.snap.PCIDevices {
		if nv[d.Address] && d.Vendor == "" {
			d.Vendor = host.VendorNVIDIA
		}
		if !host.IsGPUClass(d.Class, d.Vendor) {
			continue
		}
		c.snap.GPUs = append(c.snap.GPUs, host.GPU{
			Address: d.Address, Vendor: d.Vendor, Device: d.Device,
			Name: host.DeviceName(d.Vendor, d.Device), Driver: d.Driver,
			NUMANode: d.LocalityNUMANode, Switch: d.Switch,
		})
	}
}

package inventory

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

const ibClass = "/sys/class/infiniband"

func (c *collector) rdma() {
	for _, name := range c.list("rdma", ibClass) {
		c.snap.RDMADevices = append(c.snap.RDMADevices, c.rdmaDevice(name))
	}
	slices.SortFunc(c.snap.RDMADevices, func(a, b host.RDMADevice) int { return naturalCompare(a.Name, b.Name) })
}

func (c *collector) rdmaDevice(name string) host.RDMADevice {
	dir := ibClass + "/" + name
	subject := name
	d := host.RDMADevice{Name: name, NUMANode: -1, Ports: []host.RDMAPort{}}
	if s, ok := c.str(subject, dir+"/node_type"); ok {
		if n, err := host.ParseNodeType(s); err == nil {
			d.NodeType = n
		} else {
			c.fail(subject, dir+"/node_type", err)
		}
	}
	d.NodeGUID = c.guid(subject, dir+"/node_guid")
	d.SysImageGUID = c.guid(subject, dir+"/sys_image_guid")
	d.NodeDesc, _ = c.str(subject, dir+"/node_desc")
	d.FWVersion, _ = c.str(subject, dir+"/fw_ver")
	src := sources{}
	var ok bool
	d.BoardID, ok = c.str(subject, dir+"/board_id")
	src.note(ok, dir, "board_id")
	d.HCAType, _ = c.str(subject, dir+"/hca_type")
	if real, err := c.fs.Realpath(dir + "/device"); err == nil {
		if a, err := host.ParsePCIAddress(path.Base(real)); err == nil {
			d.PCIAddress = a
			src.note(true, dir, "device")
			if p := c.snap.PCI(d.PCIAddress); p != nil {
				d.Driver = p.Driver
				d.NUMANode = p.LocalityNUMANode
			}
		}
	}
	d.HWCounters, _ = c.counters(subject, dir+"/hw_counters")
	for _, p := range c.list(subject, dir+"/ports") {
		n, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		d.Ports = append(d.Ports, c.rdmaPort(name, n, dir+"/ports/"+p))
	}
	slices.SortFunc(d.Ports, func(a, b host.RDMAPort) int { return cmp.Compare(a.Port, b.Port) })
	d.Sources = src.orNil()
	return d
}

// notAState is the error for a state file that holds no IBTA state
// (portstate reads every spelling the kernel prints).
func notAState(s string) error { return fmt.Errorf("port state %q: not one of the IBTA states", s) }

func (c *collector) rdmaPort(dev string, n int, dir string) host.RDMAPort {
	subject := dev + " port " + strconv.Itoa(n)
	p := host.RDMAPort{Port: n}
	src := sources{}
	if s, ok := c.str(subject, dir+"/state"); ok {
		src.note(true, dir, "state")
		if p.State = portstate.ParseState(s); !p.State.Known() {
			c.fail(subject, dir+"/state", notAState(s))
		}
	}
	if s, ok := c.str(subject, dir+"/phys_state"); ok {
		src.note(true, dir, "phys_state")
		if p.PhysState = portstate.ParsePhys(s); !p.PhysState.Known() {
			c.fail(subject, dir+"/phys_state", notAState(s))
		}
	}
	if s, ok := c.str(subject, dir+"/rate"); ok {
		src.note(true, dir, "rate")
		r, err := host.ParseIBRate(s)
		if err != nil {
			c.fail(subject, dir+"/rate", err)
		}
		p.Rate, p.RateGbps = r, r.Gbps
	}
	var ok bool
	p.LinkLayer, ok = c.str(subject, dir+"/link_layer")
	src.note(ok, dir, "link_layer")
	num := func(file string) int {
		v, _ := c.num(subject, dir+"/"+file)
		return int(v)
	}
	opt := func(file string) *int {
		if v, ok := c.num(subject, dir+"/"+file); ok {
			src.note(true, dir, file)
			n := int(v)
			return &n
		}
		return nil
	}
	p.LID, p.SMLID = opt("lid"), opt("sm_lid")
	p.SMSL, p.LMC = num("sm_sl"), num("lid_mask_count")
	p.CapMask, _ = c.str(subject, dir+"/cap_mask")
	p.GIDs = c.gids(subject, dir)
	p.GIDTableMissing = !c.fs.IsDir(dir + "/gids")
	src.note(len(p.GIDs) > 0, dir, "gids")
	var na []string
	p.Counters, na = c.counters(subject, dir+"/counters")
	src.note(p.Counters != nil, dir, "counters")
	p.Unavailable = append(p.Unavailable, na...)
	p.HWCounters, na = c.counters(subject, dir+"/hw_counters")
	src.note(p.HWCounters != nil, dir, "hw_counters")
	for _, f := range na {
		p.Unavailable = append(p.Unavailable, "hw_counters/"+f)
	}
	if p.LinkLayer == "InfiniBand" && len(p.GIDs) > 0 && p.GIDs[0].Index == 0 {
		// An InfiniBand port's GID 0 is the subnet prefix and the port GUID.
		if a, err := netip.ParseAddr(p.GIDs[0].GID); err == nil {
			b := a.As16()
			p.PortGUID = host.GUID(binary.BigEndian.Uint64(b[8:]))
		}
	}
	for _, g := range p.GIDs {
		if g.NetDev != "" && !slices.Contains(p.NetDevs, g.NetDev) {
			p.NetDevs = append(p.NetDevs, g.NetDev)
		}
	}
	p.Sources = src.orNil()
	return p
}

// guid reads an optional GUID attribute (sysfs's 506b:4b03:0043:3a00).
func (c *collector) guid(subject, p string) host.GUID {
	s, ok := c.str(subject, p)
	if !ok || s == "" {
		return 0
	}
	g, err := host.ParseGUID(s)
	if err != nil {
		c.fail(subject, p, err)
	}
	return g
}

// gids reads the non-zero entries of a port's GID table. Types and ndevs
// of an entry can fail with EINVAL (no netdev, container namespaces); that
// leaves the field empty and is not an error.
func (c *collector) gids(subject, dir string) []host.GID {
	var out []host.GID
	names := c.list(subject, dir+"/gids")
	slices.SortFunc(names, naturalCompare)
	for _, name := range names {
		idx, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		s, err := c.fs.ReadString(dir + "/gids/" + name)
		if err != nil {
			continue
		}
		a, err := host.ParseGID(s)
		if err != nil {
			c.fail(subject, dir+"/gids/"+name, err)
			continue
		}
		if b := a.As16(); a.IsUnspecified() || [8]byte(b[8:]) == [8]byte{} {
			// Empty slots read as zeros, or as the fe80:: prefix with a zero
			// interface id on older kernels; perftest and NCCL skip both.
			continue
		}
		g := host.GID{Index: idx, GID: a.String()}
		g.Type, _ = c.fs.ReadString(dir + "/gid_attrs/types/" + name)
		g.NetDev, _ = c.fs.ReadString(dir + "/gid_attrs/ndevs/" + name)
		if v4, ok := host.GIDIPv4(a); ok {
			g.IPv4 = v4.String()
		}
		out = append(out, g)
	}
	return out
}

// counters reads every file of a counters directory. Files that are not
// numbers ("N/A (no PMA)") or fail to read (EINVAL on some ConnectX-7
// counters) are returned by name, not as errors: the port stays readable.
func (c *collector) counters(subject, dir string) (map[string]uint64, []string) {
	names := c.list(subject, dir)
	if len(names) == 0 {
		return nil, nil
	}
	vals := map[string]uint64{}
	var unavailable []string
	for _, n := range names {
		if n == "lifespan" {
			continue
		}
		s, err := c.fs.ReadString(dir + "/" + n)
		if err != nil {
			if !c.fs.IsDir(dir + "/" + n) {
				unavailable = append(unavailable, n)
			}
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			unavailable = append(unavailable, n)
			continue
		}
		vals[n] = v
	}
	return vals, unavailable
}

var digitsRE = lazyre.New(`\d+|\D+`)

// naturalCompare orders mlx5_2 before mlx5_10.
func naturalCompare(a, b string) int {
	pa, pb := digitsRE().FindAllString(a, -1), digitsRE().FindAllString(b, -1)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] == pb[i] {
			continue
		}
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			return cmp.Compare(na, nb)
		}
		return strings.Compare(pa[i], pb[i])
	}
	return cmp.Compare(len(pa), len(pb))
}

package hostcheck

// The RDMA device and port rules: driver and device present, port state
// (down by intent or by fault), rate against what is expected and what the
// NIC can do, link layer, the subnet manager, IPoIB mode and error counters.

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// rdmaDriverFix names the module that makes a driver's RDMA device.
var rdmaDriverFix = map[string]string{"mlx5_core": "mlx5_ib", "mlx4_core": "mlx4_ib", "bnxt_en": "bnxt_re", "ice": "irdma", "i40e": "irdma", "qede": "qedr"}

func rdmaDriver(rep *check.Reporter, s *host.Snapshot, o Options) {
	for i := range s.PCIDevices {
		d := &s.PCIDevices[i]
		if !s.RDMACapable(d) {
			continue
		}
		sub := d.Address.String()
		e := []check.Evidence{
			ev("device", fmt.Sprintf("%s %s:%s class %s", orUnread(host.DeviceName(d.Vendor, d.Device)), d.Vendor, d.Device, d.Class), readAtAll(s, d.Sources, "vendor", "device", "class")),
			ev("driver", orUnread(d.Driver), readAt(s, d.Sources, "driver")),
		}
		devs := s.RDMADevicesOf(d.Address)
		var f *check.Finding
		switch {
		case len(devs) > 0:
			f = rep.Pass(sub, "RDMA device %s", strings.Join(devs, ", "))
		case d.Driver == "vfio-pci":
			f = rep.Pass(sub, "bound to vfio-pci (passed through): its RDMA device lives in the guest")
		case d.PhysFn.IsValid() && d.Driver == "":
			f = rep.Pass(sub, "an unbound virtual function of %s: nothing uses it", d.PhysFn)
		case d.Driver == "":
			f = rep.Fail(sub, "RDMA-capable %s has no driver bound: no netdev, no RDMA device", orUnread(host.DeviceName(d.Vendor, d.Device)))
			f.Fix = []string{"modprobe mlx5_core mlx5_ib   # (mlx4_core mlx4_ib for ConnectX-3, qib for QLogic)", "if the module is missing for this kernel: reinstall MLNX_OFED/DOCA or the distribution's rdma-core for the running kernel"}
		default:
			mod := rdmaDriverFix[d.Driver]
			msg := fmt.Sprintf("driver %s is bound but there is no RDMA device", d.Driver)
			if mod != "" {
				loaded := "not loaded"
				switch {
				case len(s.Kernel.Modules) == 0:
					loaded = "unknown whether loaded: /proc/modules not read"
				case s.Kernel.HasModule(mod):
					loaded = "loaded, but made no device"
				}
				msg += fmt.Sprintf(" (%s: %s)", mod, loaded)
				e = append(e, ev(mod, loaded, "/proc/modules"))
			}
			f = rep.Fail(sub, "%s: no RDMA on this NIC", msg)
			f.Fix = []string{"modprobe " + cmp.Or(mod, "<the RDMA module of "+d.Driver+">"), "after a kernel update: reinstall MLNX_OFED/DOCA for the running kernel (dkms status; modinfo " + cmp.Or(mod, d.Driver) + ")", "rdma link show   # the device should appear"}
		}
		f.Evidence = append(e, ev("rdma devices", cmp.Or(strings.Join(devs, " "), "none"), deviceLinks(s, d.Address)))
	}
}

// deviceLinks is where the RDMA devices of a PCI function were found: their
// device links, or, with none, the RDMA class directory that holds none.
func deviceLinks(s *host.Snapshot, a host.PCIAddress) string {
	var out []string
	for _, r := range s.RDMADevices {
		if r.PCIAddress == a {
			out = append(out, readAt(s, r.Sources, "device"))
		}
	}
	return cmp.Or(strings.Join(out, " "), "/sys/class/infiniband")
}

func rdmaPresent(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) > 0 {
		rep.Pass("host", "%d RDMA devices", len(s.RDMADevices))
		return
	}
	if slices.ContainsFunc(s.PCIDevices, func(d host.PCIDevice) bool { return s.RDMACapable(&d) }) {
		return // rdma.driver names each function without its device
	}
	e := []check.Evidence{ev("rdma devices", "none", "/sys/class/infiniband"), ev("RDMA-capable PCI functions", "none", "/sys/bus/pci/devices")}
	var f *check.Finding
	switch {
	case o.expectsRDMA():
		f = rep.Fail("host", "no RDMA device at all, but RDMA is expected here (--expect-rate, --expect-link-layer, --expect-ports or --nhc)")
		f.Fix = append([]string{"check the NIC is seated and seen (lspci -d 15b3:)"}, rep.Entry().Fixes...)
	case len(s.PCIDevices) == 0:
		f = rep.Unknown("host", "no RDMA device, and no PCI devices were read to tell whether an RDMA NIC is there")
	default:
		// Without an expectation, a host without RDMA may be meant to be
		// one (a login node): say it loudly, but it is not a failure.
		f = rep.Warn("host", "no RDMA device and no RDMA-capable NIC: nothing RDMA to check (pass --expect-rate or --expect-link-layer to require RDMA)")
	}
	f.Evidence = e
}

func portState(rep *check.Reporter, s *host.Snapshot, o Options) {
	listCut := false
	for _, e := range s.Errors {
		if e.Subject == "rdma" {
			listCut = true
			// The device list itself was cut short: ports of devices not
			// listed are unknown, not fine.
			f := rep.Unknown("rdma devices", "the RDMA devices were not all read: %s", e.Error)
			f.Evidence = []check.Evidence{ev("rdma devices", e.Error, cmp.Or(e.Path, s.Tool, s.Source))}
			f.Fix = []string{"read the devices again (ibstat, or rdmalab doctor on the host) and judge the whole output; give --expect-ports DEV/PORT for the ports that must be up"}
		}
	}
	// noneUp: every port's state was read and none is up.
	noneUp := true
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			noneUp = noneUp && p.State != portstate.Active && p.State.Known()
		}
	}
	models, main := hostModels(s, listCut)
	for _, d := range s.RDMADevices {
		for _, e := range s.Errors {
			if e.Subject == d.Name && len(d.Ports) == 0 {
				// Listed, but its ports were not read (an output cut short).
				f := rep.Unknown(d.Name, "no ports were read for this device: %s", e.Error)
				f.Evidence = []check.Evidence{ev("ports", "none read", cmp.Or(e.Path, s.Tool, s.Source))}
				f.Fix = []string{fmt.Sprintf("give the whole output for %s (ibstat %s), or --expect-ports %s/1 if it is meant to be up", d.Name, d.Name, d.Name)}
				break
			}
		}
		for _, p := range d.Ports {
			sub := portSubject(d.Name, p.Port)
			e := []check.Evidence{ev("state", fmt.Sprintf("%d: %s", p.State.ID(), p.State.Sysfs()), readAt(s, p.Sources, "state")), ev("phys_state", fmt.Sprintf("%d: %s", p.PhysState.ID(), p.PhysState), readAt(s, p.Sources, "phys_state"))}
			var f *check.Finding
			switch {
			case !p.State.Known():
				f = rep.Unknown(sub, "port state could not be read")
				f.Fix = []string{fmt.Sprintf("ibstat %s %d (or cat /sys/class/infiniband/%s/ports/%d/state), and judge that", d.Name, p.Port, d.Name, p.Port)}
			case p.State == portstate.Active && (p.PhysState == portstate.LinkUp || !p.PhysState.Known()):
				f = rep.Pass(sub, "Active, LinkUp")
			case p.State == portstate.Active:
				// Active needs a physical link, whatever phys_state says.
				f = rep.Pass(sub, "Active (phys_state reads %q, not LinkUp; Active needs a physical link, so the link is up)", p.PhysState)
			case p.LinkLayer == "InfiniBand" && p.PhysState == portstate.LinkUp && (p.State == portstate.Init || p.State == portstate.Down):
				smLID := 0
				if p.SMLID != nil {
					smLID = *p.SMLID
				}
				st := p.State.Sysfs() // "INIT" is said "Init", "DOWN" "Down"
				msg, fix := NotActivated(st[:1]+strings.ToLower(st[1:]), isVF(s, d), smLID)
				f = rep.Fail(sub, "%s", msg)
				f.Fix = fix
			default:
				use, why := portInUse(s, d, p, o)
				e = append(e, why...)
				if use == useUnknown && noneUp && !listCut {
					// Whatever this port is for, no port of the host is up:
					// nothing here can carry RDMA traffic.
					f = rep.Fail(sub, "port is %s and no RDMA port of this host is up: nothing here can carry RDMA traffic", stateText(p))
					f.Fix = []string{"check the cable and the link partner (switch port enabled?)", fmt.Sprintf("ibstat %s %d", d.Name, p.Port)}
					break
				}
				if use == useUnknown {
					f = downByIntent(rep, s, d, p, models, main)
					e = append(e, f.Evidence...)
					break
				}
				if use == unused {
					f = rep.Pass(sub, "unused: %s / %s, and nothing says it should be up (%s)", p.State.Sysfs(), p.PhysState, why[0].Value)
					break
				}
				f = rep.Fail(sub, "port is %s / %s but is meant to be in use (%s): it carries no traffic", p.State.Sysfs(), p.PhysState, why[0].Value)
				f.Fix = []string{"check the cable and the link partner (switch port enabled?)", fmt.Sprintf("ibstat %s %d", d.Name, p.Port)}
			}
			f.Evidence = e
		}
	}
}

// modelCount is how many ports of one NIC model a host has, and how many
// of them are up.
type modelCount struct {
	ports, up int
	ib        bool
}

// hostModels groups a host's ports by NIC model, fleet-less evidence of
// intent: the model most ports belong to is the host's main RDMA NIC
// (eight rail NICs beside two management ones). main is "" when it cannot
// be told: a port's state was not read, the list was cut, or two models
// tie (InfiniBand beats Ethernet in a tie: management NICs are Ethernet).
func hostModels(s *host.Snapshot, listCut bool) (models map[string]*modelCount, main string) {
	models = map[string]*modelCount{}
	allKnown := !listCut
	for _, d := range s.RDMADevices {
		m := nicModel(s, d)
		for _, p := range d.Ports {
			c := models[m]
			if c == nil {
				c = &modelCount{}
				models[m] = c
			}
			c.ports++
			if p.State == portstate.Active {
				c.up++
			}
			c.ib = c.ib || p.LinkLayer == "InfiniBand"
			allKnown = allKnown && p.State.Known()
		}
	}
	if !allKnown || len(models) == 0 {
		return models, ""
	}
	better := func(a, b *modelCount) int {
		if a.ports != b.ports {
			return cmp.Compare(a.ports, b.ports)
		}
		switch {
		case a.ib && !b.ib:
			return 1
		case b.ib && !a.ib:
			return -1
		}
		return 0
	}
	tie := false
	for m, c := range models {
		if m == "" {
			continue
		}
		switch {
		case main == "" || better(c, models[main]) > 0:
			main, tie = m, false
		case better(c, models[main]) == 0:
			tie = true
		}
	}
	if tie {
		return models, ""
	}
	return models, main
}

// sameCardUp is an Active port on the same card as port p of device d:
// another port of d (mlx4 dual-port devices), or a port of a device with
// the same system image GUID or another function of the same PCI slot
// (mlx5 makes one device per port).
func sameCardUp(s *host.Snapshot, d host.RDMADevice, p host.RDMAPort) (string, bool) {
	for _, o := range s.RDMADevices {
		same := o.Name == d.Name || (!d.SysImageGUID.IsZero() && o.SysImageGUID == d.SysImageGUID) ||
			(d.PCIAddress.IsValid() && o.PCIAddress.IsValid() && o.PCIAddress.Slot() == d.PCIAddress.Slot())
		if !same {
			continue
		}
		for _, q := range o.Ports {
			if (o.Name != d.Name || q.Port != p.Port) && q.State == portstate.Active {
				return portSubject(o.Name, q.Port), true
			}
		}
	}
	return "", false
}

// downByIntent judges a down port nothing marks as used or unused (no
// counters, no --expect-ports: a saved ibstat) by what the host's other
// ports say of intent. A card whose other port is up has a spare; a port
// Disabled was set down on purpose; every port of the host's main NIC model
// down is a failure whatever the other NICs do; a main-model port Polling
// beside up siblings wants a link it does not find.
func downByIntent(rep *check.Reporter, s *host.Snapshot, d host.RDMADevice, p host.RDMAPort, models map[string]*modelCount, main string) *check.Finding {
	sub := portSubject(d.Name, p.Port)
	m := nicModel(s, d)
	c := models[m]
	ask := fmt.Sprintf("give --expect-ports %s/%d if it is meant to be up", d.Name, p.Port)
	cableFix := []string{"check the cable, the transceiver and the link partner (switch port enabled?)", fmt.Sprintf("ibstat %s %d", d.Name, p.Port)}
	isMain := m != "" && m == main
	switch {
	case isMain && c.up == 0:
		others := 0
		for o, oc := range models {
			if o != m {
				others += oc.up
			}
		}
		f := rep.Fail(sub, "port is %s: all %d ports of this host's %s NICs are down (%d port(s) of other models are up): the host's main RDMA NICs carry no traffic", stateText(p), c.ports, m, others)
		f.Fix = cableFix
		return f
	}
	if sib, ok := sameCardUp(s, d, p); ok {
		why := "a spare port"
		switch p.PhysState {
		case portstate.Polling:
			why = "a spare port left uncabled (Polling: no link partner)"
		case portstate.Disabled:
			why = "a spare port disabled on purpose"
		}
		return rep.Pass(sub, "unused: %s while %s on the same card is Active: most likely %s", stateText(p), sib, why)
	}
	upOf := func() string {
		return fmt.Sprintf("%d of %d ports of this host's %s NICs are up", c.up, c.ports, m)
	}
	switch {
	case p.PhysState == portstate.Disabled && isMain:
		f := rep.Warn(sub, "port is %s while %s: most likely set down on purpose, but a rail NIC down leaves its GPU without RDMA", stateText(p), upOf())
		f.Fix = []string{ask}
		return f
	case p.PhysState == portstate.Disabled:
		return rep.Pass(sub, "unused: %s, most likely disabled on purpose (a %s NIC, not this host's main RDMA NIC model%s)", stateText(p), m, mainText(main))
	case p.PhysState.Known() && isMain:
		f := rep.Fail(sub, "port is %s while %s: it is enabled and finds no link partner", stateText(p), upOf())
		f.Fix = cableFix
		return f
	case p.PhysState.Known():
		f := rep.Warn(sub, "port is %s: enabled but without a link partner, on a %s NIC (not this host's main RDMA NIC model%s)", stateText(p), m, mainText(main))
		f.Fix = append([]string{ask}, cableFix...)
		return f
	case isMain:
		f := rep.Warn(sub, "port is %s while %s (the source shows no physical state, so whether it was set down on purpose is not known)", stateText(p), upOf())
		f.Fix = []string{ask}
		return f
	case main != "":
		return rep.Pass(sub, "unused: %s on a %s NIC while this host's main RDMA NICs%s are up", stateText(p), m, mainText(main))
	}
	f := rep.Unknown(sub, "port is %s and nothing says whether it is meant to be in use (no counters, no --expect-ports, no main NIC model to compare with)", stateText(p))
	f.Fix = []string{ask}
	return f
}

func mainText(main string) string {
	if main == "" {
		return ""
	}
	return " " + main
}

// stateText is "DOWN / Disabled", or the state alone when the source
// shows no physical state (ibv_devinfo without -v).
func stateText(p host.RDMAPort) string {
	if !p.PhysState.Known() {
		return p.State.Sysfs()
	}
	return p.State.Sysfs() + " / " + p.PhysState.String()
}

// portInUse decides whether a port that is not up is meant to be: the
// user listed it, it carried data or lost its link since boot (so it was
// cabled), or its netdev has an address. A second port left uncabled on
// purpose has none of these. The first evidence says why.
func portInUse(s *host.Snapshot, d host.RDMADevice, p host.RDMAPort, o Options) (portUse, []check.Evidence) {
	if listed, hasList := o.expectedPort(d.Name, p.Port); hasList {
		if listed {
			return used, []check.Evidence{ev("expected", "listed in --expect-ports", "--expect-ports")}
		}
		return unused, []check.Evidence{ev("expected", "not in --expect-ports", "--expect-ports")}
	}
	if p.LinkLayer == "Ethernet" && len(p.NetDevs) > 0 && !hasAddress(p) && allAdminDown(s, p.NetDevs) {
		// Taken down by hand and given no address: whatever it carried
		// before, nobody means it to run now.
		return unused, []check.Evidence{ev("netdev", strings.Join(p.NetDevs, " ")+" set down (no IFF_UP) with no address", readAt(s, s.NetDev(p.NetDevs[0]).Sources, "flags"))}
	}
	for _, c := range counters.Select(counters.PortCounters, counters.Data) {
		if v := p.Counters[c.Sysfs]; v > 0 {
			return used, []check.Evidence{ev(c.Sysfs, fmt.Sprintf("%s = %d since boot: it carried data", c.Sysfs, v), readAt(s, p.Sources, "counters/"+c.Sysfs))}
		}
	}
	if v := p.Counters["link_downed"]; v > 0 {
		return used, []check.Evidence{ev("link_downed", fmt.Sprintf("link_downed = %d since boot: the link was up and went down", v), readAt(s, p.Sources, "counters/link_downed"))}
	}
	for _, g := range p.GIDs {
		if a := gidAddress(g); a != "" {
			return used, []check.Evidence{ev("address", a+" on "+g.NetDev+": the netdev is configured for use", readAt(s, p.Sources, fmt.Sprintf("gids/%d", g.Index)))}
		}
	}
	if len(p.Counters) == 0 {
		return useUnknown, []check.Evidence{ev("counters", "not readable", readAt(s, p.Sources, "counters"))}
	}
	return unused, []check.Evidence{ev("in use", "no data or link-down counts since boot, no address, not listed by --expect-ports", readAt(s, p.Sources, "counters"))}
}

// gidAddress is the IP address a RoCE GID carries (IPv4, or an IPv6 that
// is not link-local), or "".
func gidAddress(g host.GID) string {
	if g.IPv4 != "" {
		return g.IPv4
	}
	if a, err := netip.ParseAddr(g.GID); err == nil && !a.IsLinkLocalUnicast() && g.NetDev != "" {
		return a.String()
	}
	return ""
}

func hasAddress(p host.RDMAPort) bool {
	return slices.ContainsFunc(p.GIDs, func(g host.GID) bool { return gidAddress(g) != "" })
}

// allAdminDown reports netdevs all known to be set down.
func allAdminDown(s *host.Snapshot, names []string) bool {
	for _, n := range names {
		nd := s.NetDev(n)
		if nd == nil || nd.AdminUp == nil || *nd.AdminUp {
			return false
		}
	}
	return true
}

// portUse is whether a port that is not up is meant to be.
type portUse int

const (
	unused portUse = iota
	used
	useUnknown
)

func activePorts(s *host.Snapshot, fn func(d host.RDMADevice, p host.RDMAPort)) {
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			if p.State == portstate.Active {
				fn(d, p)
			}
		}
	}
}

func portRateExpected(rep *check.Reporter, s *host.Snapshot, o Options) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		layer, _ := linkrate.SysfsLayer(p.LinkLayer)
		want, ok := o.rateExpectation(s, d, layer)
		if !ok {
			return
		}
		sub := portSubject(d.Name, p.Port)
		e := []check.Evidence{ev("rate", p.Rate.Raw, readAt(s, p.Sources, "rate")), ev("expected", want.Rate.String(), want.Source)}
		var f *check.Finding
		switch {
		case p.RateGbps == 0:
			f = rep.Unknown(sub, "rate could not be read")
		case p.RateGbps < want.Rate.Gbps:
			f = rep.Fail(sub, "runs at %g Gb/s (%s), expected %s", p.RateGbps, p.Rate.Raw, want)
		default:
			f = rep.Pass(sub, "%g Gb/s as expected (%s)", p.RateGbps, want.Source)
		}
		f.Evidence = e
	})
}

// nicMax is the fastest a port of this part can run on a link layer, and
// where that is known from: the board id (exact part), or the family when
// the port already runs at the family's best. ok is false when only the
// family is known and the port runs below its best: some boards of the
// family are slower (a dual-port 25G ConnectX-4 Lx), so the part's own
// maximum is unknown.
func nicMax(d host.RDMADevice, pci *host.PCIDevice, layer linkrate.Layer, rateGbps float64) (maxGbps float64, part, source string, known bool) {
	if b, ok := linkrate.BoardOf(d.BoardID); ok {
		return b.MaxGbps, b.Part, "board_id " + d.BoardID, true
	}
	if pci == nil {
		return 0, "", "", false
	}
	m, ok := linkrate.ModelOf(pci.Vendor, pci.Device)
	if !ok || m.MaxGbps(layer) == 0 {
		return 0, "", "", false
	}
	family := m.MaxGbps(layer)
	return family, m.Name, "device id " + pci.Device + " (family best)", rateGbps >= family
}

func portRateNICMax(rep *check.Reporter, s *host.Snapshot, o Options) {
	models, main := hostModels(s, false)
	// sameRate: every active port of a model runs at one rate.
	rates := map[string]map[float64]bool{}
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		m := nicModel(s, d)
		if rates[m] == nil {
			rates[m] = map[float64]bool{}
		}
		rates[m][p.RateGbps] = true
	})
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.RateGbps == 0 {
			return
		}
		layer, _ := linkrate.SysfsLayer(p.LinkLayer)
		pci := s.PCI(d.PCIAddress)
		max, part, source, known := nicMax(d, pci, layer, p.RateGbps)
		sub := portSubject(d.Name, p.Port)
		e := []check.Evidence{ev("rate", p.Rate.Raw, readAt(s, p.Sources, "rate")), ev("board_id", orUnread(d.BoardID), readAt(s, d.Sources, "board_id"))}
		var f *check.Finding
		switch {
		case part == "":
			// No model at all (another vendor, no PCI function in the
			// capture): nothing to compare with, and nothing to claim.
			return
		case p.RateGbps < max && main != "" && nicModel(s, d) != main && len(rates[nicModel(s, d)]) == 1 && models[main].up > 0:
			// A second NIC model whose every port runs at one lower rate,
			// beside the host's main RDMA NICs: a network of its own
			// (management, NVLink management on GB200/B300 boards at
			// 100G), not a slow link.
			f = rep.Pass(sub, "runs at %g Gb/s like every %s port of this host, below this %s's %g Gb/s: a network of its own beside the host's main %s NICs (management), not a slow link", p.RateGbps, nicModel(s, d), part, max, main)
		case !known:
			f = rep.Unknown(sub, "runs at %g Gb/s; the %s family reaches %g Gb/s, but some of its boards are slower and board_id %q is not in the board table", p.RateGbps, part, max, d.BoardID)
		case p.RateGbps < max:
			f = rep.Warn(sub, "runs at %g Gb/s; this %s can do %g Gb/s (slower switch or cable?)", p.RateGbps, part, max)
		default:
			f = rep.Pass(sub, "%g Gb/s, the best a %s does", p.RateGbps, part)
		}
		e = append(e, ev("part maximum", fmt.Sprintf("%g Gb/s", max), source))
		f.Evidence = e
	})
}

func orUnread(v string) string {
	if v == "" {
		return "not read"
	}
	return v
}

func portLinkLayer(rep *check.Reporter, s *host.Snapshot, o Options) {
	want := o.Expect.Layer
	if want == "" {
		return
	}
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			sub := portSubject(d.Name, p.Port)
			layer, ok := linkrate.SysfsLayer(p.LinkLayer)
			var f *check.Finding
			switch {
			case ok && layer == want:
				f = rep.Pass(sub, "%s as expected", layer)
			case !ok:
				f = rep.Unknown(sub, "link layer could not be read")
			default:
				f = rep.Fail(sub, "link layer is %s (%s), expected %s", layer, p.LinkLayer, want)
				m, known := partModel(s, d)
				switch {
				case known && want == linkrate.InfiniBand && m.MaxSpeed == "":
					// Never advise a mode the part does not have.
					f.Message += fmt.Sprintf("; %s is Ethernet-only: it has no InfiniBand mode", m.Name)
					f.Fix = []string{fmt.Sprintf("%s cannot run InfiniBand: put this port on a VPI part (ConnectX-6/7 VPI), or expect RoCE here (--expect-link-layer RoCE)", m.Name)}
				case known && want != linkrate.InfiniBand && m.MaxEthGbps == 0:
					f.Message += fmt.Sprintf("; %s is InfiniBand-only: it has no Ethernet mode", m.Name)
					f.Fix = []string{fmt.Sprintf("%s cannot run Ethernet: use a VPI or Ethernet part for RoCE, or expect InfiniBand here (--expect-link-layer IB)", m.Name)}
				default:
					mode := "2"
					if want == linkrate.InfiniBand {
						mode = "1"
					}
					dev := d.Name // mlxconfig takes the RDMA device name as well as the PCI address
					if d.PCIAddress.IsValid() {
						dev = d.PCIAddress.String()
					}
					f.Fix = []string{fmt.Sprintf("mlxconfig -d %s set LINK_TYPE_P%d=%s && reboot (%s is VPI: it has both modes)", dev, cardPort(s, d, p), mode, cmp.Or(m.Name, "if the part is VPI"))}
				}
			}
			f.Evidence = []check.Evidence{ev("link_layer", p.LinkLayer, readAt(s, p.Sources, "link_layer")), ev("expected", string(want), cmp.Or(o.Expect.Source, "--expect-link-layer"))}
		}
	}
}

// partModel is a device's part from the model table: by its PCI ids, else
// by the HCA type a tool printed (MT4125 is device 0x101d).
func partModel(s *host.Snapshot, d host.RDMADevice) (linkrate.Model, bool) {
	if pci := s.PCI(d.PCIAddress); pci != nil {
		if m, ok := linkrate.ModelOf(pci.Vendor, pci.Device); ok {
			return m, true
		}
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(d.HCAType, "MT")); err == nil && strings.HasPrefix(d.HCAType, "MT") {
		return linkrate.ModelOf("0x15b3", fmt.Sprintf("0x%04x", n))
	}
	return linkrate.Model{}, false
}

// cardPort is the port of the card mlxconfig's LINK_TYPE_PN means: the
// port number on a device with several (mlx4), else (mlx5 makes one device
// per port) the PCI function, else the device's rank among those of its
// card (one system image GUID) by node GUID.
func cardPort(s *host.Snapshot, d host.RDMADevice, p host.RDMAPort) int {
	if len(d.Ports) > 1 {
		return p.Port
	}
	if d.PCIAddress.IsValid() {
		return int(d.PCIAddress.Function) + 1
	}
	n := 1
	for _, o := range s.RDMADevices {
		if !d.SysImageGUID.IsZero() && o.SysImageGUID == d.SysImageGUID && o.NodeGUID < d.NodeGUID {
			n++
		}
	}
	return n
}

func ibSM(rep *check.Reporter, s *host.Snapshot, o Options) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "InfiniBand" {
			return
		}
		sub := portSubject(d.Name, p.Port)
		var f *check.Finding
		switch {
		case p.SMLID == nil || p.LID == nil:
			f = rep.Unknown(sub, "lid/sm_lid not in the capture")
		case *p.SMLID == 0:
			f = rep.Fail(sub, "no subnet manager: sm_lid is 0")
			f.Fix = []string{"systemctl enable --now opensm   # on exactly one node", "sminfo"}
		case *p.LID == 0 || *p.LID >= 0xc000:
			f = rep.Fail(sub, "port has no valid LID (0x%x)", *p.LID)
			f.Fix = []string{"check the SM log (/var/log/opensm.log) for this port GUID"}
		default:
			f = rep.Pass(sub, "LID %d, SM at LID %d", *p.LID, *p.SMLID)
		}
		if p.LID != nil && p.SMLID != nil {
			f.Evidence = []check.Evidence{ev("lid", strconv.Itoa(*p.LID), readAt(s, p.Sources, "lid")), ev("sm_lid", strconv.Itoa(*p.SMLID), readAt(s, p.Sources, "sm_lid"))}
		}
	})
}

func ipoibMode(rep *check.Reporter, s *host.Snapshot, o Options) {
	want := o.ExpectIPoIB
	judged := 0
	fix := func(name string) []string {
		return fixesWith(rep.Entry().Fixes, "<ib conn>", "\"$(nmcli -g GENERAL.CONNECTION device show "+name+")\"")
	}
	for _, n := range s.NetDevs {
		if n.Type != 32 || n.IPoIBMode == "" {
			continue
		}
		judged++
		var f *check.Finding
		switch {
		case want != "" && n.IPoIBMode != want:
			f = rep.Fail(n.Name, "%s mode, but --expect-ipoib %s: seed 002's objective is connected mode with MTU 65520", n.IPoIBMode, want)
			f.Fix = fix(n.Name)
		case n.IPoIBMode == "connected" && n.MTUBytes < 65520:
			outcome := check.Warn
			if want == "connected" {
				outcome = check.Fail
			}
			f = rep.Report(outcome, n.Name, "connected mode with MTU %d: the point of connected mode is MTU 65520", n.MTUBytes)
			f.Fix = fix(n.Name)
		default:
			f = rep.Pass(n.Name, "%s mode, MTU %d", n.IPoIBMode, n.MTUBytes)
		}
		f.Evidence = []check.Evidence{ev("mode", n.IPoIBMode, readAt(s, n.Sources, "mode")), ev("mtu", strconv.Itoa(n.MTUBytes), readAt(s, n.Sources, "mtu"))}
		if want != "" {
			f.Evidence = append(f.Evidence, ev("expected mode", want, "--expect-ipoib"))
		}
	}
	if want != "" && judged == 0 {
		f := rep.Fail("IPoIB", "--expect-ipoib %s, but the host has no IPoIB interface (is ib_ipoib loaded?)", want)
		f.Fix = []string{"modprobe ib_ipoib", "nmcli con add type infiniband ifname ib0 infiniband.transport-mode " + want}
	}
}

func portErrors(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			sub := portSubject(d.Name, p.Port)
			var bad, unreadable []check.Evidence
			read := 0
			for _, c := range errorCounters() {
				vals, dir := p.Counters, "counters/"
				if c.Family == counters.HWCounters {
					vals, dir = p.HWCounters, "hw_counters/"
				}
				src := readAt(s, p.Sources, dir+c.Sysfs)
				if slices.Contains(p.Unavailable, strings.TrimPrefix(dir, "counters/")+c.Sysfs) {
					unreadable = append(unreadable, ev(c.Sysfs, "not readable", src))
					continue
				}
				v, ok := vals[c.Sysfs]
				if !ok {
					continue
				}
				read++
				switch {
				case c.Saturated(v):
					bad = append(bad, ev(c.Sysfs, fmt.Sprintf("%d (saturated: at least this many)", v), src))
				case v > 0:
					bad = append(bad, ev(c.Sysfs, strconv.FormatUint(v, 10), src))
				}
			}
			var f *check.Finding
			switch {
			case len(bad) > 0:
				var names []string
				for _, b := range bad {
					names = append(names, b.What+"="+b.Value)
				}
				f = rep.Warn(sub, "non-zero error counters since boot: %s", strings.Join(names, ", "))
				f.Evidence = append(bad, unreadable...)
				f.Fix = append([]string{"take a second snapshot later and compare: rising counters mean a live problem"}, rep.Entry().Fixes...)
			case len(unreadable) > 0 && read == 0:
				f = rep.Unknown(sub, "none of the %d error counters could be read (%s)", len(unreadable), evidenceNames(unreadable))
				f.Evidence = unreadable
			case len(unreadable) > 0:
				// A counter that cannot be read may be the one that counts:
				// never call the port clean on the others alone.
				f = rep.Unknown(sub, "%d error counters could not be read (%s); the %d that could are zero", len(unreadable), evidenceNames(unreadable), read)
				f.Evidence = unreadable
			case read == 0:
				f = rep.Unknown(sub, "no error counters readable")
				f.Evidence = []check.Evidence{ev("counters", "none", readAt(s, p.Sources, "counters"))}
			default:
				f = rep.Pass(sub, "all %d error counters read are zero", read)
			}
		}
	}
}

// errorCounters are the counters whose non-zero value means trouble, from
// the one counter table.
func errorCounters() []counters.Counter {
	return append(counters.Select(counters.PortCounters, counters.Error), counters.Select(counters.HWCounters, counters.Error)...)
}

func evidenceNames(es []check.Evidence) string {
	var n []string
	for _, e := range es {
		n = append(n, e.What)
	}
	return strings.Join(firstN(n, 4), ", ")
}

// isVF reports an SR-IOV virtual function: its PCI function names a
// physical one, or its device id is a VF's.
func isVF(s *host.Snapshot, d host.RDMADevice) bool {
	if pd := s.PCI(d.PCIAddress); pd != nil && (pd.PhysFn.IsValid() || strings.HasSuffix(host.DeviceName(pd.Vendor, pd.Device), " VF")) {
		return true
	}
	// A saved ibstat has no PCI tree, only its CA type: "MT4120" is the
	// decimal device id (0x1018, ConnectX-5 VF).
	if n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(d.HCAType), "MT")); err == nil {
		return strings.HasSuffix(host.DeviceName("0x15b3", fmt.Sprintf("0x%04x", n)), " VF")
	}
	return false
}

// NotActivated explains an InfiniBand port whose physical link is up but
// whose logical state is not Active (state: Init or Down). With an SM LID
// the subnet has an SM: on a virtual function it is the SM not activating
// the virtual port (SR-IOV needs virtualisation in the SM and a GUID and
// policy for the VF), on a physical port the SM not configuring it;
// without one, no SM runs. judge says the same for saved ibstat.
func NotActivated(state string, vf bool, smLID int) (string, []string) {
	switch {
	case vf && smLID > 0:
		return fmt.Sprintf("virtual function %s with its physical link up and an SM answering at LID %d: the SM has not activated this virtual port (not a missing SM)", state, smLID),
			[]string{"on the hypervisor, give the VF a GUID and a policy: echo <guid> > /sys/class/infiniband/<pf>/device/sriov/<vf>/node (and port); echo Follow > …/sriov/<vf>/policy; rebind the VF",
				"enable virtualisation in the SM: virt_enabled 2 in opensm.conf (or the UFM/switch SM's SR-IOV setting), then restart it"}
	case vf:
		return fmt.Sprintf("virtual function %s with its physical link up and no SM LID: the SM has not activated this virtual port, or no SM runs", state),
			[]string{"sminfo   # is there a master SM?", "enable virtualisation in the SM (virt_enabled 2 in opensm.conf) and give the VF a GUID and policy on the hypervisor"}
	case smLID > 0:
		return fmt.Sprintf("link is up but the port is %s although an SM answers at LID %d: the SM has not configured this port", state, smLID),
			[]string{"check the SM log (/var/log/opensm.log) for this port GUID", "sminfo; ibportstate to query the port"}
	}
	return fmt.Sprintf("link is up but the port is %s: no subnet manager has configured it", state),
		[]string{"systemctl enable --now opensm   # on exactly one node", "sminfo   # shows the master SM once it runs"}
}

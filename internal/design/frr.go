package design

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// FRRRequest are the flags of `design frr`, as given.
type FRRRequest struct {
	Spines, Leaves int
	// SpineASN is shared by every spine; leaf i gets LeafASNBase + i.
	SpineASN    uint32
	LeafASNBase uint32
	// Loopbacks holds the router ids: spines first, then leaves.
	Loopbacks string // "10.0.0.0/24"
	// LeafNetworks is cut into one LeafPrefixLen subnet per leaf, the
	// hosts' network the leaf advertises; the leaf takes its first address.
	LeafNetworks  string // "10.1.0.0/16"
	LeafPrefixLen int    // 24
	SpineName     string // "spine" → spine01
	LeafName      string // "leaf" → leaf01
	// PortPrefix names the fabric ports: leaf port j faces spine j, spine
	// port i faces leaf i ("swp" → swp1, as on Cumulus/SONiC-style boxes).
	PortPrefix string
	// HostInterface is the leaf's host-facing interface (a bridge or bond).
	HostInterface string
}

// FRRSwitch is one switch of the routed Clos.
type FRRSwitch struct {
	Name     string        `json:"name"`
	Role     string        `json:"role"` // spine, leaf
	ASN      uint32        `json:"asn"`
	RouterID netip.Addr    `json:"router_id"`
	Network  *netip.Prefix `json:"network,omitempty"` // a leaf's hosts
	Gateway  *netip.Addr   `json:"gateway,omitempty"` // the leaf's address on it
	// Ports maps each fabric port to the switch and port at its far end.
	Ports []FRRPort `json:"ports"`
	File  string    `json:"file"`
}

// FRRPort is one BGP-unnumbered fabric port.
type FRRPort struct {
	Name     string `json:"name"`
	Peer     string `json:"peer"`
	PeerPort string `json:"peer_port"`
}

// FRRClos is the generated design: the switches and their config files.
type FRRClos struct {
	Calculator   string      `json:"calculator"` // "frr"
	Spines       int         `json:"spines"`
	Leaves       int         `json:"leaves"`
	MaximumPaths int         `json:"maximum_paths"`
	Switches     []FRRSwitch `json:"switches"`
	Figures      []Figure    `json:"figures"`
	Reasoning    []string    `json:"reasoning"`
	// Files are the config texts by file name, in Switches order.
	Files []File `json:"-"`
}

// File is one generated file.
type File struct {
	Name    string
	Content []byte
}

// Private ASN ranges (RFC 6996).
const (
	privateASN16Low  = 64512
	privateASN16High = 65534
	privateASN32Low  = 4200000000
	privateASN32High = 4294967294
)

func privateASN(a uint32) bool {
	return a >= privateASN16Low && a <= privateASN16High || a >= privateASN32Low && a <= privateASN32High
}

var nameRE = lazyre.New(`^[a-z][a-z0-9-]{0,30}$`)

// ifnameMax is Linux's IFNAMSIZ − 1.
const ifnameMax = 15

// PlanFRR designs a BGP-unnumbered routed Clos and renders one FRR config
// per switch.
func PlanFRR(r FRRRequest) (*FRRClos, error) {
	if r.Spines < 1 || r.Spines > 64 {
		return nil, inputErr("--spines", "%d: want 1 to 64 spines (FRR's ECMP is at most 64 paths)", r.Spines)
	}
	if r.Leaves < 1 || r.Leaves > 1024 {
		return nil, inputErr("--leaves", "%d: want 1 to 1024 leaves", r.Leaves)
	}
	for _, n := range []struct{ flag, v string }{{"--spine-name", r.SpineName}, {"--leaf-name", r.LeafName}, {"--port-prefix", r.PortPrefix}, {"--host-interface", r.HostInterface}} {
		if !nameRE().MatchString(n.v) {
			return nil, inputErr(n.flag, "%q: want a lower-case name: a letter, then letters, digits or '-' (at most 31)", n.v)
		}
	}
	if r.SpineName == r.LeafName {
		return nil, inputErr("--leaf-name", "%q is also the spine name: names must be unique", r.LeafName)
	}
	if port := r.PortPrefix + strconv.Itoa(max(r.Spines, r.Leaves)); len(port) > ifnameMax {
		return nil, inputErr("--port-prefix", "%q: port %s is longer than Linux's %d-character interface names", r.PortPrefix, port, ifnameMax)
	}
	if len(r.HostInterface) > ifnameMax {
		return nil, inputErr("--host-interface", "%q: longer than Linux's %d-character interface names", r.HostInterface, ifnameMax)
	}
	if strings.HasPrefix(r.HostInterface, r.PortPrefix) && isDigits(r.HostInterface[len(r.PortPrefix):]) {
		return nil, inputErr("--host-interface", "%q collides with the fabric ports %s1, %s2, …", r.HostInterface, r.PortPrefix, r.PortPrefix)
	}
	if !privateASN(r.SpineASN) {
		return nil, inputErr("--spine-asn", "%d is not a private ASN (RFC 6996: %d–%d or %d–%d)", r.SpineASN, privateASN16Low, privateASN16High, privateASN32Low, privateASN32High)
	}
	last := uint64(r.LeafASNBase) + uint64(r.Leaves) - 1
	if !privateASN(r.LeafASNBase) || last > 1<<32-1 || !privateASN(uint32(last)) || (r.LeafASNBase <= privateASN16High) != (last <= privateASN16High) {
		return nil, inputErr("--leaf-asn", "leaves %d–%d do not all fall in one private ASN range (RFC 6996: %d–%d or %d–%d); for many leaves use --leaf-asn %d",
			r.LeafASNBase, last, privateASN16Low, privateASN16High, privateASN32Low, privateASN32High, privateASN32Low)
	}
	if uint64(r.SpineASN) >= uint64(r.LeafASNBase) && uint64(r.SpineASN) <= last {
		return nil, inputErr("--spine-asn", "%d falls inside the leaves' ASNs %d–%d", r.SpineASN, r.LeafASNBase, last)
	}
	lo, err := netip.ParsePrefix(r.Loopbacks)
	if err != nil || !lo.Addr().Is4() || lo.Masked() != lo {
		return nil, inputErr("--loopbacks", "%q: want an IPv4 network such as 10.0.0.0/24", r.Loopbacks)
	}
	if need := r.Spines + r.Leaves; hostsIn(lo) < need {
		return nil, inputErr("--loopbacks", "%s holds %d router ids, %d switches need one each", lo, hostsIn(lo), need)
	}
	nets, err := netip.ParsePrefix(r.LeafNetworks)
	if err != nil || !nets.Addr().Is4() || nets.Masked() != nets {
		return nil, inputErr("--leaf-networks", "%q: want an IPv4 network such as 10.1.0.0/16", r.LeafNetworks)
	}
	if r.LeafPrefixLen < nets.Bits() || r.LeafPrefixLen > 30 {
		return nil, inputErr("--leaf-prefix-len", "/%d: want from /%d (the whole --leaf-networks) to /30", r.LeafPrefixLen, nets.Bits())
	}
	if n := 1 << (r.LeafPrefixLen - nets.Bits()); n < r.Leaves {
		return nil, inputErr("--leaf-networks", "%s holds %d /%d networks, %d leaves need one each", nets, n, r.LeafPrefixLen, r.Leaves)
	}
	if lo.Overlaps(nets) {
		return nil, inputErr("--loopbacks", "%s overlaps --leaf-networks %s", lo, nets)
	}

	c := &FRRClos{Calculator: "frr", Spines: r.Spines, Leaves: r.Leaves, MaximumPaths: r.Spines}
	sw := func(i int) int { return max(2, len(strconv.Itoa(i))) }
	spineName := func(i int) string { return fmt.Sprintf("%s%0*d", r.SpineName, sw(r.Spines), i+1) }
	leafName := func(i int) string { return fmt.Sprintf("%s%0*d", r.LeafName, sw(r.Leaves), i+1) }
	port := func(i int) string { return r.PortPrefix + strconv.Itoa(i+1) }
	for s := 0; s < r.Spines; s++ {
		x := FRRSwitch{Name: spineName(s), Role: "spine", ASN: r.SpineASN, RouterID: nthAddr(lo, 1+s)}
		for l := 0; l < r.Leaves; l++ {
			x.Ports = append(x.Ports, FRRPort{Name: port(l), Peer: leafName(l), PeerPort: port(s)})
		}
		c.Switches = append(c.Switches, x)
	}
	for l := 0; l < r.Leaves; l++ {
		x := FRRSwitch{Name: leafName(l), Role: "leaf", ASN: r.LeafASNBase + uint32(l), RouterID: nthAddr(lo, 1+r.Spines+l)}
		n := netip.PrefixFrom(nthAddr(nets, l<<(32-r.LeafPrefixLen)), r.LeafPrefixLen)
		gw := n.Addr().Next()
		x.Network, x.Gateway = &n, &gw
		for s := 0; s < r.Spines; s++ {
			x.Ports = append(x.Ports, FRRPort{Name: port(s), Peer: spineName(s), PeerPort: port(l)})
		}
		c.Switches = append(c.Switches, x)
	}
	for i := range c.Switches {
		x := &c.Switches[i]
		x.File = x.Name + ".conf"
		c.Files = append(c.Files, File{Name: x.File, Content: []byte(frrConfig(*x, r, c))})
	}
	c.Figures = []Figure{
		figure("switches", float64(r.Spines+r.Leaves), "", "spines + leaves", fmt.Sprintf("%d + %d", r.Spines, r.Leaves)),
		figure("BGP sessions", float64(r.Spines*r.Leaves), "", "spines × leaves (one per fabric link)", fmt.Sprintf("%d × %d", r.Spines, r.Leaves)),
		figure("ECMP paths between leaves", float64(r.Spines), "", "spines (maximum-paths on the leaves)", strconv.Itoa(r.Spines)),
		figure("leaf ASNs", float64(r.Leaves), "", "leaf ASN base + i", fmt.Sprintf("%d … %d", r.LeafASNBase, last)),
	}
	c.Reasoning = []string{
		"BGP unnumbered: every fabric port peers over its IPv6 link-local address (neighbor PORT interface, remote-as external), so no per-link /31s are planned or configured; IPv4 routes use the peer's link-local next hop (RFC 8950, extended next hop).",
		fmt.Sprintf("Each leaf is its own AS (%d + i); the spines share AS %d, as RFC 7938 §5.2.1 recommends: a path leaf → spine → leaf → spine carries the spines' AS twice and is dropped by BGP's loop check, so no valley routes and no path hunting when a link fails.", r.LeafASNBase, r.SpineASN),
		fmt.Sprintf("Leaves set maximum-paths %d: every other leaf's network is reached through all %d spines at once (ECMP, per-flow hashing).", r.Spines, r.Spines),
		"Each switch advertises its loopback (/32, also its router id) and a leaf its hosts' network with network statements, not redistribute connected, so nothing else leaks into the fabric.",
		"'frr defaults datacenter' gives fast timers and no eBGP policy requirement; 'no bgp ebgp-requires-policy' says so explicitly for any FRR version.",
	}
	return c, nil
}

func frrConfig(x FRRSwitch, r FRRRequest, c *FRRClos) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("! %s: %s of a %d-spine × %d-leaf BGP-unnumbered routed Clos (RFC 7938)", x.Name, x.Role, c.Spines, c.Leaves)
	p("! generated by rdmalab design frr; AS %d, router id %s", x.ASN, x.RouterID)
	p("frr defaults datacenter")
	p("hostname %s", x.Name)
	p("service integrated-vtysh-config")
	p("ip forwarding")
	p("ipv6 forwarding")
	p("!")
	p("interface lo")
	p(" ip address %s/32", x.RouterID)
	p("exit")
	p("!")
	for _, port := range x.Ports {
		p("interface %s", port.Name)
		p(" description to %s %s", port.Peer, port.PeerPort)
		p(" ipv6 nd ra-interval 5")
		p(" no ipv6 nd suppress-ra")
		p("exit")
		p("!")
	}
	if x.Network != nil {
		p("interface %s", r.HostInterface)
		p(" description hosts of %s", x.Name)
		p(" ip address %s/%d", x.Gateway, x.Network.Bits())
		p("exit")
		p("!")
	}
	p("router bgp %d", x.ASN)
	p(" bgp router-id %s", x.RouterID)
	p(" no bgp ebgp-requires-policy")
	p(" bgp bestpath as-path multipath-relax")
	p(" neighbor fabric peer-group")
	p(" neighbor fabric remote-as external")
	for _, port := range x.Ports {
		p(" neighbor %s interface peer-group fabric", port.Name)
	}
	p(" !")
	p(" address-family ipv4 unicast")
	p("  network %s/32", x.RouterID)
	if x.Network != nil {
		p("  network %s", x.Network)
		p("  maximum-paths %d", c.MaximumPaths)
	}
	p(" exit-address-family")
	p("exit")
	p("!")
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hostsIn is how many addresses of p are usable: not the network address,
// not the broadcast address.
func hostsIn(p netip.Prefix) int {
	bits := 32 - p.Bits()
	if bits >= 30 {
		return 1 << 29
	}
	return max(0, 1<<bits-2)
}

// nthAddr is p's address plus n.
func nthAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// WriteFiles writes each file into dir (made by userfile.MakeOutDir) and
// nowhere else, through userfile.WriteIn: names are plain file names, and
// each file is written beside its final name and renamed over it, so a
// symlink planted at that name is replaced, not followed.
func WriteFiles(dir string, files []File) error {
	if err := userfile.MakeOutDir(dir); err != nil {
		return err
	}
	for _, f := range files {
		if err := userfile.WriteIn(dir, f.Name, f.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

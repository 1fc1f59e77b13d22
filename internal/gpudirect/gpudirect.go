// Package gpudirect predicts, from a host snapshot alone, what NCCL and
// perftest will do with each GPU: its rail NIC (nearest by PCIe path),
// the path level as NCCL names it, whether GPUDirect RDMA will be used and
// why, the RoCE GID index NCCL picks and the management interface for
// NCCL_SOCKET_IFNAME; and judges the static readiness for GPUDirect RDMA
// (doctor) and a host-memory vs GPU-memory benchmark pair.
package gpudirect

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// DefaultGDRLevel is NCCL's default NCCL_NET_GDR_LEVEL: GPUDirect RDMA is
// used when GPU and NIC are no farther apart than PXB (PCIe bridges, not
// the CPU).
const DefaultGDRLevel = host.LevelPXB

// Prediction is what NCCL will do for one GPU of a host.
type Prediction struct {
	Host string          `json:"host"`
	GPU  host.PCIAddress `json:"gpu"`
	// Rail is the RDMA device NCCL pairs with the GPU (nearest by PCIe
	// path, ties to one not yet taken), "" when the host has none.
	Rail     string          `json:"rail,omitempty"`
	RailPCI  host.PCIAddress `json:"rail_pci,omitzero"`
	RailPort int             `json:"rail_port,omitempty"`
	// Level is the path between them as NCCL names it: PIX, PXB, PHB, NODE, SYS.
	Level string `json:"level,omitempty"`
	// GDR is whether NCCL will use GPUDirect RDMA for this GPU, and why.
	GDR       bool   `json:"gdr"`
	GDRReason string `json:"gdr_reason"`
	// Memory is how the NIC reaches GPU memory: "nvidia_peermem",
	// "nv_peer_mem", "dmabuf" or "" (neither).
	Memory string `json:"memory,omitempty"`
	// Bridges are the PCIe bridges between GPU and NIC (where ACS must not
	// redirect peer traffic to the root complex).
	Bridges []host.PCIAddress `json:"bridges,omitempty"`
}

// HostPrediction is the prediction for a whole host.
type HostPrediction struct {
	Host string       `json:"host"`
	GPUs []Prediction `json:"gpus"`
	// Rails are the distinct rail devices, in GPU order.
	Rails []string `json:"rails"`
	// Layer is the rails' link layer (InfiniBand, Ethernet), "" when mixed or none.
	Layer string `json:"layer,omitempty"`
	// GIDIndex is what NCCL picks on RoCE rails (RoCE v2, IPv4) when all
	// rails agree; nil on InfiniBand or when they differ.
	GIDIndex  *int               `json:"gid_index,omitempty"`
	GIDByRail map[string]GIDPick `json:"gid_by_rail,omitempty"`
	// SocketIf is the interface for NCCL_SOCKET_IFNAME: up, not lo, not a
	// netdev of an RDMA port; "" when there is none.
	SocketIf       string `json:"socket_ifname,omitempty"`
	SocketIfReason string `json:"socket_ifname_reason"`
	// GDRLevel is the NCCL_NET_GDR_LEVEL the prediction assumes.
	GDRLevel string `json:"gdr_level"`
}

// GIDPick is NCCL's GID choice on one RoCE port.
type GIDPick struct {
	Index   int    `json:"index"`
	GID     string `json:"gid"`
	Type    string `json:"type"`
	IPv4    string `json:"ipv4,omitempty"`
	Warning string `json:"warning,omitempty"`
}

// Predict computes, from a snapshot alone, what NCCL will do on the host
// with its default NCCL_NET_GDR_LEVEL (PXB).
func Predict(s *host.Snapshot) HostPrediction { return PredictAt(s, DefaultGDRLevel) }

// GDRLevelFor is the NCCL_NET_GDR_LEVEL that turns GPUDirect RDMA on for
// the host's GPUs as far as it should go: PHB when some rail is through the
// CPU's host bridge (seed 001 exports PHB for that), else the default PXB.
// It never says NODE or SYS: across host bridges or sockets, peer traffic is
// slower than staging (and NCCL_NET_GDR_LEVEL=SYS is flagged in logs).
func GDRLevelFor(s *host.Snapshot) (string, string) {
	for _, r := range s.Rails() {
		if r.Level == host.LevelPHB {
			return host.LevelPHB, fmt.Sprintf("GPU %s's rail %s is through the CPU's host bridge (PHB): PHB turns GPUDirect RDMA on there, as seed 001 exports; PXB (the default) would stage it through host memory", r.GPU, r.RDMA)
		}
	}
	return DefaultGDRLevel, "NCCL's default, made explicit: GPUDirect RDMA where GPU and NIC share PCIe switches"
}

// PredictAt is Predict with NCCL_NET_GDR_LEVEL set to gdrLevel.
func PredictAt(s *host.Snapshot, gdrLevel string) HostPrediction {
	hp := HostPrediction{Host: s.Hostname, GIDByRail: map[string]GIDPick{}, GDRLevel: gdrLevel}
	memory := ""
	switch {
	case s.Kernel.GPUDirect.PeerMem != "":
		memory = s.Kernel.GPUDirect.PeerMem
	case s.Kernel.GPUDirect.OpenKernelModule:
		memory = "dmabuf"
	}
	// The rail is host.Rails' answer, the one doctor, nccl env and plan give.
	for _, rail := range s.Rails() {
		p := Prediction{Host: s.Hostname, GPU: rail.GPU, Memory: memory}
		r := s.RDMA(rail.RDMA)
		if r == nil || !r.Active() {
			p.GDRReason = "no active RDMA port with a PCI function on this host"
			hp.GPUs = append(hp.GPUs, p)
			continue
		}
		gd, nd := s.PCI(rail.GPU), s.PCI(r.PCIAddress)
		p.Rail, p.RailPCI, p.RailPort = r.Name, r.PCIAddress, firstActive(*r).Port
		p.Level = rail.Level
		p.Bridges = bridgesBetween(gd, nd)
		p.GDR, p.GDRReason = gdrVerdict(p.Level, memory, gdrLevel)
		if g := gpuOf(s, rail.GPU); g != nil {
			// The GPU's class decides before any path: GPUClass is the one
			// rule doctor, nccl env and plan apply.
			if ok, why := GPUClass(g.Name); !ok {
				p.GDR, p.GDRReason = false, why
			}
		}
		if g := gpuOf(s, rail.GPU); g != nil && isC2C(g.Name) && !p.GDR && memory != "" {
			p.GDR, p.GDRReason = true, fmt.Sprintf("path %s in PCIe terms, but %s reaches the NIC over the CPU's NVLink-C2C: NCCL uses GPUDirect RDMA there (NCCL_NET_GDR_C2C); %s", p.Level, g.Name, memory)
		}
		hp.GPUs = append(hp.GPUs, p)
		if !slices.Contains(hp.Rails, r.Name) {
			hp.Rails = append(hp.Rails, r.Name)
		}
	}
	layers := map[string]bool{}
	for _, name := range hp.Rails {
		r := s.RDMA(name)
		port := firstActive(*r)
		layers[port.LinkLayer] = true
		if port.LinkLayer == "Ethernet" {
			hp.GIDByRail[name] = PickGID(port.GIDs)
		}
	}
	if len(layers) == 1 {
		for l := range layers {
			hp.Layer = l
		}
	}
	if hp.Layer == "Ethernet" && len(hp.GIDByRail) > 0 {
		idx := -1
		for _, g := range hp.GIDByRail {
			if idx >= 0 && g.Index != idx {
				idx = -2
				break
			}
			idx = g.Index
		}
		if idx >= 0 {
			hp.GIDIndex = &idx
		}
	}
	hp.SocketIf, hp.SocketIfReason = socketIf(s)
	return hp
}

// isC2C says whether a GPU is a Grace superchip's (GH200, GB200, GB300):
// it hangs off the CPU's NVLink-C2C, so every NIC is NODE/SYS in PCIe
// terms while NCCL still reads its memory from the NIC directly.
func isC2C(name string) bool {
	return strings.Contains(name, "GH200") || strings.Contains(name, "GB200") || strings.Contains(name, "GB300")
}

func gpuOf(s *host.Snapshot, a host.PCIAddress) *host.GPU {
	for i := range s.GPUs {
		if s.GPUs[i].Address == a {
			return &s.GPUs[i]
		}
	}
	return nil
}

func firstActive(r host.RDMADevice) host.RDMAPort {
	for _, p := range r.Ports {
		if p.State == portstate.Active {
			return p
		}
	}
	if len(r.Ports) > 0 {
		return r.Ports[0]
	}
	return host.RDMAPort{}
}

// gdrVerdict is NCCL's rule: GPUDirect RDMA when the path is within
// NCCL_NET_GDR_LEVEL (gdrLevel) and the NIC can reach GPU memory.
func gdrVerdict(level, memory, gdrLevel string) (bool, string) {
	within := host.LevelRank(level) <= host.LevelRank(gdrLevel)
	what := "NCCL's default GDR level " + gdrLevel
	if gdrLevel != DefaultGDRLevel {
		what = "NCCL_NET_GDR_LEVEL=" + gdrLevel
	}
	switch {
	case !within && memory == "":
		return false, fmt.Sprintf("path %s is farther than %s, and no peer memory (nvidia-peermem) or DMA-BUF", level, what)
	case !within && host.LevelRank(level) <= host.LevelRank(host.LevelPHB):
		return false, fmt.Sprintf("path %s is farther than %s: NCCL stages through host memory (NCCL_NET_GDR_LEVEL=PHB turns GPUDirect RDMA on through the host bridge; measure it)", level, what)
	case !within:
		return false, fmt.Sprintf("path %s is farther than %s: NCCL stages through host memory (forcing it with NCCL_NET_GDR_LEVEL=%s sends peer traffic across the CPU interconnect, usually slower)", level, what, strings.TrimSuffix(level, "?"))
	case memory == "":
		return false, fmt.Sprintf("path %s allows it, but neither nvidia-peermem (/sys/module/nvidia_peermem) nor the open kernel module's DMA-BUF is there", level)
	case memory == "dmabuf":
		return true, fmt.Sprintf("path %s within %s; DMA-BUF through the open kernel module", level, what)
	}
	return true, fmt.Sprintf("path %s within %s; %s loaded", level, what, memory)
}

// bridgesBetween lists the bridges on the path from a to b (below their
// common ancestor, and the ancestor itself), empty across host bridges.
func bridgesBetween(a, b *host.PCIDevice) []host.PCIAddress {
	if a.HostBridge != b.HostBridge {
		return nil
	}
	var out []host.PCIAddress
	for i, p := range a.Parents {
		if j := slices.Index(b.Parents, p); j >= 0 {
			out = append(out, a.Parents[:i+1]...)
			for _, q := range b.Parents[:j] {
				if !slices.Contains(out, q) {
					out = append(out, q)
				}
			}
			return out
		}
	}
	return append(slices.Clone(a.Parents), b.Parents...)
}

// PickGID is NCCL's RoCE GID choice (ncclIbGetGidIndex with the defaults
// NCCL_IB_ADDR_FAMILY=AF_INET and NCCL_IB_ROCE_VERSION_NUM=2): start at
// index 0, move to a candidate of the wanted family when the current one is
// not, then to a RoCE v2 candidate of that family. gids are the non-zero
// table entries; absent indexes are zero (invalid) GIDs.
func PickGID(gids []host.GID) GIDPick {
	byIdx := map[int]host.GID{}
	n := 0
	for _, g := range gids {
		byIdx[g.Index] = g
		n = max(n, g.Index+1)
	}
	family := func(g host.GID) string {
		if a, err := netip.ParseAddr(g.GID); err == nil && a.Is4In6() {
			return "inet"
		}
		return "inet6"
	}
	valid := func(i int) bool { _, ok := byIdx[i]; return ok }
	ver := func(g host.GID) int {
		if g.Type == "RoCE v2" {
			return 2
		}
		return 1
	}
	cur := 0
	for cand := 1; cand < n; cand++ {
		c, ok := byIdx[cand]
		if !ok {
			continue
		}
		g := byIdx[cur]
		if family(c) != family(g) && family(c) == "inet" {
			cur = cand
			continue
		}
		if family(c) != "inet" {
			continue
		}
		if (ver(g) != ver(c) || !valid(cur)) && ver(c) == 2 {
			cur = cand
		}
	}
	g := byIdx[cur]
	pick := GIDPick{Index: cur, GID: g.GID, Type: g.Type, IPv4: g.IPv4}
	switch {
	case !valid(cur):
		pick.Warning = "the GID table is empty: no IP address on the RoCE netdev, NCCL cannot connect"
	case family(g) != "inet":
		pick.Warning = fmt.Sprintf("only link-local/IPv6 GIDs: NCCL falls back to index %d (%s %s), which does not route and times out across subnets; put an IPv4 address on the port's netdev", cur, g.Type, g.GID)
	case ver(g) != 2:
		pick.Warning = fmt.Sprintf("no RoCE v2 GID with IPv4: NCCL uses index %d (%s)", cur, g.Type)
	}
	return pick
}

// socketIf picks the management interface: up, not loopback, not a netdev
// bound to an RDMA port, not a bond slave, physical (with a PCI function)
// before virtual.
func socketIf(s *host.Snapshot) (string, string) {
	rdmaNet := map[string]bool{}
	for _, r := range s.RDMADevices {
		for _, p := range r.Ports {
			for _, n := range p.NetDevs {
				rdmaNet[n] = true
			}
		}
	}
	var cands []host.NetDev
	for _, n := range s.NetDevs {
		if n.Name == "lo" || n.OperState != "up" || n.RDMADevice != "" || rdmaNet[n.Name] || n.Master != "" || n.Type != 1 {
			continue
		}
		cands = append(cands, n)
	}
	// a physical NIC before bridges, veths and tunnels, which are then not offered
	if slices.ContainsFunc(cands, func(n host.NetDev) bool { return n.PCIAddress.IsValid() }) {
		cands = slices.DeleteFunc(cands, func(n host.NetDev) bool { return !n.PCIAddress.IsValid() })
	}
	if len(cands) == 0 {
		return "", "no interface is up outside the RDMA ports: NCCL would bootstrap over the fabric (or fail); give the nodes a management NIC or name one explicitly"
	}
	why := fmt.Sprintf("%s is up and is not a netdev of an RDMA port (NCCL's bootstrap and OOB traffic belong on the management network, never the RDMA fabric)", cands[0].Name)
	if len(cands) > 1 {
		var others []string
		for _, c := range cands[1:] {
			others = append(others, c.Name)
		}
		why += "; also candidates: " + strings.Join(others, ", ")
	}
	return cands[0].Name, why
}

// rule is one readiness rule: its catalog entry and the function that
// judges a snapshot, reporting through a reporter bound to the entry.
type rule struct {
	check.Entry
	run func(rep *check.Reporter, s *host.Snapshot)
}

// ReadinessRules are doctor's static GPUDirect RDMA readiness for one
// host: the path level per GPU and its rail, ACS on the bridges between
// them and ATS on the NIC (both from config space, which sysfs shows to
// root only: judged where the snapshot read them, named where it could
// not), an IOMMU translating peer traffic, and the GPU's class. Whether
// peer memory is loaded is doctor's gpudirect.peermem rule.
var ReadinessRules = []rule{
	{pathEntry, gdrPath},
	{acsEntry, acs},
	{atsEntry, ats},
	{iommuEntry, iommu},
	{GPUClassEntry, gpuClass},
}

// Readiness applies every readiness rule to one host.
func Readiness(s *host.Snapshot) []check.Finding {
	var fs []check.Finding
	for _, r := range ReadinessRules {
		rep := r.Entry.Reporter(s.Hostname)
		r.run(rep, s)
		fs = append(fs, rep.Findings()...)
	}
	return fs
}

func gpuClass(rep *check.Reporter, s *host.Snapshot) {
	for _, g := range s.GPUs {
		if ok, why := GPUClass(g.Name); !ok {
			f := rep.Warn("GPU "+g.Address.String(), "%s", why)
			f.Evidence = []check.Evidence{{What: "GPU model", Value: g.Name, Source: "PCI id " + g.Vendor + ":" + g.Device}}
			f.Fix = []string{"use a data-center or professional GPU for GPUDirect RDMA, or accept staging through host memory"}
		}
	}
}

func gdrPath(rep *check.Reporter, s *host.Snapshot) {
	if len(s.GPUs) == 0 || len(s.RDMADevices) == 0 {
		return
	}
	for _, p := range Predict(s).GPUs {
		subject := "GPU " + p.GPU.String()
		if p.Rail == "" {
			rep.Unknown(subject, "%s", p.GDRReason)
			continue
		}
		ev := []check.Evidence{{What: "path " + p.GPU.String() + " ↔ " + p.Rail, Value: p.Level, Source: "PCI tree (like nvidia-smi topo -m)"}}
		if g := gpuOf(s, p.GPU); g != nil && isC2C(g.Name) && host.LevelRank(p.Level) > host.LevelRank(host.LevelPXB) {
			rep.Pass(subject, "rail %s at %s in PCIe terms, but %s is on the CPU's NVLink-C2C (Grace): NCCL uses GPUDirect RDMA over C2C (NCCL_NET_GDR_C2C)", p.Rail, p.Level, g.Name).Evidence = ev
			continue
		}
		switch host.LevelRank(p.Level) {
		case host.LevelRank(host.LevelPIX), host.LevelRank(host.LevelPXB):
			rep.Pass(subject, "rail %s at %s: within NCCL's GDR level %s", p.Rail, p.Level, DefaultGDRLevel).Evidence = ev
		case host.LevelRank(host.LevelPHB), host.LevelRank(host.LevelNODE):
			f := rep.Warn(subject, "nearest rail %s is %s: NCCL will not use GPUDirect RDMA by default (level %s)", p.Rail, p.Level, DefaultGDRLevel)
			f.Evidence = ev
			f.Fix = []string{"at PHB: export NCCL_NET_GDR_LEVEL=PHB (rdmalab nccl env does) and measure it against staging", "or move the NIC or GPU under one PCIe switch"}
		default:
			// A warning, not a failure: a lab may mean it (seed 000 splits
			// such a host into VMs); what fails is a GPUDirect benchmark.
			across := "staging crosses sockets"
			if s.Sockets() == 1 {
				across = "staging crosses NUMA nodes (dies) of the one socket, not sockets"
			}
			f := rep.Warn(subject, "nearest rail %s is %s (across the CPU interconnect): GPUDirect RDMA off, and %s", p.Rail, p.Level, across)
			f.Evidence = ev
			f.Fix = []string{"put a NIC on the GPU's NUMA node (same root complex or PCIe switch)"}
		}
	}
}

// directPaths are the bridges between GPUs and the rails they reach
// directly (within PXB), and those rails' PCI functions: where ACS and ATS
// decide whether peer traffic goes direct.
func directPaths(s *host.Snapshot) (bridges, nics []host.PCIAddress) {
	if len(s.GPUs) == 0 || len(s.RDMADevices) == 0 {
		return nil, nil
	}
	var direct []string
	for _, p := range Predict(s).GPUs {
		if p.Rail != "" && len(p.Bridges) > 0 && host.LevelRank(p.Level) <= host.LevelRank(host.LevelPXB) {
			bridges = append(bridges, p.Bridges...)
			direct = append(direct, p.Rail)
		}
	}
	slices.SortFunc(bridges, host.PCIAddress.Compare)
	bridges = slices.Compact(bridges)
	for _, rail := range slices.Compact(slices.Sorted(slices.Values(direct))) {
		nics = append(nics, s.RDMA(rail).PCIAddress)
	}
	return bridges, nics
}

// unreadWhy says why config space was not read.
func unreadWhy(s *host.Snapshot, as []host.PCIAddress) string {
	for _, a := range as {
		if d := s.PCI(a); d != nil && d.ConfigBytes > 0 && d.ConfigBytes < 256 {
			return fmt.Sprintf("sysfs showed %d bytes of config space (the header only: the extended capabilities need root; run doctor as root)", d.ConfigBytes)
		}
	}
	return "config space was not read (an older snapshot or a capture without it)"
}

// acsRedirects sorts the bridges: those whose ACS redirects peer requests
// or completions up to the root complex (without Direct Translated P2P to
// let ATS-translated requests through), those not read, and the rest.
func acsRedirects(s *host.Snapshot, bridges []host.PCIAddress) (redirect, unread, clean []string) {
	for _, b := range bridges {
		d := s.PCI(b)
		switch {
		case d == nil || d.ConfigBytes < 256:
			unread = append(unread, b.String())
		case d.ACSCtl == nil:
			clean = append(clean, b.String()+" (no ACS)")
		case *d.ACSCtl&(host.ACSReqRedir|host.ACSCmpltRedir) != 0 && *d.ACSCtl&host.ACSDirectTrans == 0:
			redirect = append(redirect, fmt.Sprintf("%s (ACSCtl %#04x)", b, *d.ACSCtl))
		default:
			clean = append(clean, fmt.Sprintf("%s (ACSCtl %#04x)", b, *d.ACSCtl))
		}
	}
	return redirect, unread, clean
}

func acs(rep *check.Reporter, s *host.Snapshot) {
	bridges, _ := directPaths(s)
	if len(bridges) == 0 {
		return
	}
	redirect, unread, clean := acsRedirects(s, bridges)
	ev := []check.Evidence{{What: "bridges between GPUs and rails", Value: host.JoinPCI(bridges, " "), Source: "/sys/bus/pci/devices/*/config (ACS extended capability)"}}
	acsFix := fmt.Sprintf("for b in %s; do lspci -vvv -s $b | grep ACSCtl; done   # want ReqRedir- CmpltRedir-, or DirectTrans+ with ATS on the NIC", host.JoinPCI(bridges, " "))
	var f *check.Finding
	switch {
	case len(redirect) > 0:
		f = rep.Warn("PCIe bridges", "ACS redirects peer requests on %s: GPU↔NIC traffic goes up to the root complex, so GPUDirect RDMA is slow or fails", strings.Join(redirect, ", "))
		f.Fix = []string{"on bare metal clear ReqRedir/CmpltRedir on these bridges (setpci, or the BIOS ACS setting); on a VM host keep ACS and enable Direct Translated P2P plus ATS on the NIC", acsFix}
	case len(unread) > 0:
		f = rep.Unknown("PCIe bridges", "ACS on %d bridge(s) between GPUs and their rails is not known: %s", len(unread), unreadWhy(s, bridges))
		f.Fix = []string{acsFix}
	default:
		f = rep.Pass("PCIe bridges", "no bridge between a GPU and its rail redirects peer requests: %s", strings.Join(clean, ", "))
	}
	f.Evidence = ev
}

// ats: ATS is needed where ACS redirects and Direct Translated P2P is on.
func ats(rep *check.Reporter, s *host.Snapshot) {
	bridges, nics := directPaths(s)
	if len(bridges) == 0 {
		return
	}
	redirect, _, _ := acsRedirects(s, bridges)
	var off, unknown, on []string
	for _, a := range nics {
		d := s.PCI(a)
		switch {
		case d == nil || d.ConfigBytes < 256:
			unknown = append(unknown, a.String())
		case d.ATSEnabled == nil || !*d.ATSEnabled:
			off = append(off, a.String())
		default:
			on = append(on, a.String())
		}
	}
	nev := []check.Evidence{{What: "rail NICs", Value: host.JoinPCI(nics, " "), Source: "/sys/bus/pci/devices/*/config (ATS extended capability)"}}
	atsFix := fmt.Sprintf("for d in %s; do lspci -vvv -s $d | grep -A1 'Address Translation'; mlxconfig -d $d query ATS_ENABLED; done", host.JoinPCI(nics, " "))
	var f *check.Finding
	switch {
	case len(unknown) > 0:
		f = rep.Unknown("rail NICs", "ATS on %d rail NIC(s) is not known: %s", len(unknown), unreadWhy(s, nics))
		f.Fix = []string{atsFix}
	case len(off) > 0 && len(redirect) > 0:
		f = rep.Warn("rail NICs", "ATS is off on %s while ACS redirects peer requests: nothing lets GPU↔NIC traffic go direct", strings.Join(off, ", "))
		f.Fix = []string{fmt.Sprintf("mlxconfig -d %s set ATS_ENABLED=true, then reboot", off[0]), atsFix}
	case len(off) > 0:
		f = rep.Pass("rail NICs", "ATS off on %s, and not needed: no bridge on the path redirects peer requests", strings.Join(off, ", "))
	default:
		f = rep.Pass("rail NICs", "ATS enabled on %s", strings.Join(on, ", "))
	}
	f.Evidence = nev
}

func iommu(rep *check.Reporter, s *host.Snapshot) {
	if len(s.GPUs) == 0 || len(s.RDMADevices) == 0 || !s.Kernel.IOMMU.Present || s.Kernel.IOMMU.Passthrough {
		return
	}
	f := rep.Warn("kernel", "the IOMMU translates DMA (no iommu=pt): GPU↔NIC peer traffic goes through the root complex and needs ACS/ATS set up, or it is slow")
	f.Evidence = []check.Evidence{{What: "iommu", Value: strings.Join(s.Kernel.IOMMU.Units, ","), Source: "/sys/class/iommu, /proc/cmdline"}}
}

// JudgeGPUDirect judges a perftest pair run in host memory and in GPU
// memory (--use_cuda): within ~5% means GPUDirect RDMA works; 2× slower or
// worse means staging through host memory, with the likely cause from the
// prediction.
func JudgeGPUDirect(hostGbps, cudaGbps float64, pred Prediction) check.Finding {
	rep := BenchEntry.Reporter(pred.Host)
	subject := fmt.Sprintf("GPU %s ↔ %s", pred.GPU, pred.Rail)
	var f check.Finding
	ratio := cudaGbps / hostGbps
	switch {
	case hostGbps <= 0 || cudaGbps <= 0:
		f = rep.New(check.Unknown, subject, "no bandwidth to compare (a run failed or was not made)")
	case ratio >= 0.95:
		f = rep.New(check.Pass, subject, "GPU memory at %.0f%% of host memory: GPUDirect RDMA works", 100*ratio)
	case ratio > 0.5:
		f = rep.New(check.Warn, subject, "GPU memory at %.0f%% of host memory: direct but slowed (a PCIe bridge, ACS redirect or a narrow GPU link)", 100*ratio)
		f.Fix = []string{fmt.Sprintf("rdmalab doctor on %s: gpudirect.acs and gpudirect.ats name the bridges and the NIC on the path to %s", cmp.Or(pred.Host, "the host"), pred.Rail)}
	default:
		cause := pred.GDRReason
		if pred.GDR {
			cause = "the prediction said GPUDirect would work (" + pred.GDRReason + "): check ACS redirect on the bridges and ATS on the NIC"
		}
		f = rep.New(check.Fail, subject, "GPU memory %.1f× slower than host memory: transfers stage through host memory; likely cause: %s", 1/ratio, cause)
	}
	f.Evidence = []check.Evidence{
		{What: "host memory", Value: fmt.Sprintf("%.1f Gb/s", hostGbps), Source: "perftest"},
		{What: "GPU memory (--use_cuda)", Value: fmt.Sprintf("%.1f Gb/s", cudaGbps), Source: "perftest"},
		{What: "prediction", Value: fmt.Sprintf("%s, GDR %v: %s", pred.Level, pred.GDR, pred.GDRReason), Source: "host snapshot"}}
	return f
}

// The readiness rules' catalog entries (docs/checks.md lists them in
// ReadinessCatalog's order).
var (
	pathEntry = check.Entry{ID: "gpudirect.path", Needs: "the PCI tree of GPUs and RDMA NICs (sysfs)", UnknownWhen: "a GPU has no RDMA NIC at all", Title: "Each GPU has a rail NIC within NCCL's GDR level (PIX or PXB)",
		Why:    "NCCL uses GPUDirect RDMA only when GPU and NIC are no farther apart than NCCL_NET_GDR_LEVEL (default PXB); SYS also crosses sockets.",
		Source: "seed 002, seed 004; NCCL NCCL_NET_GDR_LEVEL", Fixes: []string{"put a NIC under the GPU's PCIe switch or root complex"}}
	acsEntry = check.Entry{ID: "gpudirect.acs", Needs: "ACSCtl of the bridges between GPU and NIC: their config space (/sys/bus/pci/devices/*/config past the 64-byte header, root only)", UnknownWhen: "the snapshot was taken without root (sysfs shows the header only: the finding says so) or holds no config space; rdmalab then names the bridges to check", Title: "ACS does not redirect peer traffic between GPU and NIC",
		Why:    "ACS redirect on the bridges between them sends peer requests up to the root complex: GPUDirect slows or fails. Read from config space when inventory ran as root; otherwise named, not assumed.",
		Source: "seed 003, seed 004", Fixes: []string{"lspci -vvv -s <bridge> | grep ACSCtl", "on bare metal: clear ReqRedir/CmpltRedir (setpci) or disable ACS in the BIOS", "on a VM host keep ACS (it makes the IOMMU groups) and enable ATS with Direct Translated P2P instead (doctor --profile vm-host)"}}
	atsEntry = check.Entry{ID: "gpudirect.ats", Needs: "ATSCtl of the rail NICs: their config space (root only), and ACS on the path", UnknownWhen: "the snapshot was taken without root or holds no config space; rdmalab then names the NICs to check", Title: "ATS on the rail NIC",
		Why:    "With ACS on, peer traffic goes direct only with Address Translation Services on the NIC. Read from config space when inventory ran as root; ATS off is fine where no bridge redirects.",
		Source: "seed 003, seed 004", Fixes: []string{"mlxconfig -d NIC-PCI-ADDRESS set ATS_ENABLED=true, then reboot (the finding names the NIC)"}}
	iommuEntry = check.Entry{ID: "gpudirect.iommu", Needs: "/sys/class/iommu and /proc/cmdline", UnknownWhen: "never: no IOMMU units means none translating", Title: "The IOMMU does not translate peer traffic (iommu=pt or off)",
		Why:    "A translating IOMMU sends GPU↔NIC DMA through the root complex unless ACS/ATS are set up.",
		Source: "seed 003", Fixes: []string{"add iommu=pt to the kernel command line (bare metal)"}}
	// GPUClassEntry is also what plan notes of a consumer GPU.
	GPUClassEntry = check.Entry{ID: "gpudirect.gpu-class", Needs: "the GPU's model (PCI device id or nvidia-smi's GPU name)", UnknownWhen: "the model is unknown (it is not judged then)", Title: "The GPU supports GPUDirect RDMA (not GeForce/TITAN)",
		Why:    "NVIDIA supports GPUDirect RDMA on data-center and professional GPUs only; on a GeForce, NCCL and perftest --use_cuda stage through host memory.",
		Source: "seed 000 (RTX 3090); NVIDIA GPUDirect RDMA documentation", Fixes: []string{"use a data-center or professional GPU, or accept host staging"}}
)

// ReadinessCatalog describes every check Readiness can emit, for doctor's
// catalog (docs/checks.md).
var ReadinessCatalog = []check.Entry{pathEntry, acsEntry, atsEntry, iommuEntry, GPUClassEntry}

// BenchEntry is the catalog entry of JudgeGPUDirect's verdict (bench).
var BenchEntry = check.Entry{ID: "gpudirect.bench", Title: "GPU memory moves over RDMA as fast as host memory",
	Why:    "Within ~5% of host memory, GPUDirect RDMA works; twice as slow or worse, transfers stage through host memory.",
	Source: "perftest in host memory and with --use_cuda; seed 004",
	Fixes:  []string{"modprobe nvidia-peermem", "rdmalab doctor (gpudirect.* rules)"},
	Needs:  "a perftest pair in host memory and one in GPU memory, and the host's GPUDirect prediction", UnknownWhen: "either run failed or was not made"}

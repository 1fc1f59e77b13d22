// Package report is the one place that knows how things look: terminal
// tables for snapshots, findings, plans and results.
package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"k8s.io/utils/cpuset"
)

func newTable(w io.Writer, title string) table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.Style().Format.Header = text.FormatDefault
	t.Style().Title.Align = text.AlignLeft
	if title != "" {
		t.SetTitle(title)
	}
	return t
}

// Inventory renders a snapshot as the tables a person reads: host summary,
// NUMA/CPU layout, device locality map, GPU↔NIC matrix, RDMA ports, GIDs,
// and what could not be read.
func Inventory(w io.Writer, s *host.Snapshot) {
	summary(w, s)
	numaTable(w, s)
	localityTable(w, s)
	affinityMatrix(w, s)
	portsTable(w, s)
	gidTable(w, s)
	collectErrors(w, s)
}

func summary(w io.Writer, s *host.Snapshot) {
	name := s.Hostname
	if name == "" {
		name = "(unnamed host)"
	}
	fmt.Fprintf(w, "%s", name)
	if s.Kernel.Release != "" {
		fmt.Fprintf(w, " · kernel %s", s.Kernel.Release)
	}
	fmt.Fprintf(w, " · source %s\n", s.Source)
	pk, cores, threads := cpuCounts(s)
	smt := ""
	if cores > 0 && threads > cores {
		smt = fmt.Sprintf(", SMT %d", threads/cores)
	}
	fmt.Fprintf(w, "CPUs: %d package(s), %d cores, %d threads%s, %d NUMA node(s)", pk, cores, threads, smt, len(s.NUMANodes))
	if g := governors(s); g != "" {
		fmt.Fprintf(w, " · governor %s", g)
	}
	fmt.Fprintln(w)
	iso := s.Kernel.Isolation
	fmt.Fprintf(w, "Isolated CPUs: %s · nohz_full: %s · IOMMU: %s\n", orNone(iso.Isolated), orNone(iso.NohzFull), iommuText(s.Kernel.IOMMU))
	fmt.Fprintf(w, "Devices: %d PCI, %d GPU(s), %d RDMA device(s), %d netdev(s)\n\n", len(s.PCIDevices), len(s.GPUs), len(s.RDMADevices), len(s.NetDevs))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func iommuText(io host.IOMMU) string {
	switch {
	case !io.Present:
		return "off"
	case io.Passthrough:
		return fmt.Sprintf("on (pt), %d groups", io.Groups)
	default:
		return fmt.Sprintf("on, %d groups", io.Groups)
	}
}

// cpuCounts counts packages, physical cores and online threads.
func cpuCounts(s *host.Snapshot) (packages, cores, threads int) {
	pk := map[int]bool{}
	core := map[[2]int]bool{}
	for _, c := range s.CPUs {
		if !c.Online {
			continue
		}
		threads++
		pk[c.Package] = true
		core[[2]int{c.Package, c.Core}] = true
	}
	return len(pk), len(core), threads
}

func governors(s *host.Snapshot) string {
	var gs []string
	for _, c := range s.CPUs {
		if c.Governor != "" && !slices.Contains(gs, c.Governor) {
			gs = append(gs, c.Governor)
		}
	}
	slices.Sort(gs)
	return strings.Join(gs, ",")
}

func numaTable(w io.Writer, s *host.Snapshot) {
	if len(s.NUMANodes) == 0 {
		return
	}
	t := newTable(w, "NUMA nodes")
	t.AppendHeader(table.Row{"Node", "CPUs", "Cores", "Memory", "Hugepages free/total", "Distances", "GPUs", "RDMA"})
	for _, n := range s.NUMANodes {
		set, _ := cpuset.Parse(n.CPUs)
		cores := map[[2]int]bool{}
		for _, c := range s.CPUs {
			if set.Contains(c.ID) {
				cores[[2]int{c.Package, c.Core}] = true
			}
		}
		var hp []string
		for _, p := range n.HugePages {
			if p.Total > 0 || p.Free > 0 {
				hp = append(hp, fmt.Sprintf("%s: %d/%d", Bytes(p.PageSizeBytes), p.Free, p.Total))
			}
		}
		var gpus, rdma []string
		for _, g := range s.GPUs {
			if g.NUMANode == n.ID {
				gpus = append(gpus, shortAddr(g.Address))
			}
		}
		for _, r := range s.RDMADevices {
			if r.NUMANode == n.ID {
				rdma = append(rdma, r.Name)
			}
		}
		t.AppendRow(table.Row{n.ID, n.CPUs, len(cores), Bytes(n.MemTotalBytes), orDash(strings.Join(hp, ", ")), intsText(n.Distances), orDash(strings.Join(gpus, " ")), orDash(strings.Join(rdma, " "))})
	}
	t.Render()
	fmt.Fprintln(w)
}

func intsText(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return orDash(strings.Join(s, " "))
}

func optInt(p *int) string {
	if p == nil {
		return "?"
	}
	return strconv.Itoa(*p)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Bytes prints a byte count in binary units ("32 GiB").
func Bytes(b int64) string {
	if b <= 0 {
		return "-"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(b)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if math.Abs(v-math.Round(v)) < 0.05 {
		return fmt.Sprintf("%d %s", int64(math.Round(v)), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func shortAddr(a string) string {
	if p, err := host.ParsePCIAddress(a); err == nil {
		return p.Short()
	}
	return a
}

// interesting picks the devices a locality map shows: GPUs, network
// controllers, every RDMA-capable function (InfiniBand class 0x0c06, or
// anything with an RDMA device), NVMe and accelerators; bridges and
// chipset functions are noise.
func interesting(d host.PCIDevice, s *host.Snapshot) bool {
	c := strings.ToLower(d.Class)
	return host.IsGPUClass(d.Class, d.Vendor) || strings.HasPrefix(c, "0x02") || strings.HasPrefix(c, "0x0108") || strings.HasPrefix(c, "0x12") || s.RDMACapable(&d)
}

func localityTable(w io.Writer, s *host.Snapshot) {
	t := newTable(w, "Device locality")
	t.AppendHeader(table.Row{"Device", "PCI address", "NUMA", "Driver", "Netdev / RDMA", "PCIe link (now/max)", "Switch", "IOMMU"})
	rows := 0
	for _, d := range s.PCIDevices {
		if !interesting(d, s) || d.PhysFn != "" {
			continue
		}
		rows++
		name := host.DeviceName(d.Vendor, d.Device)
		if name == "" {
			name = d.ClassName
		} else if host.IsGPUClass(d.Class, d.Vendor) {
			name = "GPU " + name
		}
		numa := strconv.Itoa(d.LocalityNUMANode)
		switch d.LocalitySource {
		case "local_cpulist":
			numa += " (from local_cpulist)"
		case "unknown":
			numa = "?"
		}
		group := "-"
		if d.IOMMUGroup != nil {
			group = strconv.Itoa(*d.IOMMUGroup)
		}
		t.AppendRow(table.Row{name, shortAddr(d.Address), numa, orDash(d.Driver), orDash(strings.Join(attached(d.Address, s), " ")), linkText(d, s), orDash(shortAddr(d.Switch)), group})
	}
	if rows == 0 {
		fmt.Fprintln(w, "Device locality: no GPU, network or NVMe PCI devices found.")
		fmt.Fprintln(w)
		return
	}
	t.Render()
	fmt.Fprintln(w)
}

// attached lists the netdevs and RDMA devices of a PCI function.
func attached(addr string, s *host.Snapshot) []string {
	var out []string
	for _, n := range s.NetDevs {
		if n.PCIAddress == addr {
			out = append(out, n.Name)
		}
	}
	for _, r := range s.RDMADevices {
		if r.PCIAddress == addr {
			out = append(out, r.Name)
		}
	}
	return out
}

// pcieText prints "Gen3 x16"; a value not read is "unknown", never Gen0 or x0.
func pcieText(gtps float64, width int) string {
	gen, w := "Gen?", "x?"
	if g := linkrate.PCIeGen(gtps); g > 0 {
		gen = fmt.Sprintf("Gen%d", g)
	}
	if width > 0 {
		w = fmt.Sprintf("x%d", width)
	}
	if gen == "Gen?" && w == "x?" {
		return "unknown"
	}
	return gen + " " + w
}

// linkText prints "Gen3 x16 / Gen4 x16", marking a link that trained below
// what both the device and its slot can do.
func linkText(d host.PCIDevice, s *host.Snapshot) string {
	if d.MaxLinkWidth == 0 && d.CurrentLinkWidth == 0 {
		return "unknown"
	}
	cur := pcieText(d.CurrentLinkSpeedGTps, d.CurrentLinkWidth)
	max := pcieText(d.MaxLinkSpeedGTps, d.MaxLinkWidth)
	if cur == max {
		return cur
	}
	mark := ""
	if gt, w := s.LinkCeiling(&d); d.CurrentLinkWidth > 0 && d.CurrentLinkSpeedGTps > 0 && (d.CurrentLinkWidth < w || d.CurrentLinkSpeedGTps < gt) {
		mark = " ⚠"
	}
	return cur + " / " + max + mark
}

func affinityMatrix(w io.Writer, s *host.Snapshot) {
	if len(s.GPUs) == 0 || len(s.Affinity) == 0 {
		return
	}
	var nics []string
	for _, p := range s.Affinity {
		if !slices.Contains(nics, p.RDMA) {
			nics = append(nics, p.RDMA)
		}
	}
	t := newTable(w, "GPU ↔ NIC")
	hdr := table.Row{"GPU", "NUMA"}
	for _, n := range nics {
		hdr = append(hdr, n)
	}
	t.AppendHeader(hdr)
	for i, g := range s.GPUs {
		row := table.Row{fmt.Sprintf("GPU%d %s", i, shortAddr(g.Address)), g.NUMANode}
		for _, n := range nics {
			row = append(row, orDash(s.AffinityOf(g.Address, n)))
		}
		t.AppendRow(row)
	}
	t.Render()
	fmt.Fprintln(w, "  as nvidia-smi topo -m: PIX one PCIe switch · PXB several switches · PHB host bridge · NODE same NUMA node · SYS across NUMA nodes")
	fmt.Fprintln(w)
}

func portsTable(w io.Writer, s *host.Snapshot) {
	if len(s.RDMADevices) == 0 {
		fmt.Fprintln(w, "RDMA: no devices in /sys/class/infiniband.")
		fmt.Fprintln(w)
		return
	}
	t := newTable(w, "RDMA ports")
	t.AppendHeader(table.Row{"Device", "Port", "State", "Physical", "Rate", "Link layer", "LID", "SM LID", "Netdev (MTU)", "Firmware"})
	for _, d := range s.RDMADevices {
		if len(d.Ports) == 0 {
			t.AppendRow(table.Row{d.Name, "-", "no ports", "", "", "", "", "", "", orDash(d.FWVersion)})
		}
		for _, p := range d.Ports {
			var nds []string
			for _, n := range p.NetDevs {
				if nd := s.NetDev(n); nd != nil {
					nds = append(nds, fmt.Sprintf("%s (%d)", n, nd.MTUBytes))
				} else {
					nds = append(nds, n)
				}
			}
			rate := "-"
			if p.Rate.Raw != "" {
				rate = p.Rate.Raw
			}
			lid, sm := "-", "-"
			if p.LinkLayer == "InfiniBand" {
				lid, sm = optInt(p.LID), optInt(p.SMLID)
			}
			t.AppendRow(table.Row{d.Name, p.Port, orDash(p.State), orDash(p.PhysState), rate, orDash(p.LinkLayer), lid, sm, orDash(strings.Join(nds, " ")), orDash(d.FWVersion)})
		}
	}
	t.Render()
	fmt.Fprintln(w)
}

func gidTable(w io.Writer, s *host.Snapshot) {
	t := newTable(w, "GIDs")
	t.AppendHeader(table.Row{"Device", "Port", "Index", "GID", "IPv4", "Type", "Netdev"})
	rows := 0
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			for _, g := range p.GIDs {
				rows++
				t.AppendRow(table.Row{d.Name, p.Port, g.Index, g.GID, orDash(g.IPv4), orDash(g.Type), orDash(g.NetDev)})
			}
		}
	}
	if rows == 0 {
		return
	}
	t.Render()
	fmt.Fprintln(w)
}

func collectErrors(w io.Writer, s *host.Snapshot) {
	if len(s.Errors) == 0 {
		return
	}
	fmt.Fprintf(w, "Could not read (%d) — the rest of the inventory stands:\n", len(s.Errors))
	for _, e := range s.Errors {
		fmt.Fprintf(w, "  %s: %s\n", e.Subject, e.Error)
	}
	fmt.Fprintln(w)
}

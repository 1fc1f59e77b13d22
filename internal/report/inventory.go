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
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"k8s.io/utils/cpuset"
)

// newTable is the plain go-pretty table fabric.go and bench.go still use
// (title inside the box, no width fitting); new renderers use
// NewPrinter(w).Table, which fits the terminal. It does honour --ascii.
func newTable(w io.Writer, title string) table.Writer {
	t := escTable{table.NewWriter()}
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	if StyleOf(w).ASCII {
		t.SetStyle(table.StyleDefault)
	}
	t.Style().Format.Header = text.FormatDefault
	t.Style().Title.Align = text.AlignLeft
	if title != "" {
		t.SetTitle(title)
	}
	return t
}

// escTable escapes the cells of a go-pretty table (string cells through
// userfile.TermLine), as Table.Row does, for the renderers that still use
// go-pretty directly.
type escTable struct{ table.Writer }

func (t escTable) AppendRow(r table.Row, c ...table.RowConfig) {
	t.Writer.AppendRow(escRow(r), c...)
}

func (t escTable) AppendRows(rs []table.Row, c ...table.RowConfig) {
	for _, r := range rs {
		t.Writer.AppendRow(escRow(r), c...)
	}
}

func escRow(r table.Row) table.Row {
	out := make(table.Row, len(r))
	for i, c := range r {
		if s, ok := c.(string); ok {
			out[i] = userfile.TermLine(s)
		} else {
			out[i] = c
		}
	}
	return out
}

// Inventory renders a snapshot as the tables a person reads: host summary,
// NUMA/CPU layout, device locality map, GPU↔NIC matrix, RDMA ports, GIDs,
// and what could not be read. Quiet keeps the summary and the errors.
func Inventory(w io.Writer, s *host.Snapshot) {
	p := NewPrinter(w)
	summary(p, s)
	if !p.St.Quiet {
		numaTable(p, s)
		localityTable(p, s)
		affinityMatrix(p, s)
		portsTable(p, s)
		gidTable(p, s)
	}
	collectErrors(p, s)
}

func summary(p *Printer, s *host.Snapshot) {
	name := s.Hostname
	if name == "" {
		name = "(unnamed host)"
	}
	line := p.Bold(userfile.TermLine(name))
	if s.Kernel.Release != "" {
		line += " · kernel " + userfile.TermLine(s.Kernel.Release)
	}
	p.Wrapped("", "  ", line+" · source "+userfile.TermLine(s.Source))
	pk, cores, threads := cpuCounts(s)
	smt := ""
	if cores > 0 && threads > cores {
		smt = fmt.Sprintf(", SMT %d", threads/cores)
	}
	// A capture of part of a host (a copy of /sys/class/infiniband alone)
	// holds no CPUs and no PCI functions: say so, never "0 packages" or
	// "IOMMU: off" as if they were facts.
	const absent = "not in this capture"
	if len(s.CPUs) == 0 && len(s.NUMANodes) == 0 {
		line = "CPUs: " + absent
	} else {
		line = fmt.Sprintf("CPUs: %d package(s), %d cores, %d threads%s, %d NUMA node(s)", pk, cores, threads, smt, len(s.NUMANodes))
	}
	if g := governors(s); g != "" {
		line += " · governor " + g
	}
	p.Wrapped("", "  ", line)
	iso := s.Kernel.Isolation
	iommu := iommuText(s.Kernel.IOMMU)
	if len(s.PCIDevices) == 0 && !s.Kernel.IOMMU.Present {
		iommu = absent
	}
	if len(s.CPUs) == 0 && iso.Isolated == "" && iso.NohzFull == "" {
		p.Wrapped("", "  ", "Isolated CPUs, nohz_full: "+absent+" · IOMMU: "+iommu)
	} else {
		p.Wrapped("", "  ", fmt.Sprintf("Isolated CPUs: %s · nohz_full: %s · IOMMU: %s", orNone(iso.Isolated), orNone(iso.NohzFull), iommu))
	}
	p.Wrapped("", "  ", fmt.Sprintf("Devices: %d PCI, %d GPU(s), %d RDMA device(s), %d netdev(s)", len(s.PCIDevices), len(s.GPUs), len(s.RDMADevices), len(s.NetDevs)))
	p.Printf("\n")
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

func numaTable(p *Printer, s *host.Snapshot) {
	if len(s.NUMANodes) == 0 {
		return
	}
	t := p.Table("NUMA nodes", Col{Name: "Node"}, Col{Name: "CPUs"}, Col{Name: "Cores", Drop: 3, AlignRight: true}, Col{Name: "Memory", Drop: 2},
		Col{Name: "Hugepages free/total", Drop: 4}, Col{Name: "Distances", Drop: 5}, Col{Name: "GPUs", Drop: 1}, Col{Name: "RDMA", Drop: 1})
	for _, n := range s.NUMANodes {
		set, _ := cpuset.Parse(n.CPUs)
		cores := map[[2]int]bool{}
		for _, c := range s.CPUs {
			if set.Contains(c.ID) {
				cores[[2]int{c.Package, c.Core}] = true
			}
		}
		var hp []string
		for _, pg := range n.HugePages {
			if pg.Total > 0 || pg.Free > 0 {
				hp = append(hp, fmt.Sprintf("%s: %d/%d", Bytes(pg.PageSizeBytes), pg.Free, pg.Total))
			}
		}
		var gpus, rdma []string
		for _, g := range s.GPUs {
			if g.NUMANode == n.ID {
				gpus = append(gpus, g.Address.Short())
			}
		}
		for _, r := range s.RDMADevices {
			if r.NUMANode == n.ID {
				rdma = append(rdma, r.Name)
			}
		}
		t.Row(n.ID, n.CPUs, len(cores), Bytes(n.MemTotalBytes), orDash(strings.Join(hp, ", ")), intsText(n.Distances), orDash(strings.Join(gpus, " ")), orDash(strings.Join(rdma, " ")))
	}
	t.Render()
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

// interesting picks the devices a locality map shows: GPUs, network
// controllers, every RDMA-capable function (InfiniBand class 0x0c06, or
// anything with an RDMA device), NVMe and accelerators; bridges and
// chipset functions are noise.
func interesting(d host.PCIDevice, s *host.Snapshot) bool {
	c := strings.ToLower(d.Class)
	return host.IsGPUClass(d.Class, d.Vendor) || strings.HasPrefix(c, "0x02") || strings.HasPrefix(c, "0x0108") || strings.HasPrefix(c, "0x12") || s.RDMACapable(&d)
}

// LocalityRow is one device of the locality map.
type LocalityRow struct {
	Name     string // "GPU H100 SXM5", "ConnectX-7"
	GPU      bool
	Address  string // short PCI address
	NUMA     string // "1", "1 (from local_cpulist)", "?"
	Driver   string
	Attached string // netdevs and RDMA devices of the function
	Link     string // "Gen4 x16", "Gen3 x8 / Gen4 x16"
	// LinkDegraded is set when the link trained below what both the device
	// and its slot can do.
	LinkDegraded bool
	Switch       string
	IOMMU        string
}

// Locality is the device locality map: the GPUs, NICs, NVMe drives and
// accelerators of a host (physical functions), where they sit and how their
// PCIe links trained.
func Locality(s *host.Snapshot) []LocalityRow {
	var out []LocalityRow
	for _, d := range s.PCIDevices {
		if !interesting(d, s) || d.PhysFn.IsValid() {
			continue
		}
		name := host.DeviceName(d.Vendor, d.Device)
		gpu := host.IsGPUClass(d.Class, d.Vendor)
		if name == "" {
			name = d.ClassName
		} else if gpu {
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
		link, degraded := linkText(d, s)
		out = append(out, LocalityRow{Name: name, GPU: gpu, Address: d.Address.Short(), NUMA: numa, Driver: orDash(d.Driver),
			Attached: orDash(strings.Join(attached(d.Address, s), " ")), Link: link, LinkDegraded: degraded, Switch: orDash(d.Switch.Short()), IOMMU: group})
	}
	return out
}

func localityTable(p *Printer, s *host.Snapshot) {
	rows := Locality(s)
	if len(rows) == 0 {
		p.Printf("Device locality: no GPU, network or NVMe PCI devices found.\n\n")
		return
	}
	t := p.Table("Device locality", Col{Name: "Device"}, Col{Name: "PCI address"}, Col{Name: "NUMA"}, Col{Name: "Driver", Drop: 3},
		Col{Name: "Netdev / RDMA", Drop: 1}, Col{Name: "PCIe link (now/max)", Drop: 2}, Col{Name: "Switch", Drop: 4}, Col{Name: "IOMMU", Drop: 5})
	for _, r := range rows {
		link := r.Link
		if r.LinkDegraded {
			link += " " + p.Outcome(check.Warn, "⚠")
		}
		t.Row(r.Name, r.Address, r.NUMA, r.Driver, r.Attached, link, r.Switch, r.IOMMU)
	}
	t.Render()
}

// attached lists the netdevs and RDMA devices of a PCI function.
func attached(addr host.PCIAddress, s *host.Snapshot) []string {
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

// linkText prints "Gen3 x16 / Gen4 x16" and whether the link trained below
// what both the device and its slot can do.
func linkText(d host.PCIDevice, s *host.Snapshot) (string, bool) {
	if d.MaxLinkWidth == 0 && d.CurrentLinkWidth == 0 {
		return "unknown", false
	}
	cur := pcieText(d.CurrentLinkSpeedGTps, d.CurrentLinkWidth)
	max := pcieText(d.MaxLinkSpeedGTps, d.MaxLinkWidth)
	if cur == max {
		return cur, false
	}
	gt, w := s.LinkCeiling(&d)
	return cur + " / " + max, d.CurrentLinkWidth > 0 && d.CurrentLinkSpeedGTps > 0 && (d.CurrentLinkWidth < w || d.CurrentLinkSpeedGTps < gt)
}

// AffinityView is the GPU↔NIC matrix as nvidia-smi topo -m prints it.
type AffinityView struct {
	NICs []string
	Rows []AffinityRow
}

// AffinityRow is one GPU's path level to each NIC (PIX, PXB, PHB, NODE, SYS).
type AffinityRow struct {
	GPU    string // "GPU0 18:00.0"
	NUMA   int
	Levels []string // one per NIC, "-" when unknown
}

// AffinityLegend explains the levels.
const AffinityLegend = "as nvidia-smi topo -m: PIX one PCIe switch · PXB several switches · PHB host bridge · NODE same NUMA node · SYS across NUMA nodes"

// Affinity returns the GPU↔NIC matrix, or nil when the host has no GPU or
// no RDMA device to pair.
func Affinity(s *host.Snapshot) *AffinityView {
	if len(s.GPUs) == 0 || len(s.Affinity) == 0 {
		return nil
	}
	v := &AffinityView{}
	for _, a := range s.Affinity {
		if !slices.Contains(v.NICs, a.RDMA) {
			v.NICs = append(v.NICs, a.RDMA)
		}
	}
	for i, g := range s.GPUs {
		r := AffinityRow{GPU: fmt.Sprintf("GPU%d %s", i, g.Address.Short()), NUMA: g.NUMANode}
		for _, n := range v.NICs {
			r.Levels = append(r.Levels, orDash(s.AffinityOf(g.Address, n)))
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}

// affinityMatrix prints the matrix, in slices of NIC columns when the
// terminal is too narrow for all of them (a matrix loses its meaning when
// columns are dropped or wrapped).
func affinityMatrix(p *Printer, s *host.Snapshot) {
	v := Affinity(s)
	if v == nil {
		return
	}
	keyWidth := len("NUMA") + 3 + 1
	colWidth := 0
	for _, r := range v.Rows {
		keyWidth = max(keyWidth, len(r.GPU)+len("NUMA")+7)
	}
	for _, n := range v.NICs {
		colWidth = max(colWidth, len(n), len("NODE"))
	}
	per := len(v.NICs)
	if p.St.Width > 0 {
		per = max(1, min(per, (p.St.Width-keyWidth)/(colWidth+3)))
	}
	for start := 0; start < len(v.NICs); start += per {
		end := min(start+per, len(v.NICs))
		title := "GPU ↔ NIC"
		if per < len(v.NICs) {
			title = fmt.Sprintf("GPU ↔ NIC (NICs %d–%d of %d)", start+1, end, len(v.NICs))
		}
		cols := []Col{{Name: "GPU"}, {Name: "NUMA"}}
		for _, n := range v.NICs[start:end] {
			cols = append(cols, Col{Name: n})
		}
		t := p.Table(title, cols...)
		for _, r := range v.Rows {
			row := []any{r.GPU, r.NUMA}
			for _, l := range r.Levels[start:end] {
				row = append(row, l)
			}
			t.Row(row...)
		}
		t.Render()
	}
	p.Wrapped("  ", "  ", AffinityLegend)
	p.Printf("\n")
}

func portsTable(p *Printer, s *host.Snapshot) {
	if len(s.RDMADevices) == 0 {
		p.Printf("RDMA: no devices in /sys/class/infiniband.\n\n")
		return
	}
	t := p.Table("RDMA ports", Col{Name: "Device"}, Col{Name: "Port", AlignRight: true}, Col{Name: "State"}, Col{Name: "Physical", Drop: 3},
		Col{Name: "Rate", Drop: 1}, Col{Name: "Link layer", Drop: 2}, Col{Name: "LID", Drop: 5}, Col{Name: "SM LID", Drop: 6},
		Col{Name: "Netdev (MTU)", Drop: 4}, Col{Name: "Firmware", Drop: 7})
	for _, d := range s.RDMADevices {
		if len(d.Ports) == 0 {
			t.Row(d.Name, "-", p.Outcome(check.Unknown, "no ports"), "", "", "", "", "", "", orDash(d.FWVersion))
		}
		for _, pt := range d.Ports {
			var nds []string
			for _, n := range pt.NetDevs {
				if nd := s.NetDev(n); nd != nil {
					nds = append(nds, fmt.Sprintf("%s (%d)", n, nd.MTUBytes))
				} else {
					nds = append(nds, n)
				}
			}
			rate := "-"
			if pt.Rate.Raw != "" {
				rate = pt.Rate.Raw
			}
			lid, sm := "-", "-"
			if pt.LinkLayer == "InfiniBand" {
				lid, sm = optInt(pt.LID), optInt(pt.SMLID)
			}
			t.Row(d.Name, pt.Port, p.portState(pt.State), orDash(pt.PhysState.String()), rate, orDash(pt.LinkLayer), lid, sm, orDash(strings.Join(nds, " ")), orDash(d.FWVersion))
		}
	}
	t.Render()
}

// portState colours a port state: ACTIVE green, DOWN red, anything between
// yellow.
func (p *Printer) portState(state portstate.State) string {
	switch state {
	case 0:
		return "-"
	case portstate.Active, portstate.ActiveDefer:
		return p.Outcome(check.Pass, state.Sysfs())
	case portstate.Down:
		return p.Outcome(check.Fail, state.Sysfs())
	}
	return p.Outcome(check.Warn, state.Sysfs())
}

func gidTable(p *Printer, s *host.Snapshot) {
	t := p.Table("GIDs", Col{Name: "Device"}, Col{Name: "Port", AlignRight: true}, Col{Name: "Index", AlignRight: true}, Col{Name: "GID"},
		Col{Name: "IPv4", Drop: 2}, Col{Name: "Type", Drop: 1}, Col{Name: "Netdev", Drop: 3})
	for _, d := range s.RDMADevices {
		for _, pt := range d.Ports {
			for _, g := range pt.GIDs {
				t.Row(d.Name, pt.Port, g.Index, g.GID, orDash(g.IPv4), orDash(g.Type), orDash(g.NetDev))
			}
		}
	}
	if t.Len() == 0 {
		return
	}
	t.Render()
}

func collectErrors(p *Printer, s *host.Snapshot) {
	if len(s.Errors) == 0 {
		return
	}
	p.Printf("%s\n", p.Outcome(check.Unknown, fmt.Sprintf("Could not read (%d) — the rest of the inventory stands:", len(s.Errors))))
	for _, e := range s.Errors {
		p.Wrapped("  ", "      ", e.Subject+": "+e.Error)
	}
	p.Printf("\n")
}

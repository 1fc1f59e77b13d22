package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/design"
)

// The design calculators' answers, fitted to the terminal like every
// other table: the working column is dropped first, then the formula, and
// the widest wrap between words.

func renderFigures(p *Printer, title string, fs []design.Figure) {
	t := p.Table(title, Col{Name: "Figure"}, Col{Name: "Value", AlignRight: true}, Col{Name: "Formula", Drop: 1}, Col{Name: "With the inputs", Drop: 2})
	for _, f := range fs {
		t.Row(f.Name, strings.TrimSpace(design.Num(f.Value)+" "+f.Unit), f.Formula, f.Working)
	}
	t.Render()
}

func bullets(p *Printer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	p.Printf("\n%s\n", title)
	for _, l := range lines {
		p.Wrapped("  • ", "    ", l)
	}
}

// RenderTransfer prints a transfer time with its working.
func DesignTransfer(w io.Writer, t *design.Transfer) {
	p := NewPrinter(w)
	p.Wrapped("", "  ", fmt.Sprintf("Transfer of %s over %d× %s with %d stream(s): %s s (%s s at line rate on one link)",
		t.Size, t.Links, t.Rate, t.Streams, design.Num(t.Seconds), design.Num(t.LineRateSeconds)))
	p.Printf("\n")
	renderFigures(p, "How", t.Figures)
	bullets(p, "Notes", t.Notes)
}

// RenderUplink prints the recommended uplink and why.
func DesignUplink(w io.Writer, u *design.Uplink) {
	p := NewPrinter(w)
	p.Wrapped("", "  ", fmt.Sprintf("Recommended uplink: %s (%s Gb/s for %s Gb/s required)", u.Recommended.Name, design.Num(u.Recommended.CapacityGbps), design.Num(u.RequiredGbps)))
	for _, a := range u.Alternatives {
		p.Wrapped("  or: ", "    ", a.Name)
	}
	p.Printf("\n")
	renderFigures(p, "How", u.Figures)
	bullets(p, "Why", u.Reasoning)
	bullets(p, "Flows, not NICs", u.Caveats)
	p.Printf("\n")
	t := p.Table("The uplink by workload (4 nodes × 4 GPUs)", Col{Name: "Profile"}, Col{Name: "Workload", Drop: 1}, Col{Name: "Sustained ingest"}, Col{Name: "Burst", Drop: 2}, Col{Name: "Uplink"})
	for _, pr := range design.Profiles {
		burst := "model-dependent"
		if pr.BurstGbps > 0 {
			burst = design.Num(pr.BurstGbps) + " Gb/s"
		}
		t.Row(pr.Name, pr.Title, fmt.Sprintf("%s–%s Gb/s", design.Num(pr.SustainedMinGbps), design.Num(pr.SustainedMaxGbps)), burst, pr.SeedUplink)
	}
	t.Render()
}

// RenderFabric prints the sizing; the cabling plan is summarised (it is
// written whole with --plan).
func DesignFabric(w io.Writer, f *design.Fabric) {
	p := NewPrinter(w)
	who := fmt.Sprintf("%d endpoints", f.Endpoints)
	if f.Nodes > 0 {
		who = fmt.Sprintf("%d nodes × %d rail NIC(s) = %d endpoints", f.Nodes, f.NICsPerNode, f.Endpoints)
		if f.GPUsPerNode > 0 {
			who += fmt.Sprintf(" (%d GPUs)", f.Nodes*f.GPUsPerNode)
		}
	}
	p.Wrapped("", "  ", fmt.Sprintf("%s, %s, %d-port switches at %s: %s", who, f.Layer, f.Radix, f.Rate, f.Design))
	switch f.Tiers {
	case 1:
		p.Wrapped("  ", "    ", fmt.Sprintf("1 switch, %d cables; a single switch suffices", f.Cables))
	case 2:
		p.Wrapped("  ", "    ", fmt.Sprintf("%d leaves + %d spines = %d switches, %d cables, %s:1 oversubscription", f.Leaves, f.Spines, f.Leaves+f.Spines, f.Cables, design.Num(f.Oversubscription)))
	case 3:
		p.Wrapped("  ", "    ", fmt.Sprintf("%d pods: %d leaves + %d aggregation + %d core = %d switches, %d cables, %s:1 oversubscription",
			f.Pods, f.Leaves, f.Spines, f.Cores, f.Leaves+f.Spines+f.Cores, f.Cables, design.Num(f.Oversubscription)))
	}
	p.Wrapped("  ", "    ", fmt.Sprintf("inter-node allreduce busbw: at most %s GB/s per node; %s–%s GB/s is healthy",
		design.Num(f.AllreduceCeilingGBps), design.Num(f.AllreduceHealthyGBps[0]), design.Num(f.AllreduceHealthyGBps[1])))
	p.Printf("\n")
	renderFigures(p, "How", f.Figures)
	bullets(p, "Notes", f.Notes)
	p.Printf("\n")
	p.Wrapped("", "  ", fmt.Sprintf("Cabling plan: %d cables (write it with --plan FILE.yaml; 'rdmalab fabric check --topology FILE.yaml' compares the fabric with it)", len(f.Cabling)))
	n := min(len(f.Cabling), 4)
	for _, l := range f.Cabling[:n] {
		p.Wrapped("  ", "    ", fmt.Sprintf("%s ↔ %s", l.A, l.B))
	}
	if len(f.Cabling) > n {
		p.Wrapped("  ", "    ", fmt.Sprintf("… %d more", len(f.Cabling)-n))
	}
}

// RenderFRR prints the ASN and address plan and the files.
func DesignFRR(w io.Writer, c *design.FRRClos, dir string) {
	p := NewPrinter(w)
	p.Printf("BGP-unnumbered routed Clos: %d spines × %d leaves\n\n", c.Spines, c.Leaves)
	t := p.Table("Switches", Col{Name: "Switch"}, Col{Name: "Role"}, Col{Name: "AS", AlignRight: true}, Col{Name: "Router id / loopback"}, Col{Name: "Hosts' network", Drop: 2}, Col{Name: "Fabric ports", Drop: 3}, Col{Name: "File", Drop: 1})
	for _, s := range c.Switches {
		network := "—"
		if s.Network != nil {
			network = fmt.Sprintf("%s (gateway %s)", s.Network, s.Gateway)
		}
		ports := fmt.Sprintf("%s–%s → %s", s.Ports[0].Name, s.Ports[len(s.Ports)-1].Name, peersText(s.Ports))
		t.Row(s.Name, s.Role, s.ASN, s.RouterID.String()+"/32", network, ports, s.File)
	}
	t.Render()
	p.Printf("\n")
	renderFigures(p, "How", c.Figures)
	bullets(p, "Why", c.Reasoning)
	if dir != "" {
		p.Printf("\nWrote %d files to %s; check each with: vtysh -C -f FILE\n", len(c.Files), dir)
	}
}

func peersText(ps []design.FRRPort) string {
	if len(ps) == 1 {
		return ps[0].Peer
	}
	return ps[0].Peer + "…" + ps[len(ps)-1].Peer
}

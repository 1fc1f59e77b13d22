package design

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
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

func renderFigures(w io.Writer, title string, fs []Figure) {
	t := newTable(w, title)
	t.AppendHeader(table.Row{"Figure", "Value", "Formula", "With the inputs"})
	for _, f := range fs {
		t.AppendRow(table.Row{f.Name, strings.TrimSpace(num(f.Value) + " " + f.Unit), f.Formula, f.Working})
	}
	t.Render()
}

func bullets(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	for _, l := range lines {
		fmt.Fprintf(w, "  • %s\n", l)
	}
}

// RenderTransfer prints a transfer time with its working.
func RenderTransfer(w io.Writer, t *Transfer) {
	fmt.Fprintf(w, "Transfer of %s over %d× %s with %d stream(s): %s s (%s s at line rate on one link)\n\n",
		t.Size, t.Links, t.Rate, t.Streams, num(t.Seconds), num(t.LineRateSeconds))
	renderFigures(w, "How", t.Figures)
	bullets(w, "Notes", t.Notes)
}

// RenderUplink prints the recommended uplink and why.
func RenderUplink(w io.Writer, u *Uplink) {
	fmt.Fprintf(w, "Recommended uplink: %s (%s Gb/s for %s Gb/s required)\n", u.Recommended.Name, num(u.Recommended.CapacityGbps), num(u.RequiredGbps))
	for _, a := range u.Alternatives {
		fmt.Fprintf(w, "  or: %s\n", a.Name)
	}
	fmt.Fprintln(w)
	renderFigures(w, "How", u.Figures)
	bullets(w, "Why", u.Reasoning)
	bullets(w, "Flows, not NICs", u.Caveats)
	fmt.Fprintln(w)
	t := newTable(w, "Seed 001's uplink table (4 nodes × 4 GPUs)")
	t.AppendHeader(table.Row{"Profile", "Workload", "Sustained ingest", "Burst", "Uplink"})
	for _, p := range Profiles {
		burst := "model-dependent"
		if p.BurstGbps > 0 {
			burst = num(p.BurstGbps) + " Gb/s"
		}
		t.AppendRow(table.Row{p.Name, p.Title, fmt.Sprintf("%s–%s Gb/s", num(p.SustainedMinGbps), num(p.SustainedMaxGbps)), burst, p.SeedUplink})
	}
	t.Render()
}

// RenderFabric prints the sizing; the cabling plan is summarised (it is
// written whole with --plan).
func RenderFabric(w io.Writer, f *Fabric) {
	who := fmt.Sprintf("%d endpoints", f.Endpoints)
	if f.Nodes > 0 {
		who = fmt.Sprintf("%d nodes × %d rail NIC(s) = %d endpoints", f.Nodes, f.NICsPerNode, f.Endpoints)
		if f.GPUsPerNode > 0 {
			who += fmt.Sprintf(" (%d GPUs)", f.Nodes*f.GPUsPerNode)
		}
	}
	fmt.Fprintf(w, "%s, %s, %d-port switches at %s: %s\n", who, f.Layer, f.Radix, f.Rate, f.Design)
	switch f.Tiers {
	case 1:
		fmt.Fprintf(w, "  1 switch, %d cables; a single switch suffices\n", f.Cables)
	case 2:
		fmt.Fprintf(w, "  %d leaves + %d spines = %d switches, %d cables, %s:1 oversubscription\n", f.Leaves, f.Spines, f.Leaves+f.Spines, f.Cables, num(f.Oversubscription))
	case 3:
		fmt.Fprintf(w, "  %d pods: %d leaves + %d aggregation + %d core = %d switches, %d cables, %s:1 oversubscription\n",
			f.Pods, f.Leaves, f.Spines, f.Cores, f.Leaves+f.Spines+f.Cores, f.Cables, num(f.Oversubscription))
	}
	fmt.Fprintf(w, "  inter-node allreduce busbw: at most %s GB/s per node; %s–%s GB/s is healthy\n\n",
		num(f.AllreduceCeilingGBps), num(f.AllreduceHealthyGBps[0]), num(f.AllreduceHealthyGBps[1]))
	renderFigures(w, "How", f.Figures)
	bullets(w, "Notes", f.Notes)
	fmt.Fprintf(w, "\nCabling plan: %d cables (write it with --plan FILE.yaml; 'rdmalab fabric check --topology FILE.yaml' compares the fabric with it)\n", len(f.Cabling))
	n := min(len(f.Cabling), 4)
	for _, l := range f.Cabling[:n] {
		fmt.Fprintf(w, "  %s ↔ %s\n", l.A, l.B)
	}
	if len(f.Cabling) > n {
		fmt.Fprintf(w, "  … %d more\n", len(f.Cabling)-n)
	}
}

// RenderFRR prints the ASN and address plan and the files.
func RenderFRR(w io.Writer, c *FRRClos, dir string) {
	fmt.Fprintf(w, "BGP-unnumbered routed Clos: %d spines × %d leaves\n\n", c.Spines, c.Leaves)
	t := newTable(w, "Switches")
	t.AppendHeader(table.Row{"Switch", "Role", "AS", "Router id / loopback", "Hosts' network", "Fabric ports", "File"})
	for _, s := range c.Switches {
		network := "—"
		if s.Network != nil {
			network = fmt.Sprintf("%s (gateway %s)", s.Network, s.Gateway)
		}
		ports := fmt.Sprintf("%s–%s → %s", s.Ports[0].Name, s.Ports[len(s.Ports)-1].Name, peersText(s.Ports))
		t.AppendRow(table.Row{s.Name, s.Role, s.ASN, s.RouterID.String() + "/32", network, ports, s.File})
	}
	t.Render()
	fmt.Fprintln(w)
	renderFigures(w, "How", c.Figures)
	bullets(w, "Why", c.Reasoning)
	if dir != "" {
		fmt.Fprintf(w, "\nWrote %d files to %s; check each with: vtysh -C -f FILE\n", len(c.Files), dir)
	}
}

func peersText(ps []FRRPort) string {
	if len(ps) == 1 {
		return ps[0].Peer
	}
	return ps[0].Peer + "…" + ps[len(ps)-1].Peer
}

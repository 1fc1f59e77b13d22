package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/plan"
)

// Plan renders a VM plan the way seed 000 lays it out by hand: the device
// locality map with each device's VM, who gets which cores on each NUMA
// node, one line per VM, the kernel line, hugepages, and the warnings.
func Plan(w io.Writer, p *plan.Plan) {
	r := p.Request
	fmt.Fprintf(w, "Plan for %s: %d VM(s), policy %s, %s hugepages, %d housekeeping cores\n\n",
		p.Host, len(p.VMs), r.Policy, Bytes(r.PageSizeBytes), r.HousekeepingCores)

	t := newTable(w, "Devices")
	t.AppendHeader(table.Row{"Device", "PCI", "NUMA", "IOMMU group", "Driver now", "VM", "Why"})
	for _, vm := range p.VMs {
		for _, d := range vm.Devices {
			name := d.Name
			if d.RDMA != "" {
				name += " (" + d.RDMA + ")"
			}
			t.AppendRow(table.Row{strings.ToUpper(d.Role) + " " + name, shortAddr(d.Address), d.NUMANode, optInt(d.IOMMUGroup), orDash(d.Driver), vm.Name, orDash(d.Why)})
		}
	}
	t.Render()
	fmt.Fprintln(w)

	t = newTable(w, "CPUs (whole cores)")
	t.AppendHeader(table.Row{"NUMA node", "CPUs", "Assignment"})
	last := -1
	for _, u := range p.CPUMap {
		node := ""
		if u.Node != last {
			node = fmt.Sprint(u.Node)
			last = u.Node
		}
		t.AppendRow(table.Row{node, u.CPUs, fmt.Sprintf("%s (%d cores)", u.Use, u.Cores)})
	}
	t.Render()
	fmt.Fprintln(w)

	t = newTable(w, "VMs")
	t.AppendHeader(table.Row{"VM", "vCPUs", "Topology", "Memory", "Guest cells (host node: vCPUs)", "Emulator", "GPU ↔ NIC"})
	for _, vm := range p.VMs {
		var cells, pairs []string
		for _, c := range vm.Cells {
			cells = append(cells, fmt.Sprintf("%d: %s", c.HostNode, c.VCPUs))
		}
		for _, pr := range vm.Pairs {
			switch {
			case pr.GPU == "":
				pairs = append(pairs, "NIC "+shortAddr(pr.NIC))
			case pr.NIC == "":
				pairs = append(pairs, shortAddr(pr.GPU)+" ↔ none")
			default:
				pairs = append(pairs, fmt.Sprintf("%s ↔ %s %s", shortAddr(pr.GPU), shortAddr(pr.NIC), pr.Level))
			}
		}
		t.AppendRow(table.Row{vm.Name, vm.VCPUs, fmt.Sprintf("%d×%d×%d", vm.Sockets, vm.CoresPerSkt, vm.Threads),
			Bytes(vm.MemoryBytes), strings.Join(cells, ", "), vm.EmulatorCPUs, strings.Join(pairs, "\n")})
	}
	t.Render()
	fmt.Fprintln(w)

	fmt.Fprintf(w, "Kernel command line: %s\n", strings.Join(p.KernelArgs, " "))
	var hp []string
	for _, n := range p.HugePages {
		hp = append(hp, fmt.Sprintf("node %d: %d (now %d)", n.Node, n.Pages, n.AllocatedPages))
	}
	fmt.Fprintf(w, "Hugepages of %s: %s\n", Bytes(r.PageSizeBytes), strings.Join(hp, ", "))
	if p.UnusedCPUs != "" {
		fmt.Fprintf(w, "Left to the host, not isolated: %s\n", p.UnusedCPUs)
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range p.Notes {
			fmt.Fprintf(w, "⚠ %-20s %s\n", n.Check, n.Message)
			for _, f := range n.Fix {
				fmt.Fprintf(w, "      fix: %s\n", f)
			}
		}
	}
}

// Refusal renders why a plan was refused and what was planned instead.
func Refusal(w io.Writer, reasons []check.Finding, nearest string) {
	for _, f := range reasons {
		fmt.Fprintf(w, "✗ %-20s %s\n", f.Check, f.Message)
	}
	if nearest != "" {
		fmt.Fprintf(w, "\nNearest feasible request: %s\n\n", nearest)
	}
}

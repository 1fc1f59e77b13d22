package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/plan"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Plan renders a VM plan the way seed 000 lays it out by hand: the device
// locality map with each device's VM, who gets which cores on each NUMA
// node, one line per VM, the kernel line, hugepages, and the warnings.
// Quiet keeps the first line and the warnings.
func Plan(w io.Writer, pl *plan.Plan) {
	p := NewPrinter(w)
	r := pl.Request
	p.Wrapped("", "  ", fmt.Sprintf("Plan for %s: %d VM(s), policy %s, %s hugepages, %d housekeeping cores",
		p.Bold(userfile.TermLine(pl.Host)), len(pl.VMs), r.Policy, Bytes(r.PageSizeBytes), r.HousekeepingCores))
	p.Printf("\n")
	if !p.St.Quiet {
		planTables(p, pl)
	}
	if len(pl.Notes) > 0 {
		if !p.St.Quiet {
			p.Printf("\n")
		}
		for _, n := range pl.Notes {
			p.findingLine(check.Warn, p.Text("⚠ ")+n.Check, userfile.Line(n.Message))
			for _, f := range n.Fix {
				p.Wrapped("      fix: ", "           ", userfile.Line(f))
			}
		}
	}
}

func planTables(p *Printer, pl *plan.Plan) {
	r := pl.Request
	t := p.Table("Devices", Col{Name: "Device"}, Col{Name: "PCI"}, Col{Name: "NUMA", Drop: 2}, Col{Name: "IOMMU group", Drop: 3},
		Col{Name: "Driver now", Drop: 4}, Col{Name: "VM"}, Col{Name: "Why", Drop: 1})
	for _, vm := range pl.VMs {
		for _, d := range vm.Devices {
			name := d.Name
			if d.RDMA != "" {
				name += " (" + d.RDMA + ")"
			}
			t.Row(strings.ToUpper(d.Role)+" "+name, d.Address.Short(), d.NUMANode, optInt(d.IOMMUGroup), orDash(d.Driver), vm.Name, orDash(d.Why))
		}
	}
	t.Render()

	t = p.Table("CPUs (whole cores)", Col{Name: "NUMA node"}, Col{Name: "CPUs"}, Col{Name: "Assignment"})
	last := -1
	for _, u := range pl.CPUMap {
		node := ""
		if u.Node != last {
			node = fmt.Sprint(u.Node)
			last = u.Node
		}
		t.Row(node, u.CPUs, fmt.Sprintf("%s (%d cores)", u.Use, u.Cores))
	}
	t.Render()

	t = p.Table("VMs", Col{Name: "VM"}, Col{Name: "vCPUs", AlignRight: true}, Col{Name: "Topology", Drop: 3}, Col{Name: "Memory"},
		Col{Name: "Guest cells (host node: vCPUs)", Drop: 2}, Col{Name: "Emulator", Drop: 4}, Col{Name: "GPU ↔ NIC", Drop: 1})
	for _, vm := range pl.VMs {
		var cells, pairs []string
		for _, c := range vm.Cells {
			cells = append(cells, fmt.Sprintf("%d: %s", c.HostNode, c.VCPUs))
		}
		for _, pr := range vm.Pairs {
			switch {
			case !pr.GPU.IsValid():
				pairs = append(pairs, "NIC "+pr.NIC.Short())
			case !pr.NIC.IsValid():
				pairs = append(pairs, pr.GPU.Short()+" ↔ none")
			default:
				pairs = append(pairs, fmt.Sprintf("%s ↔ %s %s", pr.GPU.Short(), pr.NIC.Short(), pr.Level))
			}
		}
		t.Row(vm.Name, vm.VCPUs, fmt.Sprintf("%d×%d×%d", vm.Sockets, vm.CoresPerSkt, vm.Threads),
			Bytes(vm.MemoryBytes), strings.Join(cells, ", "), vm.EmulatorCPUs, Lines(pairs))
	}
	t.Render()

	// Printed whole, never wrapped: it is copied into a boot loader.
	args := strings.Join(pl.KernelArgs, " ")
	if p.St.Width > 0 && len("Kernel command line: "+args) > p.St.Width {
		// Wrapped between arguments, never inside one; the files plan
		// writes (grubby.sh, grub) hold it on one line.
		p.Printf("Kernel command line:\n")
		p.Wrapped("  ", "  ", args)
	} else {
		p.Printf("Kernel command line: %s\n", args)
	}
	var hp []string
	for _, n := range pl.HugePages {
		hp = append(hp, fmt.Sprintf("node %d: %d (now %d)", n.Node, n.Pages, n.AllocatedPages))
	}
	p.Wrapped("", "  ", fmt.Sprintf("Hugepages of %s: %s", Bytes(r.PageSizeBytes), strings.Join(hp, ", ")))
	if pl.UnusedCPUs != "" {
		p.Wrapped("", "  ", "Left to the host, not isolated: "+pl.UnusedCPUs)
	}
	if f := pl.Fabric; f != nil {
		var parts []string
		for _, vm := range pl.VMs {
			if vm.Partition != nil {
				parts = append(parts, fmt.Sprintf("%s partition %d", vm.Name, vm.Partition.ID))
			}
		}
		line := fmt.Sprintf("NVSwitch: %s, %s", f.Board, f.Mode)
		if len(parts) > 0 {
			line += " (Fabric Manager: " + strings.Join(parts, ", ") + "; activate each before its VM starts, see CHECKLIST.md)"
		}
		p.Wrapped("", "  ", line)
	}
}

// Refusal renders why a plan was refused and what was planned instead.
func Refusal(w io.Writer, reasons []check.Finding, nearest string) {
	p := NewPrinter(w)
	for _, f := range reasons {
		p.findingLine(check.Fail, p.Text("✗ ")+f.Check, f.Message)
	}
	if nearest != "" {
		p.Printf("\nNearest feasible request: %s\n\n", nearest)
	}
}

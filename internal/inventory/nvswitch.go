package inventory

import (
	"fmt"
	"slices"

	"github.com/rdmalab/rdmalab/internal/host"
)

// baseboard recognises an NVSwitch GPU baseboard from the PCI devices:
// NVSwitches (10de, class 0680) next to NVIDIA GPUs. Fabric Manager's
// default partitions of an 8-GPU HGX board (H100/H200: one of 8, two of 4,
// four of 2, eight of 1) are by GPU module id, which needs the NVIDIA
// driver to read; a hypervisor should not load it. The GPUs are placed in
// PCI order per half, pairs of neighbours: on a real HGX H100 (fmpm -l with
// nvidia-smi's module ids, in ../shared/testdata/nvswitch) module order is
// not PCI order, but every 4- and 2-GPU partition is still such a run.
func baseboard(s *host.Snapshot) *host.Baseboard {
	var b host.Baseboard
	model := ""
	for i := range s.PCIDevices {
		d := &s.PCIDevices[i]
		if host.IsNVSwitch(d) {
			b.NVSwitches = append(b.NVSwitches, d.Address)
		}
	}
	if len(b.NVSwitches) == 0 {
		return nil
	}
	for _, g := range s.GPUs {
		if g.Vendor == "0x10de" {
			b.GPUs = append(b.GPUs, g.Address)
			if model == "" {
				model = host.DeviceName(g.Vendor, g.Device)
			}
		}
	}
	slices.SortFunc(b.GPUs, host.PCIAddress.Compare)
	slices.SortFunc(b.NVSwitches, host.PCIAddress.Compare)
	if model == "" {
		model = "GPU"
	}
	b.Name = fmt.Sprintf("HGX %s %d-GPU", model, len(b.GPUs))
	if len(b.GPUs) != 8 {
		b.PartitionSource = fmt.Sprintf("no default partition table known for %d GPUs with %d NVSwitches", len(b.GPUs), len(b.NVSwitches))
		return &b
	}
	b.PartitionSource = "Fabric Manager's default table for 8-GPU HGX boards (module ids 1-8); GPUs placed in PCI order, halves and neighbour pairs (module ids need the NVIDIA driver: confirm with fmpm -l)"
	// Module ids of the default table, as fmpm -l lists it on an HGX H100:
	// the pairs are modules 1+3, 2+4, 5+7 and 6+8.
	table := [][]int{{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4}, {5, 6, 7, 8}, {1, 3}, {2, 4}, {5, 7}, {6, 8},
		{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}}
	start := 0
	for id, mods := range table {
		if start+len(mods) > len(b.GPUs) {
			start = 0
		}
		b.Partitions = append(b.Partitions, host.FMPartition{ID: id, Modules: mods, GPUs: slices.Clone(b.GPUs[start : start+len(mods)])})
		start += len(mods)
	}
	return &b
}

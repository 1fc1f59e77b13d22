package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// followPartitions decides the NVSwitch side of a plan on a baseboard
// host. One VM with every GPU is full passthrough (its NVSwitches were
// added with its devices). Otherwise each VM's GPUs must be exactly one of
// Fabric Manager's partitions: NVLink between GPUs of different partitions
// is never set up, and a partition's GPUs cannot be split over VMs. A VM
// that does not match one says so, and why.
func followPartitions(p *Plan, s *host.Snapshot) []check.Finding {
	b := s.Baseboard
	if b == nil {
		return nil
	}
	p.Fabric = &Fabric{Board: b.Name, Mode: "shared-nvswitch", NVSwitches: slices.Clone(b.NVSwitches), PartitionSource: b.PartitionSource}
	var notes []check.Finding
	for i := range p.VMs {
		vm := &p.VMs[i]
		var gpus []host.PCIAddress
		for _, d := range vm.Devices {
			if d.Role == "gpu" && slices.Contains(b.GPUs, d.Address) {
				gpus = append(gpus, d.Address)
			}
			if d.Role == "nvswitch" {
				p.Fabric.Mode = "full-passthrough"
			}
		}
		if len(gpus) == 0 {
			continue
		}
		slices.SortFunc(gpus, host.PCIAddress.Compare)
		for _, part := range b.Partitions {
			if slices.Equal(part.GPUs, gpus) {
				vm.Partition = &part
				break
			}
		}
		if vm.Partition == nil {
			var sizes []string
			for _, part := range b.Partitions {
				if !slices.Contains(sizes, strconv.Itoa(len(part.GPUs))) {
					sizes = append(sizes, strconv.Itoa(len(part.GPUs)))
				}
			}
			why := "its GPUs are no Fabric Manager partition (partitions hold " + strings.Join(sizes, ", ") + " GPUs: halves and neighbour pairs in PCI order)"
			if len(b.Partitions) == 0 {
				why = b.PartitionSource
			}
			notes = append(notes, note(planNVSwitchPartition, vm.Name, "ask for VMs of whole partitions: --vms 1, 2, 4 or 8 on an 8-GPU board, or --vm lists that match fmpm -l",
				"%s cannot follow the NVSwitch partitions: %s; GPUs %s would have no NVLink between them in shared NVSwitch mode",
				vm.Name, why, host.JoinPCI(gpus, ", ")))
		}
	}
	if p.Fabric.Mode == "full-passthrough" {
		for i := range p.VMs {
			p.VMs[i].Partition = nil
		}
	}
	return notes
}

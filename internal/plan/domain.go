package plan

import (
	"fmt"
	"strconv"

	"github.com/rdmalab/rdmalab/internal/host"
	"libvirt.org/go/libvirtxml"
)

// Domain builds the libvirt domain of one planned VM: pinned vCPUs,
// emulator and iothread on housekeeping CPUs, strict per-cell numatune,
// hugepages, guest NUMA cells mirroring the host nodes with their
// distances, and each passed-through device on its own root port under
// the pcie-expander-bus of its cell, so the guest sees the host's locality.
func Domain(p *Plan, vm VM) (*libvirtxml.Domain, error) {
	kib := func(b int64) uint { return uint(b >> 10) }
	d := &libvirtxml.Domain{
		Type:          "kvm",
		Name:          vm.Name,
		Description:   fmt.Sprintf("planned by rdmalab on %s: %d vCPUs on NUMA nodes %s", p.Host, vm.VCPUs, joinInts(vm.NUMANodes)),
		Memory:        &libvirtxml.DomainMemory{Value: kib(vm.MemoryBytes), Unit: "KiB"},
		CurrentMemory: &libvirtxml.DomainCurrentMemory{Value: kib(vm.MemoryBytes), Unit: "KiB"},
		VCPU:          &libvirtxml.DomainVCPU{Placement: "static", Value: uint(vm.VCPUs)},
		IOThreads:     1,
		OS: &libvirtxml.DomainOS{
			Firmware: "efi",
			Type:     &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"},
		},
		Features:   &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}, APIC: &libvirtxml.DomainFeatureAPIC{}},
		OnPoweroff: "destroy", OnReboot: "restart", OnCrash: "destroy",
	}

	tune := &libvirtxml.DomainCPUTune{
		EmulatorPin: &libvirtxml.DomainCPUTuneEmulatorPin{CPUSet: vm.EmulatorCPUs},
		IOThreadPin: []libvirtxml.DomainCPUTuneIOThreadPin{{IOThread: 1, CPUSet: vm.EmulatorCPUs}},
	}
	for i, cpu := range vm.Pins {
		tune.VCPUPin = append(tune.VCPUPin, libvirtxml.DomainCPUTuneVCPUPin{VCPU: uint(i), CPUSet: strconv.Itoa(cpu)})
	}
	d.CPUTune = tune

	numa := &libvirtxml.DomainNuma{}
	nt := &libvirtxml.DomainNUMATune{Memory: &libvirtxml.DomainNUMATuneMemory{Mode: "strict", Nodeset: nodeset(vm.Cells)}}
	for _, c := range vm.Cells {
		id := uint(c.ID)
		cell := libvirtxml.DomainCell{ID: &id, CPUs: c.VCPUs, Memory: kib(c.MemoryBytes), Unit: "KiB"}
		if len(vm.Cells) > 1 && len(c.Distances) == len(vm.Cells) {
			cell.Distances = &libvirtxml.DomainCellDistances{}
			for j, dist := range c.Distances {
				cell.Distances.Siblings = append(cell.Distances.Siblings, libvirtxml.DomainCellSibling{ID: uint(j), Value: uint(dist)})
			}
		}
		numa.Cell = append(numa.Cell, cell)
		nt.MemNodes = append(nt.MemNodes, libvirtxml.DomainNUMATuneMemNode{CellID: id, Mode: "strict", Nodeset: strconv.Itoa(c.HostNode)})
	}
	d.NUMATune = nt
	d.CPU = &libvirtxml.DomainCPU{
		Mode:     "host-passthrough",
		Check:    "none",
		Topology: &libvirtxml.DomainCPUTopology{Sockets: vm.Sockets, Dies: 1, Cores: vm.CoresPerSkt, Threads: vm.Threads},
		Numa:     numa,
	}
	size := p.Request.PageSizeBytes
	d.MemoryBacking = &libvirtxml.DomainMemoryBacking{
		MemoryHugePages: &libvirtxml.DomainMemoryHugepages{Hugepages: []libvirtxml.DomainMemoryHugepage{{
			Size: uint(size >> 10), Unit: "KiB", Nodeset: fmt.Sprintf("0-%d", len(vm.Cells)-1),
		}}},
		// VFIO pins all guest memory; locked says so to libvirt's limits.
		MemoryLocked: &libvirtxml.DomainMemoryLocked{},
	}

	devs := &libvirtxml.DomainDeviceList{
		Disks: []libvirtxml.DomainDisk{{
			Device: "disk",
			Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: DiskPath(vm)}},
			Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
		}},
		Interfaces: []libvirtxml.DomainInterface{{
			Source: &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: "default"}},
			Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio"},
		}},
		// A balloon cannot reclaim pinned memory.
		MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
	}
	u := func(v uint) *uint { return &v }
	root := libvirtxml.DomainController{Type: "pci", Index: u(0), Model: "pcie-root"}
	if gpus := countRole(vm, "gpu"); gpus > 0 {
		// Large-BAR GPUs need a 64-bit MMIO window bigger than the default.
		root.PCI = &libvirtxml.DomainControllerPCI{Hole64: &libvirtxml.DomainControllerPCIHole64{Size: uint64(gpus) * 256 << 20, Unit: "KiB"}}
	}
	devs.Controllers = append(devs.Controllers, root)
	layout, err := guestLayout(vm)
	if err != nil {
		return nil, err
	}
	for _, c := range vm.Cells {
		devs.Controllers = append(devs.Controllers, libvirtxml.DomainController{
			Type: "pci", Index: u(layout.pxb[c.HostNode]), Model: "pcie-expander-bus",
			PCI: &libvirtxml.DomainControllerPCI{
				Model:  &libvirtxml.DomainControllerPCIModel{Name: "pxb-pcie"},
				Target: &libvirtxml.DomainControllerPCITarget{BusNr: u(layout.busNr[c.ID]), NUMANode: u(uint(c.ID))},
			},
			Address: pciAddr(0, uint(0x10+c.ID), 0, ""),
		})
	}
	for _, rp := range layout.ports {
		devs.Controllers = append(devs.Controllers, libvirtxml.DomainController{
			Type: "pci", Index: u(rp.index), Model: "pcie-root-port",
			Address: pciAddr(rp.pxb, rp.slot, 0, ""),
		})
	}
	for _, g := range layout.devices {
		a := g.host
		multi := ""
		if a.Function == 0 && hasOtherFunctions(vm, a) {
			multi = "on"
		}
		devs.Hostdevs = append(devs.Hostdevs, libvirtxml.DomainHostdev{
			Managed: "yes",
			SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{Source: &libvirtxml.DomainHostdevSubsysPCISource{
				Address: &libvirtxml.DomainAddressPCI{Domain: u(uint(a.Domain)), Bus: u(uint(a.Bus)), Slot: u(uint(a.Device)), Function: u(uint(a.Function))},
			}},
			Address: pciAddr(g.port, 0, uint(a.Function), multi),
		})
	}
	d.Devices = devs
	return d, nil
}

// DomainXML is the domain of vm, as libvirt reads it.
func DomainXML(p *Plan, vm VM) (string, error) {
	d, err := Domain(p, vm)
	if err != nil {
		return "", err
	}
	s, err := d.Marshal()
	if err != nil {
		return "", fmt.Errorf("marshal %s: %w", vm.Name, err)
	}
	return s + "\n", nil
}

func pciAddr(bus, slot, fn uint, multi string) *libvirtxml.DomainAddress {
	zero := uint(0)
	return &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{Domain: &zero, Bus: &bus, Slot: &slot, Function: &fn, MultiFunction: multi}}
}

func hasOtherFunctions(vm VM, a host.PCIAddress) bool {
	for _, d := range vm.Devices {
		if b := d.Address; b.Slot() == a.Slot() && b.Function != a.Function {
			return true
		}
	}
	return false
}

func countRole(vm VM, role string) int {
	n := 0
	for _, d := range vm.Devices {
		if d.Role == role {
			n++
		}
	}
	return n
}

func nodeset(cells []Cell) string {
	var ns []int
	for _, c := range cells {
		ns = append(ns, c.HostNode)
	}
	return joinComma(ns)
}

func joinComma(xs []int) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(x)
	}
	return s
}

// layout is where a VM's passed devices sit in the guest: one pxb-pcie
// expander bus per guest cell (controller index; a bus number allocated
// downward from 240 in steps of 16, wider when a cell has more than 15
// root ports), one pcie-root-port per physical device on its cell's
// expander bus, and each function on its port. The guest firmware numbers
// a root port's bus after its expander bus, in slot order, so each
// device's guest bus is fixed too; the NCCL topology file uses it.
type layout struct {
	pxb     map[int]uint // host node → expander bus controller index
	busNr   map[int]uint // guest cell → its expander bus's bus number
	ports   []rootPort
	devices []guestDevice
}

type rootPort struct {
	index, pxb, slot uint
}

type guestDevice struct {
	dev      Device
	host     host.PCIAddress
	port     uint // root port controller index
	cell     int
	guestBus uint
}

func guestLayout(vm VM) (layout, error) {
	l := layout{pxb: map[int]uint{}}
	next := uint(1)
	cellOf := map[int]int{}
	for _, c := range vm.Cells {
		l.pxb[c.HostNode] = next
		cellOf[c.HostNode] = c.ID
		next++
	}
	// Root ports per cell decide how far apart the expander buses' bus
	// numbers must be: a root port's bus follows its expander bus.
	perCell := map[int]map[string]bool{}
	for _, dev := range vm.Devices {
		a := dev.Address
		node := dev.NUMANode
		if _, ok := l.pxb[node]; !ok {
			node = vm.Cells[0].HostNode
		}
		if perCell[cellOf[node]] == nil {
			perCell[cellOf[node]] = map[string]bool{}
		}
		perCell[cellOf[node]][a.Slot()] = true
	}
	step := 16
	for _, slots := range perCell {
		step = max(step, len(slots)+1)
	}
	l.busNr = map[int]uint{}
	for _, c := range vm.Cells {
		l.busNr[c.ID] = uint(256 - step*(c.ID+1))
	}
	ports := map[string]int{} // host slot → index in l.ports
	slots := map[uint]uint{}  // expander bus → next slot
	for _, dev := range vm.Devices {
		a := dev.Address
		node := dev.NUMANode
		if _, ok := l.pxb[node]; !ok {
			node = vm.Cells[0].HostNode
		}
		bus := l.pxb[node]
		i, ok := ports[a.Slot()]
		if !ok {
			i = len(l.ports)
			ports[a.Slot()] = i
			l.ports = append(l.ports, rootPort{index: next, pxb: bus, slot: slots[bus]})
			next++
			slots[bus]++
		}
		rp := l.ports[i]
		cell := cellOf[node]
		l.devices = append(l.devices, guestDevice{dev: dev, host: a, port: rp.index, cell: cell, guestBus: l.busNr[cell] + 1 + rp.slot})
	}
	return l, nil
}

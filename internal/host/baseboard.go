package host

// Baseboard is an NVSwitch GPU baseboard (HGX): its GPUs, the NVSwitches
// that join their NVLinks, and Fabric Manager's default partitions. On
// such a board NVLink between GPUs only works once Fabric Manager has
// programmed the NVSwitches, so VMs must follow its partitions.
type Baseboard struct {
	// Name is the board by its GPU and switch models: "HGX H200 8-GPU".
	Name string `json:"name"`
	// GPUs and NVSwitches are PCI addresses, in PCI order.
	GPUs       []PCIAddress `json:"gpus"`
	NVSwitches []PCIAddress `json:"nvswitches"`
	// Partitions is Fabric Manager's default partition table for the
	// board (shared NVSwitch mode), largest first.
	Partitions []FMPartition `json:"partitions"`
	// PartitionSource says how GPUs were placed into partitions: the table
	// is by GPU module id, which only the NVIDIA driver shows.
	PartitionSource string `json:"partition_source"`
}

// FMPartition is one Fabric Manager GPU partition.
type FMPartition struct {
	ID int `json:"id"`
	// Modules are the GPUs' module (physical) ids, as fmpm -l lists them.
	Modules []int `json:"modules"`
	// GPUs are the PCI addresses believed to hold those modules.
	GPUs []PCIAddress `json:"gpus"`
}

// IsNVSwitch says whether a PCI function is an NVIDIA NVSwitch: vendor
// 10de, class bridge/other (0x0680), as lspci shows them on HGX boards.
func IsNVSwitch(d *PCIDevice) bool {
	return d.Vendor == "0x10de" && len(d.Class) >= 6 && d.Class[:6] == "0x0680"
}

// IsStorage says whether a PCI function is a mass storage controller
// (class 0x01: NVMe, SAS, SATA, RAID).
func IsStorage(d *PCIDevice) bool {
	return len(d.Class) >= 4 && d.Class[:4] == "0x01"
}

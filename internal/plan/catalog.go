package plan

import "github.com/rdmalab/rdmalab/internal/check"

// Every refusal reason (fail) and note (warn) a plan reports; refuse and
// note take one of these, so a reason's id and fixes come from its entry.
var (
	planDevices = check.Entry{ID: "plan.devices", Title: "The host has devices to pass through", Why: "A GPU/RDMA VM plan needs a GPU or an RDMA NIC on the host.", Source: "the host snapshot",
		Fixes: []string{"plan on a host with GPUs or RDMA NICs"}, Needs: "the snapshot's PCI devices", UnknownWhen: "never"}
	planVMs = check.Entry{ID: "plan.vms", Title: "The devices go round the VMs asked for", Why: "More VMs than devices to share leaves some without one; the nearest feasible request is given.", Source: "the host snapshot",
		Fixes: []string{"ask for fewer VMs (the nearest request is given)"}, Needs: "the snapshot's GPUs and NICs", UnknownWhen: "never"}
	planIOMMU = check.Entry{ID: "plan.iommu", Title: "Every device to pass through has an IOMMU group", Why: "VFIO passes whole IOMMU groups; a device without one cannot be passed through.", Source: "/sys/kernel/iommu_groups; VM-PLANNING.md",
		Fixes: []string{"enable the IOMMU (intel_iommu=on / amd_iommu=on iommu=pt) and VT-d/AMD-Vi in the BIOS"}, Needs: "iommu_group of each device", UnknownWhen: "never"}
	planIOMMUSplit = check.Entry{ID: "plan.iommu.split", Title: "An IOMMU group goes to one VM", Why: "Devices sharing an IOMMU group must go to the same VM (or none).", Source: "/sys/kernel/iommu_groups",
		Fixes: []string{"keep the group's devices together, or enable ACS so the kernel splits the group"}, Needs: "iommu_group of each device", UnknownWhen: "never"}
	planPolicy = check.Entry{ID: "plan.policy", Title: "The request's placement policy can be met", Why: "A policy (one NUMA node per VM, a NIC beside each GPU) the host cannot meet is refused with the nearest request.", Source: "the request",
		Fixes: []string{"relax the policy or ask for fewer VMs"}, Needs: "the PCI tree and NUMA nodes", UnknownWhen: "never"}
	planCPUs = check.Entry{ID: "plan.cpus", Title: "Each VM gets the cores it asks for on its NUMA nodes", Why: "vCPUs pinned off the VM's NUMA node cross the socket interconnect for every memory access.", Source: "VM-PLANNING.md",
		Fixes: []string{"ask for fewer vCPUs (the nearest request is given)"}, Needs: "CPUs, cores and NUMA nodes", UnknownWhen: "never"}
	planCPUsHousekeeping = check.Entry{ID: "plan.cpus.housekeeping", Title: "Housekeeping cores leave cores for VMs", Why: "The host keeps cores for itself and the emulator threads; asking for all of them leaves none.", Source: "VM-PLANNING.md",
		Fixes: []string{"fewer --housekeeping-cores"}, Needs: "the host's cores", UnknownWhen: "never"}
	planCPUsWholeCores = check.Entry{ID: "plan.cpus.whole-cores", Title: "VMs get whole cores", Why: "Two VMs on sibling threads of one core disturb each other; vCPUs come in whole cores.", Source: "VM-PLANNING.md; seed 000",
		Fixes: []string{"an even vCPU count on SMT hosts"}, Needs: "thread siblings", UnknownWhen: "never"}
	planCPUsEmulator = check.Entry{ID: "plan.cpus.emulator", Title: "Emulator threads have a core of their own", Why: "QEMU's emulator and I/O threads on a VM's vCPU cores steal its time.", Source: "VM-PLANNING.md",
		Fixes: []string{"--housekeeping-cores 2"}, Needs: "the housekeeping cores", UnknownWhen: "never"}
	planCPUsNoSMT = check.Entry{ID: "plan.cpus.no-smt", Title: "The guest topology says whether threads exist", Why: "Without SMT (or with it off) guests get threads=1; said so the guest's topology is not a surprise.", Source: "thread_siblings_list",
		Needs: "thread siblings", UnknownWhen: "never"}
	planNUMAUnknown = check.Entry{ID: "plan.numa.unknown", Title: "Devices and VMs have a known NUMA node", Why: "A device with numa_node -1 is placed without locality: the plan is a guess there.", Source: "numa_node, local_cpulist",
		Fixes: []string{"enable ACPI SRAT/NUMA in the BIOS"}, Needs: "numa_node of each device", UnknownWhen: "never: the note is itself about an unknown node"}
	planMemory = check.Entry{ID: "plan.memory", Title: "Each NUMA node has the memory its VMs ask for", Why: "Hugepages are reserved per node; a VM larger than its node's free memory cannot be backed there.", Source: "nodeN/meminfo; VM-PLANNING.md",
		Fixes: []string{"ask for less memory (the nearest request is given)"}, Needs: "each node's memory", UnknownWhen: "never"}
	planMemoryRounded = check.Entry{ID: "plan.memory.rounded", Title: "VM memory is a whole number of hugepages", Why: "Memory is backed in pages: a size that is not a multiple is rounded up.", Source: "the page size",
		Needs: "the request", UnknownWhen: "never"}
	planMemoryReserve = check.Entry{ID: "plan.memory.reserve", Title: "Hugepages are reserved at boot", Why: "1 GiB pages must be reserved on the kernel command line; at runtime memory is too fragmented.", Source: "kernel hugetlbpage.rst",
		Fixes: []string{"reboot with the kernel arguments of this plan"}, Needs: "the hugepage pools", UnknownWhen: "never"}
	planMemoryUneven = check.Entry{ID: "plan.memory.uneven", Title: "Per-node hugepages match the VMs' nodes", Why: "hugepages=N on the command line spreads pages evenly across nodes; VMs on one node need them there.", Source: "kernel hugetlbpage.rst",
		Fixes: []string{"after boot: echo N > /sys/devices/system/node/nodeX/hugepages/hugepages-SIZE/nr_hugepages"}, Needs: "the VMs' nodes", UnknownWhen: "never"}
	planPairNoNIC = check.Entry{ID: "plan.pair.no-nic", Title: "Each GPU has an RDMA NIC of its own", Why: "A GPU without its own NIC in the VM cannot use GPUDirect RDMA.", Source: "gpudirect pairing",
		Needs: "the PCI tree", UnknownWhen: "never"}
	planPairSys = check.Entry{ID: "plan.pair.sys", Title: "GPU and NIC pairs do not cross sockets", Why: "A GPU paired with a NIC across the CPU interconnect (SYS) gets no GPUDirect RDMA by default.", Source: "NCCL paths.cc (GDR level)",
		Needs: "the PCI tree and NUMA nodes", UnknownWhen: "never"}
	planStorageBoot = check.Entry{ID: "plan.storage.boot", Title: "The hypervisor's boot disk stays on the host", Why: "Storage under a GPU's PCIe switch goes to that GPU's VM for GPUDirect Storage; the controller of the disk the hypervisor boots from cannot be shared with a VM.", Source: "seed 004 (boot drive selection)",
		Fixes: []string{"install the hypervisor on a drive or controller not meant for the VMs", "rdmalab plan vms --keep-storage keeps every drive on the host"}, Needs: "the root file system's disk and its PCI controller (boot_disk in the snapshot)", UnknownWhen: "the snapshot does not say which disk / is on (an older snapshot), or the disk hangs under no PCI function it resolves"}
	planNVSwitchPartition = check.Entry{ID: "plan.nvswitch.partition", Title: "Each VM on an NVSwitch board holds whole Fabric Manager partitions", Why: "In shared NVSwitch mode Fabric Manager activates predefined partitions; GPUs of one VM outside a partition have no NVLink between them.", Source: "NVIDIA Fabric Manager user guide (shared NVSwitch virtualization); seed 004",
		Fixes: []string{"ask for VMs of whole partitions: --vms 1, 2, 4 or 8 on an 8-GPU board", "check the partitions with fmpm -l"},
		Needs: "the GPU baseboard and its partitions (inventory; confirm with fmpm -l)", UnknownWhen: "never: a board without known partitions says so in the note"}
)

// Catalog lists every refusal reason and note a plan reports
// (docs/checks.md is made from it). Refusals fail; notes warn.
var Catalog = []check.Entry{planDevices, planVMs, planIOMMU, planIOMMUSplit, planPolicy, planCPUs, planCPUsHousekeeping, planCPUsWholeCores, planCPUsEmulator, planCPUsNoSMT, planNUMAUnknown, planMemory, planMemoryRounded, planMemoryReserve, planMemoryUneven, planPairNoNIC, planPairSys, planStorageBoot, planNVSwitchPartition}

// Package host is the host model: what rdmalab knows about one machine's
// NUMA layout, CPUs, PCI tree, GPUs, RDMA devices and kernel, as a versioned
// JSON snapshot that every command accepts back with --snapshot. It holds the
// value types and their parsers and the pure computations over a snapshot
// (GPU↔NIC affinity, locality); reading a host lives in package inventory.
package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/phy"
	"io"
	"slices"
	"time"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// SchemaVersion is bumped on any change that removes or re-types a field.
// Added fields do not bump it. docs/snapshot.md documents every field.
// Version 2 made node and system-image GUIDs one typed spelling (0x and 16
// hex digits, as the fabric snapshot prints them); version-1 files, with
// sysfs's 506b:4b03:0043:3a00 form, still load.
const SchemaVersion = 2

// Snapshot is everything inventory learnt about one host.
type Snapshot struct {
	SchemaVersion int       `json:"schema_version"`
	Hostname      string    `json:"hostname"`
	CollectedAt   time.Time `json:"collected_at"`
	// Source is the root directory read ("/" on a live host).
	Source string `json:"source"`
	// Tool is set when the snapshot was read from a saved tool output
	// (ibstat, ibstatus, ibv_devinfo) rather than a host tree: it holds
	// the RDMA devices and ports that tool prints, and rules quote the
	// tool, not sysfs paths, as their evidence's source.
	Tool string `json:"tool,omitempty"`

	Kernel      Kernel         `json:"kernel"`
	NUMANodes   []NUMANode     `json:"numa_nodes"`
	CPUs        []CPU          `json:"cpus"`
	PCIDevices  []PCIDevice    `json:"pci_devices"`
	GPUs        []GPU          `json:"gpus"`
	RDMADevices []RDMADevice   `json:"rdma_devices"`
	Baseboard   *Baseboard     `json:"baseboard,omitempty"`
	NetDevs     []NetDev       `json:"netdevs"`
	Affinity    []AffinityPair `json:"gpu_nic_affinity"`
	// RoCE is the QoS of each RoCE netdev (host/roce.go).
	RoCE []RoCEQoS `json:"roce_qos,omitempty"`
	// Phy is the physical-layer facts of the host's ports, from the tool
	// outputs saved in its tree (docs/phy.md: var/lib/rdmalab/phy/) or
	// gathered live; absent when none were read.
	Phy []phy.Port `json:"phy,omitempty"`
	// BootDisk is the disk the root file system lives on, down to the
	// PCI function of its controller: the planner never hands it to a VM
	// (seed 004: the hypervisor's boot drive cannot be shared). nil when
	// not read (an older snapshot, a capture without /proc/mounts).
	BootDisk *BootDisk `json:"boot_disk,omitempty"`
	// Errors lists what could not be read; the rest of the snapshot still stands.
	Errors []CollectError `json:"errors"`
}

// CollectError is one thing inventory could not read or parse.
type CollectError struct {
	Subject string `json:"subject"` // "mlx5_0 port 1", "pci 0000:41:00.0", "numa node 2"
	Path    string `json:"path,omitempty"`
	Error   string `json:"error"`
}

// NUMANode is /sys/devices/system/node/nodeN.
type NUMANode struct {
	ID   int    `json:"id"`
	CPUs string `json:"cpus"` // kernel cpulist, "0-7,32-39"
	// MemTotalBytes and MemFreeBytes come from nodeN/meminfo.
	MemTotalBytes int64 `json:"mem_total_bytes"`
	MemFreeBytes  int64 `json:"mem_free_bytes"`
	// Distances is the SLIT row, indexed like NUMANodes' ids in order.
	Distances []int          `json:"distances"`
	HugePages []HugePagePool `json:"hugepages"`
	// GPUMemoryOf is set when the node is a GPU's memory exposed as a NUMA
	// node (POWER9/Grace with coherent GPUs, from /proc/driver/nvidia/gpus/*/numa_status);
	// such a node has no CPUs and is not where host threads or hugepages go.
	GPUMemoryOf string `json:"gpu_memory_of,omitempty"`
}

// HugePagePool is one page size's pool on a node, or system-wide.
type HugePagePool struct {
	PageSizeBytes int64 `json:"page_size_bytes"`
	Total         int64 `json:"total"`
	Free          int64 `json:"free"`
	Surplus       int64 `json:"surplus"`
}

// CPU is one logical CPU (/sys/devices/system/cpu/cpuN).
type CPU struct {
	ID       int    `json:"id"`
	Online   bool   `json:"online"`
	Package  int    `json:"package"`  // physical_package_id, -1 when the arch has none
	Die      int    `json:"die"`      // die_id, -1 when absent
	Core     int    `json:"core"`     // core_id, unique only within a package
	Siblings string `json:"siblings"` // thread_siblings_list, includes the CPU itself
	NUMANode int    `json:"numa_node"`
	Governor string `json:"governor,omitempty"`
}

// PCIDevice is one PCI function (/sys/bus/pci/devices/<address>).
type PCIDevice struct {
	Address         PCIAddress `json:"address"` // 0000:41:00.0
	Class           string     `json:"class"`   // 0x020000
	ClassName       string     `json:"class_name"`
	Vendor          string     `json:"vendor"` // 0x15b3
	Device          string     `json:"device"` // 0x1015
	SubsystemVendor string     `json:"subsystem_vendor,omitempty"`
	SubsystemDevice string     `json:"subsystem_device,omitempty"`
	Driver          string     `json:"driver,omitempty"` // "" when no driver is bound
	// NUMANode is numa_node as the kernel reports it (-1 = unknown).
	NUMANode int `json:"numa_node"`
	// LocalCPUs is local_cpulist.
	LocalCPUs string `json:"local_cpus,omitempty"`
	// LocalityNUMANode is where the device really sits: numa_node, or when
	// that is -1 the node whose CPUs equal local_cpulist (hwloc's fallback),
	// or -1. LocalitySource says which.
	LocalityNUMANode int    `json:"locality_numa_node"`
	LocalitySource   string `json:"locality_source"` // "numa_node", "local_cpulist", "single_node", "unknown"
	IOMMUGroup       *int   `json:"iommu_group,omitempty"`
	// ConfigBytes is how much of the function's config space sysfs let
	// the reader see: 64 bytes (the header) without root, 256 or 4096 as
	// root; 0 when not read (only bridges and RDMA NICs are read).
	// ACSCtl and ATSEnabled are set only when the extended capabilities
	// were readable and hold an ACS or ATS capability.
	ConfigBytes int     `json:"config_bytes,omitempty"`
	ACSCtl      *uint16 `json:"acs_ctl,omitempty"`
	ATSEnabled  *bool   `json:"ats_enabled,omitempty"`

	ResetMethod string `json:"reset_method,omitempty"`

	CurrentLinkSpeedGTps float64 `json:"current_link_speed_gtps,omitempty"`
	CurrentLinkWidth     int     `json:"current_link_width,omitempty"`
	MaxLinkSpeedGTps     float64 `json:"max_link_speed_gtps,omitempty"`
	MaxLinkWidth         int     `json:"max_link_width,omitempty"`

	// HostBridge is the pciDDDD:BB directory the device hangs under.
	HostBridge string `json:"host_bridge"`
	// Parents lists the upstream bridges, nearest first, up to the root port.
	Parents []PCIAddress `json:"parents,omitempty"`
	// BridgeRole is set for class 0x0604: "root_port", "switch_upstream",
	// "switch_downstream" or "bridge"; it is read from the tree's shape.
	BridgeRole string `json:"bridge_role,omitempty"`
	// Switch is the upstream-port address of the PCIe switch the device sits
	// directly below, if any.
	Switch PCIAddress `json:"switch,omitzero"`
	// SRIOV is set on physical functions that can make virtual functions.
	SRIOVTotalVFs int        `json:"sriov_total_vfs,omitempty"`
	SRIOVNumVFs   int        `json:"sriov_num_vfs,omitempty"`
	PhysFn        PCIAddress `json:"physfn,omitzero"` // set on a virtual function
	// Sources is where the attributes findings quote were read: a file
	// under the function's directory ("numa_node") → the host path read. An
	// attribute not read has no entry; a snapshot that does not say (an
	// older one, one parsed from a saved tool output) has none.
	Sources map[string]string `json:"sources,omitempty"`
}

// GPU is a PCI display or 3D controller or accelerator.
type GPU struct {
	Address  PCIAddress `json:"address"`
	Vendor   string     `json:"vendor"`
	Device   string     `json:"device"`
	Name     string     `json:"name"`
	Driver   string     `json:"driver"`    // nvidia, nouveau, amdgpu, vfio-pci, or "" (unbound)
	NUMANode int        `json:"numa_node"` // effective locality, -1 unknown
	Switch   PCIAddress `json:"switch,omitzero"`
}

// BootDisk is where the root file system is: the mounted device, the
// whole disk under it (through device-mapper slaves and partitions), and
// the PCI function of the disk's controller (invalid when the disk hangs
// under no PCI function: virtio-blk in a VM, or not resolvable).
type BootDisk struct {
	Mount  string     `json:"mount"`  // "/"
	Device string     `json:"device"` // /dev/mapper/cs-root, /dev/nvme0n1p2
	Disk   string     `json:"disk"`   // nvme0n1
	PCI    PCIAddress `json:"pci,omitzero"`
	Source string     `json:"source"` // where it was read
}

// RDMADevice is one /sys/class/infiniband/<name> device.
type RDMADevice struct {
	Name         string     `json:"name"`
	NodeType     string     `json:"node_type"` // CA, RNIC, switch, ...
	NodeGUID     GUID       `json:"node_guid,omitempty"`
	SysImageGUID GUID       `json:"sys_image_guid,omitempty"`
	NodeDesc     string     `json:"node_desc,omitempty"`
	FWVersion    string     `json:"fw_version,omitempty"`
	BoardID      string     `json:"board_id,omitempty"`
	HCAType      string     `json:"hca_type,omitempty"`
	PCIAddress   PCIAddress `json:"pci_address,omitzero"`
	Driver       string     `json:"driver,omitempty"`
	NUMANode     int        `json:"numa_node"`
	Ports        []RDMAPort `json:"ports"`
	// HWCounters are device-level hw_counters (some drivers), by file name.
	HWCounters map[string]uint64 `json:"hw_counters,omitempty"`
	// Sources is where the attributes findings quote were read: a file
	// under the device's directory ("board_id") → the host path read. An
	// attribute not read has no entry; a snapshot that does not say (an
	// older one, one parsed from a saved tool output) has none.
	Sources map[string]string `json:"sources,omitempty"`
}

// RDMAPort is /sys/class/infiniband/<dev>/ports/<n>.
type RDMAPort struct {
	Port int `json:"port"`
	// State and PhysState are unknown (zero) when the source does not
	// say; a snapshot spells them as sysfs does, with their numbers
	// (MarshalJSON).
	State     portstate.State `json:"state"`
	PhysState portstate.Phys  `json:"phys_state"`
	Rate      IBRate          `json:"rate"`
	// RateGbps repeats Rate.Gbps at the top level for scripts.
	RateGbps  float64 `json:"rate_gbps"`
	LinkLayer string  `json:"link_layer"` // InfiniBand, Ethernet
	// PortGUID is an InfiniBand port's GUID (the interface id of GID 0),
	// the key that finds this port in a fabric scan; zero on RoCE ports.
	PortGUID GUID `json:"port_guid,omitempty"`
	// LID and SMLID are nil when the files are absent (a partial capture):
	// unknown is not the same as 0 (unassigned).
	LID     *int   `json:"lid,omitempty"`
	SMLID   *int   `json:"sm_lid,omitempty"`
	SMSL    int    `json:"sm_sl"`
	LMC     int    `json:"lmc"`
	CapMask string `json:"cap_mask,omitempty"`
	GIDs    []GID  `json:"gids,omitempty"`
	// GIDTableMissing is set when gids/ was not in the source (a partial
	// capture): the GID table is unknown, not empty.
	GIDTableMissing bool `json:"gid_table_missing,omitempty"`
	// ActiveMTU and MaxMTU are the RDMA MTU the port runs at and the most
	// it supports, in bytes. sysfs does not show them on RoCE ports;
	// ibv_devinfo -v does. nil when not read.
	ActiveMTU *Read[int] `json:"active_mtu,omitempty"`
	MaxMTU    *Read[int] `json:"max_mtu,omitempty"`
	// NetDevs are the netdevs bound to this port (from gid_attrs/ndevs, or
	// the PCI function's net/ directory).
	NetDevs []string `json:"netdevs,omitempty"`
	// Counters are counters/* (PMA PortCounters) and HWCounters hw_counters/*,
	// by file name, as read. Unavailable lists files that were present but
	// not numeric ("N/A (no PMA)") or not readable (EINVAL).
	Counters    map[string]uint64 `json:"counters,omitempty"`
	HWCounters  map[string]uint64 `json:"hw_counters,omitempty"`
	Unavailable []string          `json:"unavailable_counters,omitempty"`
	// Sources is where the attributes findings quote were read: a file
	// under the port's directory ("counters") → the host path read. An
	// attribute not read has no entry; a snapshot that does not say (an
	// older one, one parsed from a saved tool output) has none.
	Sources map[string]string `json:"sources,omitempty"`
}

// MarshalJSON writes a port as a host snapshot always has: the states
// spelt as sysfs spells them ("ACTIVE", "LinkUp") with their numbers,
// then the port's other fields (plain shadows none but these). Reading
// needs no counterpart, so decoding errors keep their field and line: the
// states parse from any spelling (a tool's, kept by older snapshots) and
// the numbers, which only repeat them, are skipped.
func (p RDMAPort) MarshalJSON() ([]byte, error) {
	type plain RDMAPort // without this method
	return json.Marshal(struct {
		Port        int    `json:"port"`
		State       string `json:"state"`
		StateID     int    `json:"state_id"`
		PhysState   string `json:"phys_state"`
		PhysStateID int    `json:"phys_state_id"`
		plain
	}{p.Port, p.State.Sysfs(), p.State.ID(), p.PhysState.String(), p.PhysState.ID(), plain(p)})
}

// GID is one non-zero GID table entry.
type GID struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`  // canonical IPv6 form
	Type   string `json:"type"` // "IB/RoCE v1" or "RoCE v2"; "" if unreadable
	NetDev string `json:"netdev,omitempty"`
	IPv4   string `json:"ipv4,omitempty"` // for IPv4-mapped RoCE GIDs
}

// NetDev is /sys/class/net/<name>.
type NetDev struct {
	Name      string `json:"name"`
	MTUBytes  int    `json:"mtu_bytes"`
	SpeedMbps int    `json:"speed_mbps"` // -1 when unknown or link down
	OperState string `json:"operstate"`
	// AdminUp is IFF_UP of flags: the interface was set up ("ip link set
	// up"), whether or not it has a carrier; nil when flags was not read.
	AdminUp    *bool      `json:"admin_up,omitempty"`
	Type       int        `json:"type"` // ARPHRD: 1 Ethernet, 32 InfiniBand
	Address    string     `json:"address,omitempty"`
	Driver     string     `json:"driver,omitempty"`
	PCIAddress PCIAddress `json:"pci_address,omitzero"`
	IPoIBMode  string     `json:"ipoib_mode,omitempty"` // datagram, connected
	RDMADevice string     `json:"rdma_device,omitempty"`
	RDMAPort   int        `json:"rdma_port,omitempty"`
	// Master is the bond or bridge this netdev is enslaved to.
	Master string `json:"master,omitempty"`
	// ECN is the MLNX_OFED/DOCA ECN state (/sys/class/net/<if>/ecn); nil
	// where the driver does not expose it (inbox mlx5).
	ECN *ECN `json:"ecn,omitempty"`
	// Trust is the QoS trust mode (pcp or dscp) where exposed (qos/trust).
	Trust string `json:"trust,omitempty"`
	// Sources is where the attributes findings quote were read: a file
	// under the netdev's directory ("mtu") → the host path read. An
	// attribute not read has no entry; a snapshot that does not say (an
	// older one, one parsed from a saved tool output) has none.
	Sources map[string]string `json:"sources,omitempty"`
}

// ECN lists the priorities (0-7) with ECN enabled for RoCE, per role.
type ECN struct {
	// NotificationPoint priorities: the receiver marks CE and sends CNPs.
	NotificationPoint []int `json:"roce_np"`
	// ReactionPoint priorities: the sender slows down on CNPs.
	ReactionPoint []int `json:"roce_rp"`
}

// Kernel is the kernel and OS state that matters for RDMA and VMs.
type Kernel struct {
	Release   string        `json:"release,omitempty"`
	Cmdline   string        `json:"cmdline"`
	Params    []KernelParam `json:"params"`
	Modules   []Module      `json:"modules"`
	IOMMU     IOMMU         `json:"iommu"`
	Isolation CPUIsolation  `json:"cpu_isolation"`
	// HugePages are the system-wide pools from /sys/kernel/mm/hugepages.
	HugePages            []HugePagePool `json:"hugepages"`
	DefaultHugePageBytes int64          `json:"default_hugepage_bytes,omitempty"`
	HugetlbfsMounts      []Mount        `json:"hugetlbfs_mounts,omitempty"`
	MemTotalBytes        int64          `json:"mem_total_bytes,omitempty"`
	Memlock              Memlock        `json:"memlock"`
	GPUDirect            GPUDirect      `json:"gpudirect"`
	// ModuleVersions are /sys/module/<name>/version of the RDMA and GPU
	// modules that have one (OFED and NVIDIA modules do; inbox mlx5 does not).
	ModuleVersions map[string]string `json:"module_versions,omitempty"`
	NVIDIADriver   string            `json:"nvidia_driver,omitempty"` // /proc/driver/nvidia/version first line
}

// IOMMU says whether DMA remapping is on and how.
type IOMMU struct {
	// Present is true when /sys/kernel/iommu_groups has groups or /sys/class/iommu has units.
	Present bool `json:"present"`
	Groups  int  `json:"groups"`
	// Units are /sys/class/iommu entries (dmar0, ivhd0).
	Units []string `json:"units,omitempty"`
	// Passthrough is true when iommu=pt is on the command line.
	Passthrough bool `json:"passthrough"`
}

// CPUIsolation is isolcpus/nohz_full/rcu_nocbs as the kernel applied them.
type CPUIsolation struct {
	Isolated string `json:"isolated"`  // /sys/devices/system/cpu/isolated
	NohzFull string `json:"nohz_full"` // /sys/devices/system/cpu/nohz_full
	// RCUNoCBs comes from the command line; the kernel exposes no file.
	RCUNoCBs string `json:"rcu_nocbs,omitempty"`
	// Sources is where each was read ("isolated" → its sysfs file,
	// "rcu_nocbs" → /proc/cmdline); what was not read has no entry.
	Sources map[string]string `json:"sources,omitempty"`
}

// Mount is a hugetlbfs mount.
type Mount struct {
	Path          string `json:"path"`
	PageSizeBytes int64  `json:"page_size_bytes,omitempty"`
}

// Memlock is the locked-memory limit RDMA registration runs into.
type Memlock struct {
	// ProcessSoftBytes/HardBytes are this process's limits (-1 unlimited);
	// nil when not read (a capture without /proc/self/limits).
	ProcessSoftBytes *int64 `json:"process_soft_bytes,omitempty"`
	ProcessHardBytes *int64 `json:"process_hard_bytes,omitempty"`
	// Rules are the memlock lines of /etc/security/limits.conf and limits.d.
	Rules []LimitRule `json:"rules,omitempty"`
	// FilesRead lists the limits files that were read, with or without a
	// memlock line: none read is unknown, read without a rule is the
	// kernel's default limit.
	FilesRead []string `json:"files_read,omitempty"`
}

// LimitRule is one memlock line of a limits.conf file.
type LimitRule struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Domain string `json:"domain"` // "*", "@group", "user"
	Type   string `json:"type"`   // soft, hard, -
	Value  string `json:"value"`  // "unlimited" or KiB
}

// GPUDirect records what makes GPUDirect RDMA possible.
type GPUDirect struct {
	// PeerMem is the module that provides it: "nvidia_peermem", "nv_peer_mem", or "".
	PeerMem string `json:"peermem,omitempty"`
	// OpenKernelModule is true when the NVIDIA driver is the open kernel module
	// (needed for the DMA-BUF path).
	OpenKernelModule bool `json:"open_kernel_module,omitempty"`
}

// AffinityPair is the PCIe path between one GPU and one NIC, like a cell of
// `nvidia-smi topo -m`.
type AffinityPair struct {
	GPU   PCIAddress `json:"gpu"`
	NIC   PCIAddress `json:"nic"`
	RDMA  string     `json:"rdma,omitempty"` // mlx5_0
	Level string     `json:"level"`          // PIX, PXB, PHB, NODE, SYS (SYS? when a NUMA node is unknown)
}

// WrongKindError is a document that is not a host snapshot.
type WrongKindError struct {
	Path string // the file, when read from one
	Got  envelope.Kind
}

func (e *WrongKindError) Error() string {
	name := e.Path
	if name == "" {
		name = "input"
	}
	return fmt.Sprintf("%s is a %s document, not a host snapshot", name, e.Got)
}

// Decode reads a snapshot (document or bare) and checks its schema version.
func Decode(r io.Reader) (*Snapshot, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	return DecodeBytes(b)
}

// DecodeBytes is Decode over bytes already read.
func DecodeBytes(b []byte) (*Snapshot, error) {
	payload, err := envelope.Payload(b, envelope.HostSnapshot)
	if err != nil {
		var wk *envelope.WrongKindError
		if errors.As(err, &wk) {
			return nil, &WrongKindError{Got: wk.Got}
		}
		return nil, fmt.Errorf("not a snapshot: %w", err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(payload, &keys); err != nil {
		return nil, fmt.Errorf("not a snapshot: %w", envelope.Explain(b, payload, err))
	}
	if _, ok := keys["hostname"]; !ok {
		// A bare fabric snapshot from before documents had a kind.
		if _, sm := keys["subnet_managers"]; sm {
			return nil, &WrongKindError{Got: envelope.FabricSnapshot}
		}
	}
	var s Snapshot
	if err := json.Unmarshal(payload, &s); err != nil {
		return nil, fmt.Errorf("not a snapshot: %w", envelope.Explain(b, payload, err))
	}
	if s.SchemaVersion == 0 {
		return nil, fmt.Errorf("not a snapshot: no schema_version (make one with `rdmalab inventory --output json`)")
	}
	if s.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("schema_version %d is newer than this rdmalab understands (%d): upgrade rdmalab", s.SchemaVersion, SchemaVersion)
	}
	// Version 1 differs only in how GUIDs are spelt, which GUID's
	// UnmarshalText reads in either form; from here on it is current.
	s.SchemaVersion = SchemaVersion
	s.Normalize()
	return &s, nil
}

// Encode writes s as an rdmalab host-snapshot document (docs/json.md),
// the form every command reads back.
func (s *Snapshot) Encode(w io.Writer) error {
	return envelope.Write(w, envelope.HostSnapshot, nil, s)
}

// PCI returns the device at address, or nil.
func (s *Snapshot) PCI(address PCIAddress) *PCIDevice {
	i := slices.IndexFunc(s.PCIDevices, func(d PCIDevice) bool { return d.Address == address })
	if i < 0 {
		return nil
	}
	return &s.PCIDevices[i]
}

// RDMA returns the RDMA device named name, or nil.
func (s *Snapshot) RDMA(name string) *RDMADevice {
	i := slices.IndexFunc(s.RDMADevices, func(d RDMADevice) bool { return d.Name == name })
	if i < 0 {
		return nil
	}
	return &s.RDMADevices[i]
}

// NetDev returns the netdev named name, or nil.
func (s *Snapshot) NetDev(name string) *NetDev {
	i := slices.IndexFunc(s.NetDevs, func(d NetDev) bool { return d.Name == name })
	if i < 0 {
		return nil
	}
	return &s.NetDevs[i]
}

// HasModule reports whether a module is loaded (names compare with - and _ alike).
func (k Kernel) HasModule(name string) bool {
	n := normModule(name)
	return slices.ContainsFunc(k.Modules, func(m Module) bool { return normModule(m.Name) == n })
}

// Param returns the value of the last occurrence of a command-line key.
func (k Kernel) Param(key string) (string, bool) {
	for i := len(k.Params) - 1; i >= 0; i-- {
		if k.Params[i].Key == key {
			return k.Params[i].Value, true
		}
	}
	return "", false
}

func normModule(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

// Normalize makes absent lists empty so that JSON shows [] rather than null
// and consumers never need a nil check.
func (s *Snapshot) Normalize() {
	emptyIfNil(&s.Kernel.Params)
	emptyIfNil(&s.Kernel.Modules)
	emptyIfNil(&s.Kernel.HugePages)
	emptyIfNil(&s.NUMANodes)
	emptyIfNil(&s.CPUs)
	emptyIfNil(&s.PCIDevices)
	emptyIfNil(&s.GPUs)
	emptyIfNil(&s.RDMADevices)
	for i := range s.RDMADevices {
		emptyIfNil(&s.RDMADevices[i].Ports)
	}
	emptyIfNil(&s.NetDevs)
	emptyIfNil(&s.Affinity)
	emptyIfNil(&s.Errors)
}

func emptyIfNil[T any](p *[]T) {
	if *p == nil {
		*p = []T{}
	}
}

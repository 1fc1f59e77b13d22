// Package plan is the planner: from a host snapshot and a request it
// decides which GPUs, NICs and functions go to which VM, which host CPUs
// back which vCPUs, how much hugepage memory each NUMA node needs, and it
// emits the host configuration and libvirt domains that apply the plan.
// The rules it follows are in docs/plan.md.
package plan

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// Policy is how strictly a VM's devices and CPUs must share a NUMA node,
// named after Kubernetes' topology manager policies.
type Policy string

// Policies, strictest first.
const (
	// SingleNUMANode: each VM's devices, CPUs and memory on one NUMA node.
	SingleNUMANode Policy = "single-numa-node"
	// Restricted: each VM inside one socket, so GPUDirect RDMA can work.
	Restricted Policy = "restricted"
	// BestEffort: plan anyway and warn about every cross-node path.
	BestEffort Policy = "best-effort"
)

// Policies lists the valid policies.
var Policies = []Policy{SingleNUMANode, Restricted, BestEffort}

// Request is what the user asks for.
type Request struct {
	// VMs is the number of VMs to split the host's GPU+NIC pairs over; it is
	// ignored when Groups is set.
	VMs int `json:"vms,omitempty"`
	// Groups are explicit device lists, one per VM (PCI addresses, the
	// "0000:" domain optional). Each grows to whole IOMMU groups.
	Groups [][]string `json:"groups,omitempty"`
	// VCPUs per VM; 0 gives each VM every core local to its devices that
	// is not housekeeping or another VM's.
	VCPUs int `json:"vcpus,omitempty"`
	// MemoryBytes per VM; 0 takes the hugepages already reserved on the
	// VM's nodes, or else half of the nodes' memory.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// HousekeepingCores are whole cores the host keeps, half from the
	// lowest CPU ids and half from the highest (seed 000's "edges").
	HousekeepingCores int `json:"housekeeping_cores"`
	// PageSizeBytes is the hugepage size backing guest memory.
	PageSizeBytes int64 `json:"page_size_bytes"`
	// HostReserveBytes per NUMA node is kept out of hugepages for the host.
	HostReserveBytes int64  `json:"host_reserve_bytes"`
	Policy           Policy `json:"policy"`
	// NamePrefix names the VMs: vm00, vm01, ...
	NamePrefix string `json:"name_prefix"`
	// KeepStorage keeps storage controllers under a VM's PCIe switches on
	// the host instead of passing them with the VM.
	KeepStorage bool `json:"keep_storage,omitempty"`
	// OSInfo is the guest OS as osinfo names it (virt-install --osinfo):
	// virt-install 4.x refuses an --import without one.
	OSInfo string `json:"os_info"`
}

// DefaultOSInfo is osinfo's generic recent Linux: right for any current
// distribution's cloud image when the user does not name one.
const DefaultOSInfo = "linux2022"

// Defaults fills the zero fields of r with the planner's defaults, for
// callers that build a Request in code. The CLI sets every field from its
// flags and calls Validate, so a typed 0 is refused, never replaced.
func (r Request) Defaults() Request {
	if r.HousekeepingCores == 0 {
		r.HousekeepingCores = 4
	}
	if r.PageSizeBytes == 0 {
		r.PageSizeBytes = 1 << 30
	}
	if r.HostReserveBytes == 0 {
		r.HostReserveBytes = 4 << 30
	}
	if r.Policy == "" {
		r.Policy = BestEffort
	}
	if r.NamePrefix == "" {
		r.NamePrefix = "vm"
	}
	if r.OSInfo == "" {
		r.OSInfo = DefaultOSInfo
	}
	if r.VMs == 0 && len(r.Groups) == 0 {
		r.VMs = 1
	}
	return r
}

// Plan is the planner's answer. Every field is decided; emitting files
// from it involves no further choice.
type Plan struct {
	Host    string  `json:"host"`
	Request Request `json:"request"`
	VMs     []VM    `json:"vms"`
	// HousekeepingCPUs stay with the host: its OS, IRQs, emulator threads.
	HousekeepingCPUs string `json:"housekeeping_cpus"`
	// IsolatedCPUs back vCPUs: isolcpus/nohz_full/rcu_nocbs.
	IsolatedCPUs string `json:"isolated_cpus"`
	// UnusedCPUs are neither housekeeping nor given to a VM (left to the host).
	UnusedCPUs string `json:"unused_cpus,omitempty"`
	SMT        bool   `json:"smt"`
	// CPUVendor is the host CPU's vendor id (GenuineIntel, AuthenticAMD),
	// which the guest's NCCL topology file names.
	CPUVendor string `json:"cpu_vendor"`
	// CPUMap says who gets every host core, node by node, like seed 000's table.
	CPUMap    []CPUUse    `json:"cpu_map"`
	HugePages []NodePages `json:"hugepages"`
	// KernelArgs is the kernel command line the plan needs, in order.
	KernelArgs []string `json:"kernel_args"`
	// Fabric is how the NVSwitch baseboard is shared, when the host has one.
	Fabric *Fabric `json:"fabric,omitempty"`
	// Notes are warnings about the plan, in the shared finding shape.
	Notes []check.Finding `json:"notes"`
}

// VM is one planned guest.
type VM struct {
	Name    string   `json:"name"`
	Devices []Device `json:"devices"`
	Pairs   []Pair   `json:"pairs"`
	// NUMANodes are the host nodes the VM's devices sit on, one guest cell each.
	NUMANodes   []int  `json:"numa_nodes"`
	Cells       []Cell `json:"cells"`
	VCPUs       int    `json:"vcpus"`
	Sockets     int    `json:"sockets"`
	CoresPerSkt int    `json:"cores_per_socket"`
	Threads     int    `json:"threads"`
	// Pins maps vCPU i to host CPU Pins[i]; vCPUs 2k and 2k+1 are one host core
	// when Threads is 2.
	Pins         []int  `json:"vcpu_pins"`
	EmulatorCPUs string `json:"emulator_cpus"`
	MemoryBytes  int64  `json:"memory_bytes"`
	// Partition is the Fabric Manager partition holding the VM's GPUs on an
	// NVSwitch baseboard (shared NVSwitch mode).
	Partition *host.FMPartition `json:"fm_partition,omitempty"`
}

// Fabric is the NVSwitch side of a plan: full passthrough (one VM holds
// every GPU and the NVSwitches, Fabric Manager runs in it) or shared
// NVSwitch (the NVSwitches go to a service VM running Fabric Manager with
// FABRIC_MODE=1, which activates each VM's partition before it starts).
type Fabric struct {
	Board      string            `json:"board"`
	Mode       string            `json:"mode"` // "full-passthrough" or "shared-nvswitch"
	NVSwitches []host.PCIAddress `json:"nvswitches"`
	// PartitionSource says how the partitions' GPUs were known.
	PartitionSource string `json:"partition_source"`
}

// Device is one PCI function handed to a VM.
type Device struct {
	Address    host.PCIAddress `json:"address"`
	Role       string          `json:"role"` // gpu, nic, function (comes along with its group)
	Name       string          `json:"name"`
	RDMA       string          `json:"rdma,omitempty"`
	NUMANode   int             `json:"numa_node"`
	IOMMUGroup *int            `json:"iommu_group,omitempty"`
	Driver     string          `json:"driver,omitempty"`
	// Why says why a function that was not asked for comes along.
	Why string `json:"why,omitempty"`
	// Class and the PCIe link as the host trained it, for the guest's
	// NCCL topology file.
	Class     string  `json:"class"`
	LinkGTps  float64 `json:"link_gtps,omitempty"`
	LinkWidth int     `json:"link_width,omitempty"`
}

// Pair is a GPU and the NIC chosen for it, with their PCIe path level.
type Pair struct {
	GPU   host.PCIAddress `json:"gpu"`
	NIC   host.PCIAddress `json:"nic,omitzero"`
	RDMA  string          `json:"rdma,omitempty"`
	Level string          `json:"level,omitempty"`
}

// Cell is one guest NUMA cell, backed by one host node.
type Cell struct {
	ID          int    `json:"id"`
	HostNode    int    `json:"host_node"`
	HostCPUs    string `json:"host_cpus"`
	VCPUs       string `json:"vcpus"`
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memory_bytes"`
	// Distances to the VM's cells, in cell order, from the host's SLIT.
	Distances []int `json:"distances"`
}

// CPUUse is a run of whole cores of one node and who has them.
type CPUUse struct {
	Node  int    `json:"node"`
	CPUs  string `json:"cpus"`
	Cores int    `json:"cores"`
	Use   string `json:"use"` // "host", "vm00", "unused"
}

// NodePages is the hugepage reservation one host node needs.
type NodePages struct {
	Node           int   `json:"node"`
	Pages          int64 `json:"pages"`
	PageSizeBytes  int64 `json:"page_size_bytes"`
	AllocatedPages int64 `json:"allocated_pages"` // what the host has now
	CapacityBytes  int64 `json:"capacity_bytes"`  // node memory minus host reserve
}

// Refusal is a request the planner will not plan, with why and the
// nearest request it would plan.
type Refusal struct {
	Reasons []check.Finding
	Nearest *Request
}

func (r *Refusal) Error() string {
	msgs := make([]string, len(r.Reasons))
	for i, f := range r.Reasons {
		msgs[i] = f.Message
	}
	return "cannot plan: " + strings.Join(msgs, "; ")
}

// Make plans req on s. It returns a *Refusal when the request cannot be
// met, and a plain error for a request that names devices s does not have.
func Make(s *host.Snapshot, req Request) (*Plan, error) {
	req = req.Defaults()
	if err := validate(s, req); err != nil {
		return nil, err
	}
	p := &Plan{Host: s.Hostname, Request: req}
	t := newTopology(s)
	groups, notes, refusal := assignDevices(s, t, req)
	if refusal != nil {
		return nil, refusal
	}
	p.Notes = append(p.Notes, notes...)
	for i, g := range groups {
		p.VMs = append(p.VMs, VM{Name: fmt.Sprintf("%s%02d", req.NamePrefix, i), Devices: g.devices, Pairs: g.pairs, NUMANodes: g.nodes})
	}
	p.Notes = append(p.Notes, followPartitions(p, s)...)
	if r := placeCPUs(p, t, req); r != nil {
		return nil, r
	}
	if r := placeMemory(p, s, req); r != nil {
		return nil, r
	}
	p.KernelArgs = kernelArgs(p, s)
	p.CPUVendor = "AuthenticAMD"
	if hostIsIntel(s) {
		p.CPUVendor = "GenuineIntel"
	}
	check.Sort(p.Notes)
	return p, nil
}

// MakeOrNearest plans req, and when it is refused plans the nearest
// feasible request instead. It returns the refusal alongside that plan.
func MakeOrNearest(s *host.Snapshot, req Request) (*Plan, *Refusal, error) {
	p, err := Make(s, req)
	if err == nil {
		return p, nil, nil
	}
	ref, ok := err.(*Refusal)
	if !ok || ref.Nearest == nil {
		return nil, ref, err
	}
	// Nearest may itself need a further step (fewer VMs, then less memory).
	next := *ref.Nearest
	for range 4 {
		p, err2 := Make(s, next)
		if err2 == nil {
			return p, ref, nil
		}
		r2, ok := err2.(*Refusal)
		if !ok || r2.Nearest == nil {
			break
		}
		ref.Reasons = append(ref.Reasons, r2.Reasons...)
		next = *r2.Nearest
	}
	return nil, ref, err
}

func validate(s *host.Snapshot, req Request) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if len(s.CPUs) == 0 {
		return fmt.Errorf("snapshot of %s has no CPUs: re-run inventory on the host", s.Hostname)
	}
	return nil
}

// refuse is a refusal for reason e (a Catalog entry), with the nearest
// request the host could meet (nil: none).
func refuse(nearest *Request, e check.Entry, subject, format string, a ...any) *Refusal {
	return &Refusal{Nearest: nearest, Reasons: []check.Finding{e.Reporter("").New(check.Fail, subject, format, a...)}}
}

// note is a warning of check e about subject; fix, when given, replaces
// the entry's fixes with one naming what the plan knows.
func note(e check.Entry, subject, fix, format string, a ...any) check.Finding {
	f := e.Reporter("").New(check.Warn, subject, format, a...)
	if fix != "" {
		f.Fix = []string{fix}
	}
	return f
}

// Package hostcheck holds doctor's health rules over host snapshots: one
// host at a time, and the fleet rules that compare hosts. Every rule is a
// pure function of snapshots, table-tested without a filesystem.
package hostcheck

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
	"k8s.io/utils/cpuset"
)

// Options are what the user expects of the hosts.
type Options struct {
	// Expect is what every active RDMA port should be: its rate (none:
	// the fleet's or the host's majority) and link layer, InfiniBand or
	// RoCE (none: not checked), with where the belief comes from
	// (--expect-rate, --expect-link-layer).
	Expect linkrate.Expect
	// ExpectPorts lists the ports that must be up ("mlx5_0/1", or "mlx5_0"
	// for every port of a device); nil means no list. A port not in a
	// given list is unused, not failed.
	ExpectPorts []string
	// RequireRDMA says the host must have RDMA ports even without an
	// --expect-* flag: --nhc sets it, since a node health check for RDMA
	// runs where RDMA is meant to be.
	RequireRDMA bool
	// Profile is "" (bare metal) or VMHost: a hypervisor passing devices
	// to VMs, judged by the vm-host rules instead of guest-side ones.
	Profile string
	// ExpectIPoIB is the IPoIB mode every IPoIB interface must use
	// ("connected" or "datagram"; "": not required). Set, it also requires
	// ib_ipoib and at least one IPoIB interface (--expect-ipoib).
	ExpectIPoIB string
	// AllowKernels are glob patterns of kernel releases that may coexist
	// in the fleet (--allow-kernels): a declared mix passes fleet.kernel.
	AllowKernels []string
	// Progress, when set, is told each rule's id before it runs, so a
	// caller with a time limit can say which check overran it.
	Progress func(checkID string)
	// Only, when set, limits doctor to these check ids (judge passes
	// PortRules for a saved port listing, which shows nothing else).
	Only []string

	// fleetRate is the rate the fleet's majority runs at, per link layer,
	// when the user gave no --expect-rate (set by Doctor).
	fleetRate map[linkrate.Layer]linkrate.Expect
}

// expectsRDMA reports whether the user asked for RDMA ports by any flag.
func (o Options) expectsRDMA() bool {
	return o.RequireRDMA || o.Expect.HasRate() || o.Expect.Layer != "" || len(o.ExpectPorts) > 0
}

// CheckPorts validates an --expect-ports list: each entry is DEV (every
// port of the device) or DEV/PORT with PORT a number from 1.
func CheckPorts(list []string) error {
	for _, e := range list {
		d, p, found := strings.Cut(e, "/")
		n, err := strconv.Atoi(p)
		if d == "" || strings.ContainsAny(d, " \t") || (found && (err != nil || n < 1)) {
			return fmt.Errorf("%q: want DEV or DEV/PORT, e.g. mlx5_0 or mlx5_0/1", e)
		}
	}
	return nil
}

// expectedPort reports whether the user's --expect-ports names the port
// (and whether there is a list at all).
func (o Options) expectedPort(dev string, port int) (listed, hasList bool) {
	if len(o.ExpectPorts) == 0 {
		return false, false
	}
	for _, e := range o.ExpectPorts {
		d, p, found := strings.Cut(e, "/")
		if d == dev && (!found || p == strconv.Itoa(port)) {
			return true, true
		}
	}
	return false, true
}

// PortRules are the checks a saved port listing (ibstat, ibstatus,
// ibv_devinfo) can feed: it shows ports, not PCI, kernel or counters.
var PortRules = []string{"port.state", "port.rate.below-expected", "port.rate.below-nic-max", "port.link-layer", "ib.sm", "roce.mtu.path"}

// runs reports whether Only lets the check run.
func (o Options) runs(id string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, id) }

// rateExpectation is the rate a port of device d should run at, and why:
// --expect-rate, else the fleet's majority, else the majority of this
// host's active ports of the same model and link layer (an 8-rail node
// with one port at half rate).
func (o Options) rateExpectation(s *host.Snapshot, d host.RDMADevice, layer linkrate.Layer) (linkrate.Expect, bool) {
	if o.Expect.HasRate() {
		return o.Expect, true
	}
	if e, ok := o.fleetRate[layer]; ok {
		return e, true
	}
	return hostRate(s, nicModel(s, d), layer)
}

// hostRate is the rate a real majority (≥3 ports, more than half) of the
// host's active ports of one model and link layer run at.
func hostRate(s *host.Snapshot, model string, layer linkrate.Layer) (linkrate.Expect, bool) {
	count := map[float64]int{}
	total := 0
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if l, _ := linkrate.SysfsLayer(p.LinkLayer); l == layer && p.RateGbps > 0 && nicModel(s, d) == model {
			count[p.RateGbps]++
			total++
		}
	})
	best, n := 0.0, 0
	for r, c := range count {
		if c > n || (c == n && r > best) {
			best, n = r, c
		}
	}
	if total < minFleet || 2*n <= total {
		return linkrate.Expect{}, false
	}
	return linkrate.Expect{Rate: linkrate.Rate{Gbps: best}, Layer: layer, Source: fmt.Sprintf("host majority: %d of %d active %s %s ports", n, total, model, layer)}, true
}

// rule is one host rule: its catalog entry and the function that judges
// a snapshot, reporting through a reporter bound to the entry (its id,
// the catalog's fixes on a failure unless the rule names specific ones).
type rule struct {
	check.Entry
	run func(rep *check.Reporter, s *host.Snapshot, o Options)
}

// fixesWith is a catalog's fixes with a placeholder filled in.
func fixesWith(fixes []string, placeholder, value string) []string {
	out := make([]string, len(fixes))
	for i, f := range fixes {
		out[i] = strings.ReplaceAll(f, placeholder, value)
	}
	return out
}

func ev(what, value, source string) check.Evidence {
	return check.Evidence{What: what, Value: value, Source: source}
}

// readAt is where the snapshot says file was read: an attribute of one
// device, port or PCI function ("rate"), or a file under one of its
// directories ("counters/link_downed"). When the snapshot does not say (an
// older snapshot, a saved tool output) it is the snapshot's own source:
// a finding never quotes a path that was not read.
func readAt(s *host.Snapshot, sources map[string]string, file string) string {
	if p, ok := sources[file]; ok {
		return p
	}
	if dir, name, ok := strings.Cut(file, "/"); ok {
		if p, ok := sources[dir]; ok {
			return p + "/" + name
		}
	}
	return cmp.Or(s.Tool, s.Source)
}

// readAtAll is where files were read, each place once.
func readAtAll(s *host.Snapshot, sources map[string]string, files ...string) string {
	var out []string
	for _, f := range files {
		if p := readAt(s, sources, f); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func portSubject(dev string, port int) string { return fmt.Sprintf("%s port %d", dev, port) }

// Rules is every host rule, in catalog order.
var Rules = []rule{
	{check.Entry{ID: "rdma.driver", Title: "Every RDMA-capable PCI function has its RDMA device",
		Why:    "A ConnectX on mlx5_core without mlx5_ib (or an HCA with no driver) passes Ethernet traffic but has no verbs device: no RDMA, NCCL falls back to sockets. Typical after a kernel update that left OFED's modules behind.",
		Source: "issue 11 (mlx5_ib not loaded, OFED broken after a kernel update); RDMA reference §1",
		Fixes:  []string{"modprobe mlx5_ib (mlx4_ib for ConnectX-3)", "after a kernel update reinstall MLNX_OFED/DOCA for the running kernel (dkms status; modinfo mlx5_ib)"},
		Needs:  "the PCI functions (class, vendor, driver) and /sys/class/infiniband/*/device; /proc/modules to say whether the RDMA module is loaded", UnknownWhen: "never: a function without its RDMA device fails; whether the module is loaded is reported as unknown when /proc/modules was not read"}, rdmaDriver},
	{check.Entry{ID: "rdma.present", Title: "The host has an RDMA device",
		Why:    "doctor on a host with no RDMA device at all has nothing to judge; if RDMA was expected there, the node is broken, not healthy.",
		Source: "issue 11 (a host with no RDMA device says nothing)",
		Fixes:  []string{"install the HCA's driver (mlx5_core, mlx5_ib), or run doctor on the node that has the RDMA NIC"},
		Needs:  "/sys/class/infiniband and the PCI functions; an --expect-* flag or --nhc to know RDMA is required", UnknownWhen: "no PCI devices were read (a capture of /sys/class/infiniband alone has devices, so it passes)"}, rdmaPresent},
	{check.Entry{ID: "port.state", Title: "RDMA port is Active and LinkUp",
		Why:    "A port that is Down, Polling or Init carries no traffic; Polling means no link partner or a bad cable. A spare port nobody cabled or configured is reported unused, not failed.",
		Source: "seed 001 (ibstat State/Physical state), seed 003 health check",
		Fixes:  []string{"check the cable and the switch port", "on InfiniBand a port stuck in Init waits for a subnet manager"},
		Needs:  "ports/N/state and phys_state; for a port that is down, its data and link_downed counters, its GID addresses and its netdevs' flags (or --expect-ports) to tell a fault from a spare port", UnknownWhen: "state is not readable, or a down port's counters are not readable and no --expect-ports was given"}, portState},
	{check.Entry{ID: "port.rate.below-expected", Title: "Port rate matches the expected fabric rate",
		Why:    "A 200 Gb/s port that came up at 100 Gb/s is the most common silent failure: bad cable, wrong DAC, switch port forced low.",
		Source: "seed 001; NHC check_hw_ib",
		Fixes:  []string{"reseat or replace the cable/transceiver", "check the switch port speed", "ibportstate to query"},
		Needs:  "ports/N/rate of Active ports and an expected rate: --expect-rate, or the rate most ports of a real fleet majority (≥3 hosts, more than half) run at", UnknownWhen: "the rate file is not readable; without an expected rate the check does not run"}, portRateExpected},
	{check.Entry{ID: "port.rate.below-nic-max", Title: "Port runs at what the NIC can do",
		Why:    "A NIC on a slower switch or cable works, but below its own best; worth knowing before judging benchmarks.",
		Source: "seeds 002/003 (EDR card on a QDR switch)",
		Fixes:  []string{"expected on a slower fabric", "otherwise check cable and switch"},
		Needs:  "ports/N/rate, the board id (board_id, the PSID) in linkrate's board table, or the PCI device id when the port already runs at the family's best", UnknownWhen: "the board is not in the table and the port runs below the family's best (some boards of a family are slower: a 25G ConnectX-4 Lx)"}, portRateNICMax},
	{check.Entry{ID: "port.link-layer", Title: "Link layer is the one expected",
		Why:    "A dual-mode ConnectX in the wrong mode is InfiniBand where Ethernet was meant, or the reverse.",
		Source: "seed 001",
		Fixes:  []string{"on a VPI part (ConnectX-4/5/6/7 VPI, not an Ethernet-only Lx/Dx): mlxconfig -d DEVICE set LINK_TYPE_PN=1 (IB) or 2 (Ethernet), then reboot — the finding names the device and port"},
		Needs:  "ports/N/link_layer and --expect-link-layer", UnknownWhen: "link_layer is not readable"}, portLinkLayer},
	{check.Entry{ID: "pcie.link.degraded", Title: "NIC and GPU PCIe links trained at full width and speed",
		Why:    "A NIC at x8 in a x16 slot, or at a lower generation, caps RDMA bandwidth well below line rate.",
		Source: "seed 001 (check PCIe gen and lane count); NHC PR #90",
		Fixes:  []string{"reseat the card, move it to a x16 slot wired to the CPU, check BIOS bifurcation and link speed settings"},
		Needs:  "current_link_speed/width and max_link_speed/width of the device and its upstream port", UnknownWhen: "the link files are absent (captures, virtual functions)"}, pcieDegraded},
	{check.Entry{ID: "roce.mtu", Title: "RoCE netdev MTU allows RDMA MTU 4096",
		Why:    "RoCE MTU is the largest IB MTU below netdev MTU − 96: 1500 gives 1024, 4200 gives 4096.",
		Source: "seed 000 (jumbo frames), seed 001",
		Fixes:  []string{"nmcli con modify <conn> 802-3-ethernet.mtu 4200 (or 9000) on every host and switch port"},
		Needs:  "the MTU of each Active RoCE port's netdev", UnknownWhen: "a port's netdev is not in the source (the check then does not run for it)"}, roceMTU},
	{check.Entry{ID: "roce.gid.v2", Title: "RoCE port has a RoCE v2 GID for its IPv4 address",
		Why:    "RoCE v2 (UDP/4791) is what modern stacks route; without a v2 GID bound to the netdev's address, perftest and NCCL pick a wrong index.",
		Source: "seed 000 (GID table, -x 3), seed 001 (cma_roce_mode)",
		Fixes:  []string{"assign an IPv4 address to <netdev>", "cma_roce_mode -d <dev> -p <port> -m 2", "pass -x N / NCCL_IB_GID_INDEX=N"},
		Needs:  "the GID table (gids/, gid_attrs/types, gid_attrs/ndevs) of Active RoCE ports", UnknownWhen: "gids/ is not in the source (a partial capture)"}, roceGID},
	{check.Entry{ID: "ib.sm", Title: "InfiniBand port sees a subnet manager and has a LID",
		Why:    "Nothing on an InfiniBand fabric routes until a subnet manager assigns LIDs.",
		Source: "seed 001, seeds 002/003 (OpenSM)",
		Fixes:  []string{"apt install opensm && systemctl enable --now opensm on exactly one node (or enable the switch's SM)"},
		Needs:  "ports/N/lid and sm_lid of Active InfiniBand ports", UnknownWhen: "lid or sm_lid is not in the source"}, ibSM},
	{check.Entry{ID: "ipoib.mode", Title: "IPoIB connected mode uses its large MTU",
		Why:    "Connected mode exists for its 65520-byte MTU; connected mode with a small MTU costs throughput for nothing.",
		Source: "seed 002 (IPoIB connected mode, MTU 65520), kernel ipoib.rst",
		Fixes:  []string{"nmcli con modify <ib conn> infiniband.transport-mode connected infiniband.mtu 65520"},
		Needs:  "/sys/class/net/IF/mode and mtu of IPoIB netdevs; --expect-ipoib connected|datagram makes the mode (and an IPoIB interface) required", UnknownWhen: "never: without a mode file the check does not run, unless --expect-ipoib requires IPoIB (then its absence fails)"}, ipoibMode},
	{check.Entry{ID: "port.errors", Title: "Error and drop counters are zero",
		Why:    "Symbol errors, link downs and receive errors point at cables; out_of_buffer and sequence errors at drops on RoCE.",
		Source: "seed 000 (rdma stat, ethtool -S), ibqueryerrors thresholds 0",
		Fixes:  []string{"clear counters and watch their rate", "replace the cable on a port whose symbol errors keep rising"},
		Needs:  "every error counter of the counter table under ports/N/counters and hw_counters", UnknownWhen: "any error counter is present but not readable (\"N/A (no PMA)\", EINVAL) and none is non-zero, or no error counter is readable"}, portErrors},
	{check.Entry{ID: "kernel.modules.rdma", Title: "RDMA kernel modules are loaded",
		Why:    "ib_uverbs lets applications use verbs, ib_umad the management tools, ib_ipoib IP over InfiniBand (required with --expect-ipoib).",
		Source: "seed 003 (/etc/modules-load.d/hpc.conf)",
		Fixes:  []string{"modprobe ib_uverbs ib_umad ib_ipoib", "list them in /etc/modules-load.d/rdma.conf"},
		Needs:  "/proc/modules on a host with RDMA devices", UnknownWhen: "/proc/modules was not read (most captures)"}, rdmaModules},
	{check.Entry{ID: "gpudirect.peermem", Title: "GPUDirect RDMA is possible (nvidia-peermem or DMA-BUF)",
		Why:    "Without peermem (or the DMA-BUF path of the open kernel module) NIC↔GPU transfers bounce through host memory, often 5× slower.",
		Source: "seed 001, seed 003, seed 004",
		Fixes:  []string{"modprobe nvidia-peermem", "echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf"},
		Needs:  "/proc/modules and the NVIDIA driver flavour on a host with NVIDIA GPUs and RDMA devices", UnknownWhen: "/proc/modules was not read"}, peermem},
	{check.Entry{ID: "memlock", Title: "Locked-memory limit is unlimited",
		Why:    "RDMA pins memory; a small memlock limit makes registration fail.",
		Source: "seed 003 (/etc/security/limits.d/99-hpc.conf)",
		Fixes:  []string{"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/99-rdma.conf"},
		Needs:  "/etc/security/limits.conf and limits.d, or this process's limits", UnknownWhen: "neither limits files nor process limits are in the snapshot (limits files read without a memlock line fail: the default limit applies)"}, memlock},
	{check.Entry{ID: "iommu.passthrough", Title: "IOMMU in passthrough mode on an RDMA/GPU host",
		Why:    "Translated DMA costs peer-to-peer performance; iommu=pt keeps host devices untranslated while VFIO still works.",
		Source: "seed 000 (iommu=pt), RDMA reference §1.13",
		Fixes:  []string{"grubby --update-kernel=ALL --args=iommu=pt (add intel_iommu=on on Intel), then reboot"},
		Needs:  "/proc/cmdline and /sys/kernel/iommu_groups", UnknownWhen: "never: without a command line the check does not run"}, iommuPT},
	{check.Entry{ID: "hugepages.allocated", Title: "Hugepages asked for on the command line were allocated",
		Why:    "hugepages=N that the kernel could not satisfy at boot leaves VMs without backing memory.",
		Source: "seed 000 (grep HugePages_ /proc/meminfo)",
		Fixes:  []string{"reserve them at boot (default_hugepagesz=1G hugepagesz=1G hugepages=N) with enough memory per node"},
		Needs:  "hugepages= on /proc/cmdline and /sys/kernel/mm/hugepages", UnknownWhen: "never: without hugepages= the check does not run"}, hugepages},
	{check.Entry{ID: "cpu.isolation.smt", Title: "isolcpus, nohz_full and rcu_nocbs agree and cover whole cores",
		Why:    "Isolating one SMT thread while the host runs on its sibling makes the two compete for the core: latency spikes.",
		Source: "seed 000",
		Fixes:  []string{"isolate both siblings of every core (see thread_siblings_list)", "use the same set for isolcpus, nohz_full and rcu_nocbs"},
		Needs:  "/sys/devices/system/cpu/isolated, nohz_full, rcu_nocbs and thread_siblings_list", UnknownWhen: "never: without isolation the check does not run"}, isolationSMT},
	{check.Entry{ID: "cpu.governor", Title: "CPU frequency governor is performance",
		Why:    "Frequency scaling skews benchmark results and perftest warns about it.",
		Source: "seed 000, seed 003 (cpupower frequency-set -g performance)",
		Fixes:  []string{"cpupower frequency-set -g performance"},
		Needs:  "cpufreq/scaling_governor of every CPU", UnknownWhen: "never: without cpufreq (VMs, captures) the check does not run"}, governor},
	{check.Entry{ID: "numa.unknown", Title: "NICs and GPUs have a known NUMA node",
		Why:    "Without locality, pinning and GPU↔NIC pairing are guesses.",
		Source: "seed 000 (numa_node per device), hwloc",
		Fixes:  []string{"enable ACPI SRAT/NUMA in the BIOS", "in a VM, give the guest a NUMA topology with pxb-pcie per node"},
		Needs:  "numa_node and local_cpulist of NICs and GPUs on a multi-node host", UnknownWhen: "never: the finding is itself about an unknown node (warn)"}, numaUnknown},
	{check.Entry{ID: "gpu.baseboard", Title: "Every GPU of the NVSwitch baseboard is on the bus",
		Why:    "An HGX board carries a fixed number of GPUs for its NVSwitches (8 on H100/H200 with 4, on A100 with 6, on B200/B300 with 2). One fewer is a GPU that fell off the bus or failed to enumerate: the node runs fewer ranks or hangs the job, and Fabric Manager's partitions no longer match.",
		Source: "NVIDIA HGX baseboards; seed 004 (identically configured cluster)",
		Fixes:  []string{"nvidia-smi -L; lspci -d 10de: | grep -c 3D  # which GPU is missing", "dmesg | grep -iE 'NVRM|Xid|fallen off'; reseat or RMA the GPU"},
		Needs:  "the PCI functions: NVIDIA GPUs and NVSwitches (class 0680)", UnknownWhen: "never: a board with an NVSwitch count nobody ships is not judged"}, gpuBaseboard},
	{check.Entry{ID: "affinity.gpu-nic", Title: "Each GPU has a NIC on its PCIe switch or host bridge",
		Why:    "GPUDirect RDMA does not work well across host bridges and not at all across sockets (NCCL's default GDR level is PXB).",
		Source: "seed 004, NCCL paths.cc",
		Fixes:  []string{"move the NIC next to the GPU, or pair each GPU with its nearest NIC (NCCL_IB_HCA per rank)"},
		Needs:  "the PCI tree from each GPU and NIC up to its host bridge, and NUMA nodes", UnknownWhen: "never: a GPU whose path cannot be traced has no finding"}, gpuNIC},

	// The RoCE QoS rules follow a packet: the DSCP it carries → the priority
	// the NIC's trust mode gives it → PFC (lossless) or ECN (congestion
	// control) on that priority → CNPs on another priority. docs/roce.md
	// walks the same path with the commands that fix each step.
	{check.Entry{ID: "roce.qos.path", Title: "RoCE traffic lands on a lossless (PFC) priority",
		Why:         "RoCE's retransmission is go-back-N: a drop costs a whole window, so busbw collapses (to 0.x GB/s, NVIDIA/nccl#378) while drop counters stay at zero. The failures are disagreements between layers: NCCL_IB_TC unset (DSCP 0) while only priority 3 is lossless, trust pcp on a routed fabric, PFC on a priority nothing uses.",
		Source:      "seed 001 (PFC on priority 3, trust dscp, traffic_class 106); RDMA reference §5",
		Fixes:       []string{"mlnx_qos -i <if> --trust dscp", "mlnx_qos -i <if> --pfc 0,0,0,1,0,0,0,0", "echo 106 > /sys/class/infiniband/<dev>/tc/<port>/traffic_class", "export NCCL_IB_TC=106 (rdmalab nccl env)"},
		Needs:       "the DSCP the traffic carries (tc/<port>/traffic_class, else NCCL_IB_TC: 0 when unset), the trust mode and DSCP map (qos/trust, qos/dscp2prio, mlnx_qos, dcb app), PFC per priority (qos/pfc, mlnx_qos, dcb pfc) and ECN per priority (ecn/roce_np|roce_rp/enable)",
		UnknownWhen: "the trust mode or the PFC priorities were not read (inbox mlx5 without dcb or mlnx_qos), or the saved output does not show the DSCP the traffic carries"}, roceQoSPath},
	{check.Entry{ID: "roce.ecn", Title: "ECN (DCQCN) on the lossless RoCE priority",
		Why:         "ECN is the congestion signal that does the work; PFC is the emergency brake. PFC without ECN on the same priority turns every incast into pauses that spread (victim flows, pause storms).",
		Source:      "seed 001 (ECN marking on the lossless queues), RDMA reference §5.3",
		Fixes:       []string{"echo 1 > /sys/class/net/<if>/ecn/roce_np/enable/<prio>", "echo 1 > /sys/class/net/<if>/ecn/roce_rp/enable/<prio>"},
		Needs:       "ecn/roce_np and ecn/roce_rp enable files (MLNX_OFED/DOCA) and the lossless priority (PFC), else the priority the traffic lands on",
		UnknownWhen: "the driver exposes no ECN state (inbox mlx5), or neither a single PFC priority nor the traffic's priority is known"}, roceECN},
	{check.Entry{ID: "roce.pfc.single", Title: "PFC on one priority only",
		Why:    "Each lossless priority takes its own headroom buffer on every port and can be paused on its own; more than one spreads pauses and buffer thin. RDMA needs one (priority 3), the rest stays lossy.",
		Source: "seed 001 (mlnx_qos --pfc 0,0,0,1,0,0,0,0)",
		Fixes:  []string{"mlnx_qos -i <if> --pfc 0,0,0,1,0,0,0,0 (or dcb pfc set dev <if> prio-pfc all:off 3:on)"},
		Needs:  "PFC per priority (qos/pfc, mlnx_qos, dcb pfc, lldptool)", UnknownWhen: "PFC was not read"}, rocePFCSingle},
	{check.Entry{ID: "roce.cnp", Title: "CNPs travel on their own priority",
		Why:    "A CNP tells a sender to slow down; queued behind the very data it is about, it arrives late and DCQCN oscillates. NVIDIA's default sends CNPs with DSCP 48 on priority 6.",
		Source: "RDMA reference §5.3 (np_cnp_dscp, np_cnp_prio); the spiderpool capture (cnp_dscp 48)",
		Fixes:  []string{"echo 48 > /sys/class/net/<if>/ecn/roce_np/cnp_dscp", "echo 6 > /sys/class/net/<if>/ecn/roce_np/cnp_802p_prio"},
		Needs:  "ecn/roce_np/cnp_dscp (or cnp_802p_prio under trust pcp), the trust mode and the data's priority", UnknownWhen: "the CNP's DSCP or priority, or the data's priority, was not read"}, roceCNP},
	{check.Entry{ID: "roce.mtu.path", Title: "The RDMA port runs at the MTU its netdev allows",
		Why:         "A RoCE port's RDMA MTU (active_mtu) should be the largest that fits in its netdev's MTU. Below it, the MTU was cut somewhere on the way (a bond or PF with a smaller MTU, or negotiated down to the peer's or a switch's), and perftest and NCCL run at the smaller one: more headers per byte. Above it, RDMA frames are larger than the Ethernet MTU and are dropped.",
		Source:      "linkrate.RoCEMTU (netdev MTU − 96 → IB MTU), seed 000 (MTU 4200 for 4096), ibv_devinfo -v (active_mtu)",
		Fixes:       []string{"ip link set <if> mtu 4200 (and the bond, PF, peer and every switch port on the path)", "ibv_devinfo -v | grep -E 'active_mtu|max_mtu' on both ends"},
		Needs:       "active_mtu of each Active RoCE port (ibv_devinfo -v) and its netdev's MTU",
		UnknownWhen: "active_mtu was not read (ibv_devinfo not installed, a sysfs capture) or the netdev's MTU is not in the source (a saved ibv_devinfo); a port with neither is not judged"}, roceMTUPath},
	{pauseEntry, rocePause}, // pauseEntry also judges two readings (PauseRising)
	{check.Entry{ID: "roce.mode", Title: "rdma_cm defaults to RoCE v2",
		Why:    "RoCE v1 is an Ethernet frame (ethertype 0x8915) that no router forwards; rdma_cm connections made in v1 mode do not cross an L3 fabric.",
		Source: "seed 001 (cma_roce_mode -d mlx5_0 -p 1 -m 2)",
		Fixes:  []string{"cma_roce_mode -d <dev> -p <port> -m 2"},
		Needs:  "configfs rdma_cm/<dev>/ports/<n>/default_roce_mode, or saved cma_roce_mode output", UnknownWhen: "never: where rdma_cm's configfs directory was not made, the check does not run"}, roceMode},
}

// rdmaDriverFix names the module that makes a driver's RDMA device.
var rdmaDriverFix = map[string]string{"mlx5_core": "mlx5_ib", "mlx4_core": "mlx4_ib", "bnxt_en": "bnxt_re", "ice": "irdma", "i40e": "irdma", "qede": "qedr"}

func rdmaDriver(rep *check.Reporter, s *host.Snapshot, o Options) {
	for i := range s.PCIDevices {
		d := &s.PCIDevices[i]
		if !s.RDMACapable(d) {
			continue
		}
		sub := d.Address.String()
		e := []check.Evidence{
			ev("device", fmt.Sprintf("%s %s:%s class %s", orUnread(host.DeviceName(d.Vendor, d.Device)), d.Vendor, d.Device, d.Class), readAtAll(s, d.Sources, "vendor", "device", "class")),
			ev("driver", orUnread(d.Driver), readAt(s, d.Sources, "driver")),
		}
		devs := s.RDMADevicesOf(d.Address)
		var f *check.Finding
		switch {
		case len(devs) > 0:
			f = rep.Pass(sub, "RDMA device %s", strings.Join(devs, ", "))
		case d.Driver == "vfio-pci":
			f = rep.Pass(sub, "bound to vfio-pci (passed through): its RDMA device lives in the guest")
		case d.PhysFn.IsValid() && d.Driver == "":
			f = rep.Pass(sub, "an unbound virtual function of %s: nothing uses it", d.PhysFn)
		case d.Driver == "":
			f = rep.Fail(sub, "RDMA-capable %s has no driver bound: no netdev, no RDMA device", orUnread(host.DeviceName(d.Vendor, d.Device)))
			f.Fix = []string{"modprobe mlx5_core mlx5_ib   # (mlx4_core mlx4_ib for ConnectX-3, qib for QLogic)", "if the module is missing for this kernel: reinstall MLNX_OFED/DOCA or the distribution's rdma-core for the running kernel"}
		default:
			mod := rdmaDriverFix[d.Driver]
			msg := fmt.Sprintf("driver %s is bound but there is no RDMA device", d.Driver)
			if mod != "" {
				loaded := "not loaded"
				switch {
				case len(s.Kernel.Modules) == 0:
					loaded = "unknown whether loaded: /proc/modules not read"
				case s.Kernel.HasModule(mod):
					loaded = "loaded, but made no device"
				}
				msg += fmt.Sprintf(" (%s: %s)", mod, loaded)
				e = append(e, ev(mod, loaded, "/proc/modules"))
			}
			f = rep.Fail(sub, "%s: no RDMA on this NIC", msg)
			f.Fix = []string{"modprobe " + cmp.Or(mod, "<the RDMA module of "+d.Driver+">"), "after a kernel update: reinstall MLNX_OFED/DOCA for the running kernel (dkms status; modinfo " + cmp.Or(mod, d.Driver) + ")", "rdma link show   # the device should appear"}
		}
		f.Evidence = append(e, ev("rdma devices", cmp.Or(strings.Join(devs, " "), "none"), deviceLinks(s, d.Address)))
	}
}

// deviceLinks is where the RDMA devices of a PCI function were found: their
// device links, or, with none, the RDMA class directory that holds none.
func deviceLinks(s *host.Snapshot, a host.PCIAddress) string {
	var out []string
	for _, r := range s.RDMADevices {
		if r.PCIAddress == a {
			out = append(out, readAt(s, r.Sources, "device"))
		}
	}
	return cmp.Or(strings.Join(out, " "), "/sys/class/infiniband")
}

func rdmaPresent(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) > 0 {
		rep.Pass("host", "%d RDMA devices", len(s.RDMADevices))
		return
	}
	if slices.ContainsFunc(s.PCIDevices, func(d host.PCIDevice) bool { return s.RDMACapable(&d) }) {
		return // rdma.driver names each function without its device
	}
	e := []check.Evidence{ev("rdma devices", "none", "/sys/class/infiniband"), ev("RDMA-capable PCI functions", "none", "/sys/bus/pci/devices")}
	var f *check.Finding
	switch {
	case o.expectsRDMA():
		f = rep.Fail("host", "no RDMA device at all, but RDMA is expected here (--expect-rate, --expect-link-layer, --expect-ports or --nhc)")
		f.Fix = append([]string{"check the NIC is seated and seen (lspci -d 15b3:)"}, rep.Entry().Fixes...)
	case len(s.PCIDevices) == 0:
		f = rep.Unknown("host", "no RDMA device, and no PCI devices were read to tell whether an RDMA NIC is there")
	default:
		// Without an expectation, a host without RDMA may be meant to be
		// one (a login node): say it loudly, but it is not a failure.
		f = rep.Warn("host", "no RDMA device and no RDMA-capable NIC: nothing RDMA to check (pass --expect-rate or --expect-link-layer to require RDMA)")
	}
	f.Evidence = e
}

func portState(rep *check.Reporter, s *host.Snapshot, o Options) {
	listCut := false
	for _, e := range s.Errors {
		if e.Subject == "rdma" {
			listCut = true
			// The device list itself was cut short: ports of devices not
			// listed are unknown, not fine.
			f := rep.Unknown("rdma devices", "the RDMA devices were not all read: %s", e.Error)
			f.Evidence = []check.Evidence{ev("rdma devices", e.Error, cmp.Or(e.Path, s.Tool, s.Source))}
			f.Fix = []string{"read the devices again (ibstat, or rdmalab doctor on the host) and judge the whole output; give --expect-ports DEV/PORT for the ports that must be up"}
		}
	}
	// noneUp: every port's state was read and none is up.
	noneUp := true
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			noneUp = noneUp && p.State != portstate.Active && p.State.Known()
		}
	}
	models, main := hostModels(s, listCut)
	for _, d := range s.RDMADevices {
		for _, e := range s.Errors {
			if e.Subject == d.Name && len(d.Ports) == 0 {
				// Listed, but its ports were not read (an output cut short).
				f := rep.Unknown(d.Name, "no ports were read for this device: %s", e.Error)
				f.Evidence = []check.Evidence{ev("ports", "none read", cmp.Or(e.Path, s.Tool, s.Source))}
				f.Fix = []string{fmt.Sprintf("give the whole output for %s (ibstat %s), or --expect-ports %s/1 if it is meant to be up", d.Name, d.Name, d.Name)}
				break
			}
		}
		for _, p := range d.Ports {
			sub := portSubject(d.Name, p.Port)
			e := []check.Evidence{ev("state", fmt.Sprintf("%d: %s", p.State.ID(), p.State.Sysfs()), readAt(s, p.Sources, "state")), ev("phys_state", fmt.Sprintf("%d: %s", p.PhysState.ID(), p.PhysState), readAt(s, p.Sources, "phys_state"))}
			var f *check.Finding
			switch {
			case !p.State.Known():
				f = rep.Unknown(sub, "port state could not be read")
				f.Fix = []string{fmt.Sprintf("ibstat %s %d (or cat /sys/class/infiniband/%s/ports/%d/state), and judge that", d.Name, p.Port, d.Name, p.Port)}
			case p.State == portstate.Active && (p.PhysState == portstate.LinkUp || !p.PhysState.Known()):
				f = rep.Pass(sub, "Active, LinkUp")
			case p.State == portstate.Active:
				// Active needs a physical link, whatever phys_state says.
				f = rep.Pass(sub, "Active (phys_state reads %q, not LinkUp; Active needs a physical link, so the link is up)", p.PhysState)
			case p.LinkLayer == "InfiniBand" && p.PhysState == portstate.LinkUp && (p.State == portstate.Init || p.State == portstate.Down):
				smLID := 0
				if p.SMLID != nil {
					smLID = *p.SMLID
				}
				st := p.State.Sysfs() // "INIT" is said "Init", "DOWN" "Down"
				msg, fix := NotActivated(st[:1]+strings.ToLower(st[1:]), isVF(s, d), smLID)
				f = rep.Fail(sub, "%s", msg)
				f.Fix = fix
			default:
				use, why := portInUse(s, d, p, o)
				e = append(e, why...)
				if use == useUnknown && noneUp && !listCut {
					// Whatever this port is for, no port of the host is up:
					// nothing here can carry RDMA traffic.
					f = rep.Fail(sub, "port is %s and no RDMA port of this host is up: nothing here can carry RDMA traffic", stateText(p))
					f.Fix = []string{"check the cable and the link partner (switch port enabled?)", fmt.Sprintf("ibstat %s %d", d.Name, p.Port)}
					break
				}
				if use == useUnknown {
					f = downByIntent(rep, s, d, p, models, main)
					e = append(e, f.Evidence...)
					break
				}
				if use == unused {
					f = rep.Pass(sub, "unused: %s / %s, and nothing says it should be up (%s)", p.State.Sysfs(), p.PhysState, why[0].Value)
					break
				}
				f = rep.Fail(sub, "port is %s / %s but is meant to be in use (%s): it carries no traffic", p.State.Sysfs(), p.PhysState, why[0].Value)
				f.Fix = []string{"check the cable and the link partner (switch port enabled?)", fmt.Sprintf("ibstat %s %d", d.Name, p.Port)}
			}
			f.Evidence = e
		}
	}
}

// modelCount is how many ports of one NIC model a host has, and how many
// of them are up.
type modelCount struct {
	ports, up int
	ib        bool
}

// hostModels groups a host's ports by NIC model, fleet-less evidence of
// intent: the model most ports belong to is the host's main RDMA NIC
// (eight rail NICs beside two management ones). main is "" when it cannot
// be told: a port's state was not read, the list was cut, or two models
// tie (InfiniBand beats Ethernet in a tie: management NICs are Ethernet).
func hostModels(s *host.Snapshot, listCut bool) (models map[string]*modelCount, main string) {
	models = map[string]*modelCount{}
	allKnown := !listCut
	for _, d := range s.RDMADevices {
		m := nicModel(s, d)
		for _, p := range d.Ports {
			c := models[m]
			if c == nil {
				c = &modelCount{}
				models[m] = c
			}
			c.ports++
			if p.State == portstate.Active {
				c.up++
			}
			c.ib = c.ib || p.LinkLayer == "InfiniBand"
			allKnown = allKnown && p.State.Known()
		}
	}
	if !allKnown || len(models) == 0 {
		return models, ""
	}
	better := func(a, b *modelCount) int {
		if a.ports != b.ports {
			return cmp.Compare(a.ports, b.ports)
		}
		switch {
		case a.ib && !b.ib:
			return 1
		case b.ib && !a.ib:
			return -1
		}
		return 0
	}
	tie := false
	for m, c := range models {
		if m == "" {
			continue
		}
		switch {
		case main == "" || better(c, models[main]) > 0:
			main, tie = m, false
		case better(c, models[main]) == 0:
			tie = true
		}
	}
	if tie {
		return models, ""
	}
	return models, main
}

// sameCardUp is an Active port on the same card as port p of device d:
// another port of d (mlx4 dual-port devices), or a port of a device with
// the same system image GUID or another function of the same PCI slot
// (mlx5 makes one device per port).
func sameCardUp(s *host.Snapshot, d host.RDMADevice, p host.RDMAPort) (string, bool) {
	for _, o := range s.RDMADevices {
		same := o.Name == d.Name || (!d.SysImageGUID.IsZero() && o.SysImageGUID == d.SysImageGUID) ||
			(d.PCIAddress.IsValid() && o.PCIAddress.IsValid() && o.PCIAddress.Slot() == d.PCIAddress.Slot())
		if !same {
			continue
		}
		for _, q := range o.Ports {
			if (o.Name != d.Name || q.Port != p.Port) && q.State == portstate.Active {
				return portSubject(o.Name, q.Port), true
			}
		}
	}
	return "", false
}

// downByIntent judges a down port nothing marks as used or unused (no
// counters, no --expect-ports: a saved ibstat) by what the host's other
// ports say of intent. A card whose other port is up has a spare; a port
// Disabled was set down on purpose; every port of the host's main NIC model
// down is a failure whatever the other NICs do; a main-model port Polling
// beside up siblings wants a link it does not find.
func downByIntent(rep *check.Reporter, s *host.Snapshot, d host.RDMADevice, p host.RDMAPort, models map[string]*modelCount, main string) *check.Finding {
	sub := portSubject(d.Name, p.Port)
	m := nicModel(s, d)
	c := models[m]
	ask := fmt.Sprintf("give --expect-ports %s/%d if it is meant to be up", d.Name, p.Port)
	cableFix := []string{"check the cable, the transceiver and the link partner (switch port enabled?)", fmt.Sprintf("ibstat %s %d", d.Name, p.Port)}
	isMain := m != "" && m == main
	switch {
	case isMain && c.up == 0:
		others := 0
		for o, oc := range models {
			if o != m {
				others += oc.up
			}
		}
		f := rep.Fail(sub, "port is %s: all %d ports of this host's %s NICs are down (%d port(s) of other models are up): the host's main RDMA NICs carry no traffic", stateText(p), c.ports, m, others)
		f.Fix = cableFix
		return f
	}
	if sib, ok := sameCardUp(s, d, p); ok {
		why := "a spare port"
		switch p.PhysState {
		case portstate.Polling:
			why = "a spare port left uncabled (Polling: no link partner)"
		case portstate.Disabled:
			why = "a spare port disabled on purpose"
		}
		return rep.Pass(sub, "unused: %s while %s on the same card is Active: most likely %s", stateText(p), sib, why)
	}
	upOf := func() string {
		return fmt.Sprintf("%d of %d ports of this host's %s NICs are up", c.up, c.ports, m)
	}
	switch {
	case p.PhysState == portstate.Disabled && isMain:
		f := rep.Warn(sub, "port is %s while %s: most likely set down on purpose, but a rail NIC down leaves its GPU without RDMA", stateText(p), upOf())
		f.Fix = []string{ask}
		return f
	case p.PhysState == portstate.Disabled:
		return rep.Pass(sub, "unused: %s, most likely disabled on purpose (a %s NIC, not this host's main RDMA NIC model%s)", stateText(p), m, mainText(main))
	case p.PhysState.Known() && isMain:
		f := rep.Fail(sub, "port is %s while %s: it is enabled and finds no link partner", stateText(p), upOf())
		f.Fix = cableFix
		return f
	case p.PhysState.Known():
		f := rep.Warn(sub, "port is %s: enabled but without a link partner, on a %s NIC (not this host's main RDMA NIC model%s)", stateText(p), m, mainText(main))
		f.Fix = append([]string{ask}, cableFix...)
		return f
	case isMain:
		f := rep.Warn(sub, "port is %s while %s (the source shows no physical state, so whether it was set down on purpose is not known)", stateText(p), upOf())
		f.Fix = []string{ask}
		return f
	case main != "":
		return rep.Pass(sub, "unused: %s on a %s NIC while this host's main RDMA NICs%s are up", stateText(p), m, mainText(main))
	}
	f := rep.Unknown(sub, "port is %s and nothing says whether it is meant to be in use (no counters, no --expect-ports, no main NIC model to compare with)", stateText(p))
	f.Fix = []string{ask}
	return f
}

func mainText(main string) string {
	if main == "" {
		return ""
	}
	return " " + main
}

// stateText is "DOWN / Disabled", or the state alone when the source
// shows no physical state (ibv_devinfo without -v).
func stateText(p host.RDMAPort) string {
	if !p.PhysState.Known() {
		return p.State.Sysfs()
	}
	return p.State.Sysfs() + " / " + p.PhysState.String()
}

// portInUse decides whether a port that is not up is meant to be: the
// user listed it, it carried data or lost its link since boot (so it was
// cabled), or its netdev has an address. A second port left uncabled on
// purpose has none of these. The first evidence says why.
func portInUse(s *host.Snapshot, d host.RDMADevice, p host.RDMAPort, o Options) (portUse, []check.Evidence) {
	if listed, hasList := o.expectedPort(d.Name, p.Port); hasList {
		if listed {
			return used, []check.Evidence{ev("expected", "listed in --expect-ports", "--expect-ports")}
		}
		return unused, []check.Evidence{ev("expected", "not in --expect-ports", "--expect-ports")}
	}
	if p.LinkLayer == "Ethernet" && len(p.NetDevs) > 0 && !hasAddress(p) && allAdminDown(s, p.NetDevs) {
		// Taken down by hand and given no address: whatever it carried
		// before, nobody means it to run now.
		return unused, []check.Evidence{ev("netdev", strings.Join(p.NetDevs, " ")+" set down (no IFF_UP) with no address", readAt(s, s.NetDev(p.NetDevs[0]).Sources, "flags"))}
	}
	for _, c := range counters.Select(counters.PortCounters, counters.Data) {
		if v := p.Counters[c.Sysfs]; v > 0 {
			return used, []check.Evidence{ev(c.Sysfs, fmt.Sprintf("%s = %d since boot: it carried data", c.Sysfs, v), readAt(s, p.Sources, "counters/"+c.Sysfs))}
		}
	}
	if v := p.Counters["link_downed"]; v > 0 {
		return used, []check.Evidence{ev("link_downed", fmt.Sprintf("link_downed = %d since boot: the link was up and went down", v), readAt(s, p.Sources, "counters/link_downed"))}
	}
	for _, g := range p.GIDs {
		if a := gidAddress(g); a != "" {
			return used, []check.Evidence{ev("address", a+" on "+g.NetDev+": the netdev is configured for use", readAt(s, p.Sources, fmt.Sprintf("gids/%d", g.Index)))}
		}
	}
	if len(p.Counters) == 0 {
		return useUnknown, []check.Evidence{ev("counters", "not readable", readAt(s, p.Sources, "counters"))}
	}
	return unused, []check.Evidence{ev("in use", "no data or link-down counts since boot, no address, not listed by --expect-ports", readAt(s, p.Sources, "counters"))}
}

// gidAddress is the IP address a RoCE GID carries (IPv4, or an IPv6 that
// is not link-local), or "".
func gidAddress(g host.GID) string {
	if g.IPv4 != "" {
		return g.IPv4
	}
	if a, err := netip.ParseAddr(g.GID); err == nil && !a.IsLinkLocalUnicast() && g.NetDev != "" {
		return a.String()
	}
	return ""
}

func hasAddress(p host.RDMAPort) bool {
	return slices.ContainsFunc(p.GIDs, func(g host.GID) bool { return gidAddress(g) != "" })
}

// allAdminDown reports netdevs all known to be set down.
func allAdminDown(s *host.Snapshot, names []string) bool {
	for _, n := range names {
		nd := s.NetDev(n)
		if nd == nil || nd.AdminUp == nil || *nd.AdminUp {
			return false
		}
	}
	return true
}

// portUse is whether a port that is not up is meant to be.
type portUse int

const (
	unused portUse = iota
	used
	useUnknown
)

func activePorts(s *host.Snapshot, fn func(d host.RDMADevice, p host.RDMAPort)) {
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			if p.State == portstate.Active {
				fn(d, p)
			}
		}
	}
}

func portRateExpected(rep *check.Reporter, s *host.Snapshot, o Options) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		layer, _ := linkrate.SysfsLayer(p.LinkLayer)
		want, ok := o.rateExpectation(s, d, layer)
		if !ok {
			return
		}
		sub := portSubject(d.Name, p.Port)
		e := []check.Evidence{ev("rate", p.Rate.Raw, readAt(s, p.Sources, "rate")), ev("expected", want.Rate.String(), want.Source)}
		var f *check.Finding
		switch {
		case p.RateGbps == 0:
			f = rep.Unknown(sub, "rate could not be read")
		case p.RateGbps < want.Rate.Gbps:
			f = rep.Fail(sub, "runs at %g Gb/s (%s), expected %s", p.RateGbps, p.Rate.Raw, want)
		default:
			f = rep.Pass(sub, "%g Gb/s as expected (%s)", p.RateGbps, want.Source)
		}
		f.Evidence = e
	})
}

// nicMax is the fastest a port of this part can run on a link layer, and
// where that is known from: the board id (exact part), or the family when
// the port already runs at the family's best. ok is false when only the
// family is known and the port runs below its best: some boards of the
// family are slower (a dual-port 25G ConnectX-4 Lx), so the part's own
// maximum is unknown.
func nicMax(d host.RDMADevice, pci *host.PCIDevice, layer linkrate.Layer, rateGbps float64) (maxGbps float64, part, source string, known bool) {
	if b, ok := linkrate.BoardOf(d.BoardID); ok {
		return b.MaxGbps, b.Part, "board_id " + d.BoardID, true
	}
	if pci == nil {
		return 0, "", "", false
	}
	m, ok := linkrate.ModelOf(pci.Vendor, pci.Device)
	if !ok || m.MaxGbps(layer) == 0 {
		return 0, "", "", false
	}
	family := m.MaxGbps(layer)
	return family, m.Name, "device id " + pci.Device + " (family best)", rateGbps >= family
}

func portRateNICMax(rep *check.Reporter, s *host.Snapshot, o Options) {
	models, main := hostModels(s, false)
	// sameRate: every active port of a model runs at one rate.
	rates := map[string]map[float64]bool{}
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		m := nicModel(s, d)
		if rates[m] == nil {
			rates[m] = map[float64]bool{}
		}
		rates[m][p.RateGbps] = true
	})
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.RateGbps == 0 {
			return
		}
		layer, _ := linkrate.SysfsLayer(p.LinkLayer)
		pci := s.PCI(d.PCIAddress)
		max, part, source, known := nicMax(d, pci, layer, p.RateGbps)
		sub := portSubject(d.Name, p.Port)
		e := []check.Evidence{ev("rate", p.Rate.Raw, readAt(s, p.Sources, "rate")), ev("board_id", orUnread(d.BoardID), readAt(s, d.Sources, "board_id"))}
		var f *check.Finding
		switch {
		case part == "":
			// No model at all (another vendor, no PCI function in the
			// capture): nothing to compare with, and nothing to claim.
			return
		case p.RateGbps < max && main != "" && nicModel(s, d) != main && len(rates[nicModel(s, d)]) == 1 && models[main].up > 0:
			// A second NIC model whose every port runs at one lower rate,
			// beside the host's main RDMA NICs: a network of its own
			// (management, NVLink management on GB200/B300 boards at
			// 100G), not a slow link.
			f = rep.Pass(sub, "runs at %g Gb/s like every %s port of this host, below this %s's %g Gb/s: a network of its own beside the host's main %s NICs (management), not a slow link", p.RateGbps, nicModel(s, d), part, max, main)
		case !known:
			f = rep.Unknown(sub, "runs at %g Gb/s; the %s family reaches %g Gb/s, but some of its boards are slower and board_id %q is not in the board table", p.RateGbps, part, max, d.BoardID)
		case p.RateGbps < max:
			f = rep.Warn(sub, "runs at %g Gb/s; this %s can do %g Gb/s (slower switch or cable?)", p.RateGbps, part, max)
		default:
			f = rep.Pass(sub, "%g Gb/s, the best a %s does", p.RateGbps, part)
		}
		e = append(e, ev("part maximum", fmt.Sprintf("%g Gb/s", max), source))
		f.Evidence = e
	})
}

func orUnread(v string) string {
	if v == "" {
		return "not read"
	}
	return v
}

func portLinkLayer(rep *check.Reporter, s *host.Snapshot, o Options) {
	want := o.Expect.Layer
	if want == "" {
		return
	}
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			sub := portSubject(d.Name, p.Port)
			layer, ok := linkrate.SysfsLayer(p.LinkLayer)
			var f *check.Finding
			switch {
			case ok && layer == want:
				f = rep.Pass(sub, "%s as expected", layer)
			case !ok:
				f = rep.Unknown(sub, "link layer could not be read")
			default:
				f = rep.Fail(sub, "link layer is %s (%s), expected %s", layer, p.LinkLayer, want)
				m, known := partModel(s, d)
				switch {
				case known && want == linkrate.InfiniBand && m.MaxSpeed == "":
					// Never advise a mode the part does not have.
					f.Message += fmt.Sprintf("; %s is Ethernet-only: it has no InfiniBand mode", m.Name)
					f.Fix = []string{fmt.Sprintf("%s cannot run InfiniBand: put this port on a VPI part (ConnectX-6/7 VPI), or expect RoCE here (--expect-link-layer RoCE)", m.Name)}
				case known && want != linkrate.InfiniBand && m.MaxEthGbps == 0:
					f.Message += fmt.Sprintf("; %s is InfiniBand-only: it has no Ethernet mode", m.Name)
					f.Fix = []string{fmt.Sprintf("%s cannot run Ethernet: use a VPI or Ethernet part for RoCE, or expect InfiniBand here (--expect-link-layer IB)", m.Name)}
				default:
					mode := "2"
					if want == linkrate.InfiniBand {
						mode = "1"
					}
					dev := d.Name // mlxconfig takes the RDMA device name as well as the PCI address
					if d.PCIAddress.IsValid() {
						dev = d.PCIAddress.String()
					}
					f.Fix = []string{fmt.Sprintf("mlxconfig -d %s set LINK_TYPE_P%d=%s && reboot (%s is VPI: it has both modes)", dev, cardPort(s, d, p), mode, cmp.Or(m.Name, "if the part is VPI"))}
				}
			}
			f.Evidence = []check.Evidence{ev("link_layer", p.LinkLayer, readAt(s, p.Sources, "link_layer")), ev("expected", string(want), cmp.Or(o.Expect.Source, "--expect-link-layer"))}
		}
	}
}

// partModel is a device's part from the model table: by its PCI ids, else
// by the HCA type a tool printed (MT4125 is device 0x101d).
func partModel(s *host.Snapshot, d host.RDMADevice) (linkrate.Model, bool) {
	if pci := s.PCI(d.PCIAddress); pci != nil {
		if m, ok := linkrate.ModelOf(pci.Vendor, pci.Device); ok {
			return m, true
		}
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(d.HCAType, "MT")); err == nil && strings.HasPrefix(d.HCAType, "MT") {
		return linkrate.ModelOf("0x15b3", fmt.Sprintf("0x%04x", n))
	}
	return linkrate.Model{}, false
}

// cardPort is the port of the card mlxconfig's LINK_TYPE_PN means: the
// port number on a device with several (mlx4), else (mlx5 makes one device
// per port) the PCI function, else the device's rank among those of its
// card (one system image GUID) by node GUID.
func cardPort(s *host.Snapshot, d host.RDMADevice, p host.RDMAPort) int {
	if len(d.Ports) > 1 {
		return p.Port
	}
	if d.PCIAddress.IsValid() {
		return int(d.PCIAddress.Function) + 1
	}
	n := 1
	for _, o := range s.RDMADevices {
		if !d.SysImageGUID.IsZero() && o.SysImageGUID == d.SysImageGUID && o.NodeGUID < d.NodeGUID {
			n++
		}
	}
	return n
}

func pcieDegraded(rep *check.Reporter, s *host.Snapshot, o Options) {
	var addrs []host.PCIAddress
	for _, d := range s.RDMADevices {
		if d.PCIAddress.IsValid() && !slices.Contains(addrs, d.PCIAddress) {
			addrs = append(addrs, d.PCIAddress)
		}
	}
	for _, g := range s.GPUs {
		addrs = append(addrs, g.Address)
	}
	for _, a := range addrs {
		d := s.PCI(a)
		if d == nil {
			continue
		}
		isGPU := host.IsGPUClass(d.Class, d.Vendor)
		gt, w := s.LinkCeiling(d)
		sub := d.Address.String()
		e := []check.Evidence{
			ev("current", linkValue(d.CurrentLinkSpeedGTps, d.CurrentLinkWidth), readAtAll(s, d.Sources, "current_link_speed", "current_link_width")),
			ev("capable", linkValue(gt, w)+" (device and slot)", readAtAll(s, d.Sources, "max_link_speed", "max_link_width")+" and its upstream port"),
		}
		var f *check.Finding
		switch {
		case d.CurrentLinkWidth == 0 || w == 0 || d.CurrentLinkSpeedGTps == 0 || gt == 0:
			f = rep.Unknown(sub, "PCIe link not readable")
		case d.CurrentLinkWidth < w:
			f = rep.Fail(sub, "PCIe link trained at x%d, the device and slot can do x%d", d.CurrentLinkWidth, w)
		case d.CurrentLinkSpeedGTps < gt && isGPU:
			// GPUs drop their link speed when idle; judge them under load.
			f = rep.Warn(sub, "GPU link at Gen%d, capable of Gen%d (normal at idle; check under load)", linkrate.PCIeGen(d.CurrentLinkSpeedGTps), linkrate.PCIeGen(gt))
			f.Fix = []string{fmt.Sprintf("lspci -vv -s %s | grep LnkSta   # while a job runs: Gen%d is right under load", sub, linkrate.PCIeGen(gt))}
		case d.CurrentLinkSpeedGTps < gt:
			f = rep.Fail(sub, "PCIe link at Gen%d, the device and slot can do Gen%d", linkrate.PCIeGen(d.CurrentLinkSpeedGTps), linkrate.PCIeGen(gt))
		default:
			f = rep.Pass(sub, "Gen%d x%d, full width and speed", linkrate.PCIeGen(d.CurrentLinkSpeedGTps), d.CurrentLinkWidth)
		}
		f.Evidence = e
	}
}

// linkValue prints a PCIe link as read; a value not read is "unknown".
func linkValue(gtps float64, width int) string {
	sp, w := "unknown speed", "unknown width"
	if gtps > 0 {
		sp = fmt.Sprintf("%g GT/s", gtps)
	}
	if width > 0 {
		w = fmt.Sprintf("x%d", width)
	}
	if gtps <= 0 && width <= 0 {
		return "unknown"
	}
	return sp + " " + w
}

// roceMTU: RoCE MTU = largest IB MTU <= netdev MTU - 96 (iboe_get_mtu).
func roceMTU(rep *check.Reporter, s *host.Snapshot, o Options) {
	roceNetdevs(s, func(name, sub string, n *host.NetDev) {
		rdmaMTU := linkrate.RoCEMTU(n.MTUBytes)
		var f *check.Finding
		if rdmaMTU >= 4096 {
			f = rep.Pass(sub, "netdev MTU %d gives RDMA MTU %d", n.MTUBytes, rdmaMTU)
		} else {
			f = rep.Warn(sub, "netdev MTU %d limits RDMA MTU to %d (4096 needs ≥ 4192)", n.MTUBytes, rdmaMTU)
			f.Fix = []string{fmt.Sprintf("c=$(nmcli -g GENERAL.CONNECTION device show %s); nmcli con modify \"$c\" 802-3-ethernet.mtu 4200 && nmcli con up \"$c\"", name), "ip link set " + name + " mtu 4200   # not persistent", "set the same MTU on the peer and every switch port"}
		}
		f.Evidence = []check.Evidence{ev("mtu", strconv.Itoa(n.MTUBytes), readAt(s, n.Sources, "mtu"))}
	})
}

// roceNetdevs calls fn for every netdev of every active RoCE port.
func roceNetdevs(s *host.Snapshot, fn func(name, subject string, n *host.NetDev)) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		for _, name := range p.NetDevs {
			if n := s.NetDev(name); n != nil {
				fn(name, portSubject(d.Name, p.Port)+" ("+name+")", n)
			}
		}
	})
}

func roceGID(rep *check.Reporter, s *host.Snapshot, o Options) {
	// routable counts the RoCE ports that have a RoCE v2 IPv4 GID: one
	// port without one beside others that have it is a port left out of
	// the addressing (a warning), not a host without routed RoCE.
	routable, roce := 0, 0
	roceGIDPorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		roce++
		if slices.ContainsFunc(p.GIDs, func(g host.GID) bool { return g.Type == host.GIDTypeRoCEv2 && g.IPv4 != "" }) {
			routable++
		}
	})
	minor := func(f *check.Finding) {
		if routable > 0 && f.Outcome == check.Fail {
			f.Outcome = check.Warn
			f.Message += fmt.Sprintf("; %d of the host's %d RoCE ports have one, so this one is left out of the routed fabric", routable, roce)
		}
	}
	roceGIDPorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		sub := portSubject(d.Name, p.Port)
		var v2 *host.GID
		for i, g := range p.GIDs {
			if g.Type == host.GIDTypeRoCEv2 && g.IPv4 != "" {
				v2 = &p.GIDs[i]
				break
			}
		}
		var f *check.Finding
		switch {
		case v2 != nil:
			f = rep.Pass(sub, "RoCE v2 GID index %d for %s: use -x %d / NCCL_IB_GID_INDEX=%d", v2.Index, v2.IPv4, v2.Index, v2.Index)
			f.Evidence = []check.Evidence{ev("gid", fmt.Sprintf("%d %s %s %s", v2.Index, v2.GID, v2.Type, v2.NetDev), readAt(s, p.Sources, fmt.Sprintf("gids/%d", v2.Index)))}
		case p.GIDTableMissing:
			f = rep.Unknown(sub, "the GID table (gids/) is not in the source: cannot tell which GIDs the port has")
		case len(p.GIDs) == 0:
			f = rep.Fail(sub, "no GIDs at all: the port has no usable address")
			f.Fix = gidFixes(rep.Entry(), d, p)
		default:
			f = rep.Fail(sub, "no RoCE v2 GID with an IPv4 address (%d GIDs, none usable for routed RoCE v2)", len(p.GIDs))
			f.Fix = gidFixes(rep.Entry(), d, p)
		}
		minor(f)
	})
}

// gidFixes are roce.gid.v2's fixes for one port: its device, port number
// and netdev filled in.
func gidFixes(e check.Entry, d host.RDMADevice, p host.RDMAPort) []string {
	nd := cmp.Or(strings.Join(p.NetDevs, " "), "the netdev of "+portSubject(d.Name, p.Port))
	return fixesWith(fixesWith(fixesWith(e.Fixes, "<netdev>", nd), "<dev>", d.Name), "<port>", strconv.Itoa(p.Port))
}

func ibSM(rep *check.Reporter, s *host.Snapshot, o Options) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "InfiniBand" {
			return
		}
		sub := portSubject(d.Name, p.Port)
		var f *check.Finding
		switch {
		case p.SMLID == nil || p.LID == nil:
			f = rep.Unknown(sub, "lid/sm_lid not in the capture")
		case *p.SMLID == 0:
			f = rep.Fail(sub, "no subnet manager: sm_lid is 0")
			f.Fix = []string{"systemctl enable --now opensm   # on exactly one node", "sminfo"}
		case *p.LID == 0 || *p.LID >= 0xc000:
			f = rep.Fail(sub, "port has no valid LID (0x%x)", *p.LID)
			f.Fix = []string{"check the SM log (/var/log/opensm.log) for this port GUID"}
		default:
			f = rep.Pass(sub, "LID %d, SM at LID %d", *p.LID, *p.SMLID)
		}
		if p.LID != nil && p.SMLID != nil {
			f.Evidence = []check.Evidence{ev("lid", strconv.Itoa(*p.LID), readAt(s, p.Sources, "lid")), ev("sm_lid", strconv.Itoa(*p.SMLID), readAt(s, p.Sources, "sm_lid"))}
		}
	})
}

func ipoibMode(rep *check.Reporter, s *host.Snapshot, o Options) {
	want := o.ExpectIPoIB
	judged := 0
	fix := func(name string) []string {
		return fixesWith(rep.Entry().Fixes, "<ib conn>", "\"$(nmcli -g GENERAL.CONNECTION device show "+name+")\"")
	}
	for _, n := range s.NetDevs {
		if n.Type != 32 || n.IPoIBMode == "" {
			continue
		}
		judged++
		var f *check.Finding
		switch {
		case want != "" && n.IPoIBMode != want:
			f = rep.Fail(n.Name, "%s mode, but --expect-ipoib %s: seed 002's objective is connected mode with MTU 65520", n.IPoIBMode, want)
			f.Fix = fix(n.Name)
		case n.IPoIBMode == "connected" && n.MTUBytes < 65520:
			outcome := check.Warn
			if want == "connected" {
				outcome = check.Fail
			}
			f = rep.Report(outcome, n.Name, "connected mode with MTU %d: the point of connected mode is MTU 65520", n.MTUBytes)
			f.Fix = fix(n.Name)
		default:
			f = rep.Pass(n.Name, "%s mode, MTU %d", n.IPoIBMode, n.MTUBytes)
		}
		f.Evidence = []check.Evidence{ev("mode", n.IPoIBMode, readAt(s, n.Sources, "mode")), ev("mtu", strconv.Itoa(n.MTUBytes), readAt(s, n.Sources, "mtu"))}
		if want != "" {
			f.Evidence = append(f.Evidence, ev("expected mode", want, "--expect-ipoib"))
		}
	}
	if want != "" && judged == 0 {
		f := rep.Fail("IPoIB", "--expect-ipoib %s, but the host has no IPoIB interface (is ib_ipoib loaded?)", want)
		f.Fix = []string{"modprobe ib_ipoib", "nmcli con add type infiniband ifname ib0 infiniband.transport-mode " + want}
	}
}

func portErrors(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			sub := portSubject(d.Name, p.Port)
			var bad, unreadable []check.Evidence
			read := 0
			for _, c := range errorCounters() {
				vals, dir := p.Counters, "counters/"
				if c.Family == counters.HWCounters {
					vals, dir = p.HWCounters, "hw_counters/"
				}
				src := readAt(s, p.Sources, dir+c.Sysfs)
				if slices.Contains(p.Unavailable, strings.TrimPrefix(dir, "counters/")+c.Sysfs) {
					unreadable = append(unreadable, ev(c.Sysfs, "not readable", src))
					continue
				}
				v, ok := vals[c.Sysfs]
				if !ok {
					continue
				}
				read++
				switch {
				case c.Saturated(v):
					bad = append(bad, ev(c.Sysfs, fmt.Sprintf("%d (saturated: at least this many)", v), src))
				case v > 0:
					bad = append(bad, ev(c.Sysfs, strconv.FormatUint(v, 10), src))
				}
			}
			var f *check.Finding
			switch {
			case len(bad) > 0:
				var names []string
				for _, b := range bad {
					names = append(names, b.What+"="+b.Value)
				}
				f = rep.Warn(sub, "non-zero error counters since boot: %s", strings.Join(names, ", "))
				f.Evidence = append(bad, unreadable...)
				f.Fix = append([]string{"take a second snapshot later and compare: rising counters mean a live problem"}, rep.Entry().Fixes...)
			case len(unreadable) > 0 && read == 0:
				f = rep.Unknown(sub, "none of the %d error counters could be read (%s)", len(unreadable), evidenceNames(unreadable))
				f.Evidence = unreadable
			case len(unreadable) > 0:
				// A counter that cannot be read may be the one that counts:
				// never call the port clean on the others alone.
				f = rep.Unknown(sub, "%d error counters could not be read (%s); the %d that could are zero", len(unreadable), evidenceNames(unreadable), read)
				f.Evidence = unreadable
			case read == 0:
				f = rep.Unknown(sub, "no error counters readable")
				f.Evidence = []check.Evidence{ev("counters", "none", readAt(s, p.Sources, "counters"))}
			default:
				f = rep.Pass(sub, "all %d error counters read are zero", read)
			}
		}
	}
}

// errorCounters are the counters whose non-zero value means trouble, from
// the one counter table.
func errorCounters() []counters.Counter {
	return append(counters.Select(counters.PortCounters, counters.Error), counters.Select(counters.HWCounters, counters.Error)...)
}

func evidenceNames(es []check.Evidence) string {
	var n []string
	for _, e := range es {
		n = append(n, e.What)
	}
	return strings.Join(firstN(n, 4), ", ")
}

func rdmaModules(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) == 0 {
		return
	}
	if len(s.Kernel.Modules) == 0 {
		rep.Unknown("kernel", "/proc/modules not read")
		return
	}
	ib := false
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			ib = ib || p.LinkLayer == "InfiniBand"
		}
	}
	need := []string{"ib_uverbs"}
	if ib {
		need = append(need, "ib_umad")
	}
	if o.ExpectIPoIB != "" {
		need = append(need, "ib_ipoib") // IPoIB is expected (--expect-ipoib)
	}
	var missing []string
	for _, m := range need {
		if !s.Kernel.HasModule(m) {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		rep.Pass("kernel", "%s loaded", strings.Join(need, ", "))
		return
	}
	f := rep.Fail("kernel", "RDMA devices present but %s not loaded", strings.Join(missing, ", "))
	f.Evidence = []check.Evidence{ev("missing", strings.Join(missing, " "), "/proc/modules")}
	f.Fix = []string{"modprobe " + strings.Join(missing, " "), fmt.Sprintf("printf '%%s\\n' %s > /etc/modules-load.d/rdma.conf", strings.Join(missing, " "))}
}

func hasNVIDIAGPU(s *host.Snapshot) bool {
	return slices.ContainsFunc(s.GPUs, func(g host.GPU) bool { return g.Vendor == host.VendorNVIDIA && g.Driver == "nvidia" })
}

func peermem(rep *check.Reporter, s *host.Snapshot, o Options) {
	if !hasNVIDIAGPU(s) || len(s.RDMADevices) == 0 {
		return
	}
	gd := s.Kernel.GPUDirect
	switch {
	case gd.PeerMem != "":
		rep.Pass("kernel", "%s loaded", gd.PeerMem)
		return
	case gd.OpenKernelModule:
		rep.Pass("kernel", "no peermem, but the open kernel module allows DMA-BUF (kernel ≥ 5.12, CUDA ≥ 11.7)")
		return
	case len(s.Kernel.Modules) == 0:
		rep.Unknown("kernel", "/proc/modules not read")
		return
	}
	f := rep.Fail("kernel", "NVIDIA GPUs and RDMA NICs, but nvidia-peermem is not loaded: GPUDirect RDMA will stage through host memory")
	f.Evidence = []check.Evidence{ev("nvidia_peermem", "not in /proc/modules", "/proc/modules")}
	f.Fix = []string{"modprobe nvidia-peermem", "echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf", "if it fails to load: install MLNX_OFED/DOCA first, then the NVIDIA driver"}
}

func memlock(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) == 0 {
		return
	}
	ml := s.Kernel.Memlock
	soft, hard := "", ""
	var e []check.Evidence
	for _, rule := range ml.Rules {
		if rule.Domain != "*" && !strings.HasPrefix(rule.Domain, "@") {
			continue
		}
		e = append(e, ev(rule.Domain+" "+rule.Type, rule.Value, fmt.Sprintf("%s:%d", rule.File, rule.Line)))
		switch rule.Type {
		case "soft":
			soft = rule.Value
		case "hard":
			hard = rule.Value
		case "-":
			soft, hard = rule.Value, rule.Value
		}
	}
	sub := "limits"
	switch {
	case soft == "unlimited" && hard == "unlimited":
		f := rep.Pass(sub, "memlock unlimited for all users")
		f.Evidence = e
		return
	case ml.ProcessSoftBytes != nil && *ml.ProcessSoftBytes == -1 && len(ml.Rules) == 0:
		rep.Pass(sub, "this process runs with memlock unlimited")
		return
	case len(ml.Rules) == 0 && len(ml.FilesRead) > 0 && (ml.ProcessSoftBytes == nil || *ml.ProcessSoftBytes >= 0):
		// Read, and silent: the default limit applies to every login.
		f := rep.Fail(sub, "no memlock rule in %s: logins get the default locked-memory limit (8 MiB on kernels ≥ 5.16, 64 KiB before), so RDMA registration of large buffers fails", strings.Join(ml.FilesRead, ", "))
		f.Evidence = []check.Evidence{ev("memlock rules", "none", strings.Join(ml.FilesRead, ", "))}
		if ml.ProcessSoftBytes != nil {
			f.Evidence = append(f.Evidence, ev("process soft limit", strconv.FormatInt(*ml.ProcessSoftBytes, 10)+" bytes", "/proc/self/limits"))
		}
		f.Fix = []string{"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/99-rdma.conf", "systemd services: LimitMEMLOCK=infinity", "log in again"}
		return
	case len(ml.Rules) == 0 && ml.ProcessSoftBytes == nil:
		rep.Unknown(sub, "no limits files and no process limits in the snapshot")
		return
	}
	msg := "memlock is not unlimited"
	if ml.ProcessSoftBytes != nil && *ml.ProcessSoftBytes >= 0 {
		msg += fmt.Sprintf(" (this process: %d KiB)", *ml.ProcessSoftBytes>>10)
		e = append(e, ev("process soft limit", strconv.FormatInt(*ml.ProcessSoftBytes, 10)+" bytes", "/proc/self/limits"))
	}
	f := rep.Fail(sub, "%s: RDMA memory registration will fail for large buffers", msg)
	f.Evidence = e
	f.Fix = []string{"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/99-rdma.conf", "systemd services: LimitMEMLOCK=infinity", "log in again"}
}

func iommuPT(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.RDMADevices) == 0 || len(s.Kernel.Params) == 0 {
		return
	}
	io := s.Kernel.IOMMU
	var f *check.Finding
	switch {
	case !io.Present:
		f = rep.Pass("kernel", "IOMMU off: DMA is untranslated")
	case io.Passthrough:
		f = rep.Pass("kernel", "IOMMU on with iommu=pt")
	default:
		f = rep.Warn("kernel", "IOMMU translates DMA for host devices (no iommu=pt): GPU↔NIC peer traffic pays for it")
	}
	f.Evidence = []check.Evidence{ev("iommu groups", strconv.Itoa(io.Groups), "/sys/kernel/iommu_groups"), ev("cmdline", s.Kernel.Cmdline, "/proc/cmdline")}
}

func hugepages(rep *check.Reporter, s *host.Snapshot, o Options) {
	want, ok := s.Kernel.Param("hugepages")
	if !ok {
		return
	}
	n, err := strconv.ParseInt(want, 10, 64)
	if err != nil {
		return // the per-node "0:32,1:32" form is checked by plan
	}
	size := s.Kernel.DefaultHugePageBytes
	if v, ok := s.Kernel.Param("hugepagesz"); ok {
		if b, err := host.ParseSize(v); err == nil {
			size = b
		}
	}
	for _, p := range s.Kernel.HugePages {
		if p.PageSizeBytes != size {
			continue
		}
		e := []check.Evidence{ev("asked", want, "/proc/cmdline"), ev("nr_hugepages", strconv.FormatInt(p.Total, 10), fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", size>>10)), ev("free", strconv.FormatInt(p.Free, 10), "")}
		var f *check.Finding
		if p.Total < n {
			f = rep.Fail("kernel", "asked for %d × %s pages at boot, got %d", n, sizeText(size), p.Total)
			f.Fix = []string{fmt.Sprintf("grep -E 'MemTotal|HugePages_Total' /sys/devices/system/node/node*/meminfo   # hugepages=%d × %s is spread over the nodes: each needs room for its share", n, sizeText(size)),
				fmt.Sprintf("lower hugepages=%d on the kernel line to what fits, or at runtime before memory fragments: echo %d > /sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", n, n, size>>10)}
		} else {
			f = rep.Pass("kernel", "%d × %s pages allocated as asked, %d free", p.Total, sizeText(size), p.Free)
		}
		f.Evidence = e
		return
	}
	f := rep.Fail("kernel", "asked for %s hugepages of %s, but no such pool exists", want, sizeText(size))
	f.Fix = []string{fmt.Sprintf("ls /sys/kernel/mm/hugepages   # the page sizes this CPU supports; give hugepagesz= one of them before hugepages=%s", want)}
}

func sizeText(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%dG", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%dM", b>>20)
	}
	return fmt.Sprintf("%dK", b>>10)
}

func isolationSMT(rep *check.Reporter, s *host.Snapshot, o Options) {
	iso := s.Kernel.Isolation
	isolcpus, _ := s.Kernel.Param("isolcpus")
	if iso.Isolated == "" && iso.NohzFull == "" && isolcpus == "" {
		return
	}
	sets := map[string]string{"isolated": iso.Isolated, "nohz_full": iso.NohzFull, "rcu_nocbs": iso.RCUNoCBs}
	var e []check.Evidence
	var differ []string
	base, _ := cpuset.Parse(iso.Isolated)
	for _, k := range []string{"isolated", "nohz_full", "rcu_nocbs"} {
		e = append(e, ev(k, sets[k], readAt(s, iso.Sources, k)))
		if set, err := cpuset.Parse(sets[k]); err == nil && sets[k] != "" && !set.Equals(base) {
			differ = append(differ, k)
		}
	}
	// Whole cores: every isolated CPU's siblings are isolated too.
	var split []string
	for _, c := range s.CPUs {
		if !base.Contains(c.ID) {
			continue
		}
		sib, err := cpuset.Parse(c.Siblings)
		if err == nil && !sib.IsSubsetOf(base) {
			split = append(split, fmt.Sprintf("cpu%d (siblings %s)", c.ID, c.Siblings))
		}
	}
	switch {
	case len(split) > 0:
		f := rep.Fail("cpus", "isolation splits SMT siblings: %s", strings.Join(firstN(split, 4), ", "))
		f.Evidence = e
	case len(differ) > 0:
		f := rep.Warn("cpus", "%s differ from isolated CPUs %s", strings.Join(differ, ", "), iso.Isolated)
		f.Evidence = e
	default:
		f := rep.Pass("cpus", "isolated %s covers whole cores; nohz_full and rcu_nocbs agree", iso.Isolated)
		f.Evidence = e
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

func governor(rep *check.Reporter, s *host.Snapshot, o Options) {
	count := map[string]int{}
	for _, c := range s.CPUs {
		if c.Governor != "" {
			count[c.Governor]++
		}
	}
	if len(count) == 0 {
		return // no cpufreq (VMs, captures): nothing to judge
	}
	var others []string
	for g, n := range count {
		if g != "performance" {
			others = append(others, fmt.Sprintf("%s on %d CPUs", g, n))
		}
	}
	slices.Sort(others)
	if len(others) == 0 {
		rep.Pass("cpus", "performance on every CPU")
		return
	}
	f := rep.Warn("cpus", "governor is %s", strings.Join(others, ", "))
	f.Evidence = []check.Evidence{ev("scaling_governor", strings.Join(others, ", "), "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")}
}

func numaUnknown(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.NUMANodes) < 2 {
		return
	}
	seen := map[host.PCIAddress]bool{}
	check1 := func(a host.PCIAddress, what string) {
		d := s.PCI(a)
		if d == nil || seen[a] {
			return
		}
		seen[a] = true
		addr := a.String()
		e := []check.Evidence{ev("numa_node", strconv.Itoa(d.NUMANode), readAt(s, d.Sources, "numa_node")), ev("local_cpulist", d.LocalCPUs, readAtAll(s, d.Sources, "local_cpulist", "local_cpus"))}
		var f *check.Finding
		switch d.LocalitySource {
		case "unknown":
			f = rep.Warn(addr, "%s has no known NUMA node", what)
		case "local_cpulist":
			f = rep.Pass(addr, "%s: numa_node is -1, local_cpulist places it on node %d", what, d.LocalityNUMANode)
		default:
			f = rep.Pass(addr, "%s on NUMA node %d", what, d.LocalityNUMANode)
		}
		f.Evidence = e
	}
	for _, d := range s.RDMADevices {
		check1(d.PCIAddress, d.Name)
	}
	for _, g := range s.GPUs {
		check1(g.Address, "GPU")
	}
}

// hgxGPUs is how many GPUs an HGX baseboard with N NVSwitch chips holds.
var hgxGPUs = map[int]int{2: 8, 4: 8, 6: 8, 12: 16}

func gpuBaseboard(rep *check.Reporter, s *host.Snapshot, o Options) {
	b := s.Baseboard
	if b == nil {
		return
	}
	want, ok := hgxGPUs[len(b.NVSwitches)]
	if !ok {
		return
	}
	e := []check.Evidence{ev("GPUs", fmt.Sprintf("%d: %s", len(b.GPUs), host.JoinPCI(b.GPUs, " ")), "PCI functions (vendor 10de, class 03xx)"),
		ev("NVSwitches", fmt.Sprintf("%d: %s", len(b.NVSwitches), host.JoinPCI(b.NVSwitches, " ")), "PCI functions (vendor 10de, class 0680)")}
	if len(b.GPUs) >= want {
		f := rep.Pass("baseboard", "all %d GPUs of the %d-NVSwitch baseboard are on the bus", len(b.GPUs), len(b.NVSwitches))
		f.Evidence = e
		return
	}
	// Where it went missing: a PCIe switch that holds a rail NIC but,
	// unlike the others, no GPU.
	gpuSwitch, nicSwitch := map[host.PCIAddress]bool{}, map[host.PCIAddress]bool{}
	for _, g := range s.GPUs {
		if g.Switch.IsValid() {
			gpuSwitch[g.Switch] = true
		}
	}
	for _, d := range s.RDMADevices {
		if p := s.PCI(d.PCIAddress); p != nil && p.Switch.IsValid() {
			nicSwitch[p.Switch] = true
		}
	}
	var empty []host.PCIAddress
	if len(gpuSwitch) > 0 {
		for sw := range nicSwitch {
			if !gpuSwitch[sw] {
				empty = append(empty, sw)
			}
		}
	}
	slices.SortFunc(empty, host.PCIAddress.Compare)
	where := ""
	if len(empty) > 0 {
		where = fmt.Sprintf("; the PCIe switch %s holds a rail NIC but no GPU, unlike the others: the missing GPU's slot", host.JoinPCI(empty, ", "))
	}
	f := rep.Fail("baseboard", "%d of %d GPUs on the %d-NVSwitch HGX baseboard: %d GPU(s) missing from the bus%s", len(b.GPUs), want, len(b.NVSwitches), want-len(b.GPUs), where)
	f.Evidence = e
}

func gpuNIC(rep *check.Reporter, s *host.Snapshot, o Options) {
	if len(s.GPUs) == 0 || len(s.Affinity) == 0 {
		return
	}
	// host.Rails is the one nearest-NIC answer (gpudirect, nccl env and
	// plan give the same).
	for _, rail := range s.Rails() {
		best, nic := rail.Level, rail.RDMA
		if nic == "" {
			continue
		}
		e := []check.Evidence{ev("nearest NIC", nic+" at "+best, "PCI tree under /sys/devices")}
		var f *check.Finding
		// NCCL's default GDR level (PXB), the rule gpudirect.path applies:
		// doctor reports this finding only where gpudirect.path does not
		// judge the GPU (the vm-host profile, a rail with no active port).
		if host.LevelRank(best) <= host.LevelRank(host.LevelPXB) {
			f = rep.Pass(rail.GPU.String(), "nearest NIC %s is %s: within NCCL's default GPUDirect RDMA level (PXB)", nic, best)
		} else {
			f = rep.Warn(rail.GPU.String(), "nearest NIC %s is %s: beyond NCCL's default GPUDirect RDMA level (PXB), so NCCL stages through host memory", nic, best)
		}
		f.Evidence = e
	}
}

// Run applies every host rule to one snapshot.
func Run(s *host.Snapshot, o Options) []check.Finding {
	var out []check.Finding
	for _, r := range Rules {
		if (o.Profile == VMHost && guestOnly[r.ID]) || !o.runs(r.ID) {
			continue
		}
		if o.Progress != nil {
			o.Progress(r.ID)
		}
		out = append(out, r.apply(s, o)...)
	}
	check.Sort(out)
	return out
}

// apply runs one rule on one snapshot and returns what it reported.
func (r rule) apply(s *host.Snapshot, o Options) []check.Finding {
	rep := r.Entry.Reporter(s.Hostname)
	r.run(rep, s, o)
	return rep.Findings()
}

// isVF reports an SR-IOV virtual function: its PCI function names a
// physical one, or its device id is a VF's.
func isVF(s *host.Snapshot, d host.RDMADevice) bool {
	if pd := s.PCI(d.PCIAddress); pd != nil && (pd.PhysFn.IsValid() || strings.HasSuffix(host.DeviceName(pd.Vendor, pd.Device), " VF")) {
		return true
	}
	// A saved ibstat has no PCI tree, only its CA type: "MT4120" is the
	// decimal device id (0x1018, ConnectX-5 VF).
	if n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(d.HCAType), "MT")); err == nil {
		return strings.HasSuffix(host.DeviceName("0x15b3", fmt.Sprintf("0x%04x", n)), " VF")
	}
	return false
}

// NotActivated explains an InfiniBand port whose physical link is up but
// whose logical state is not Active (state: Init or Down). With an SM LID
// the subnet has an SM: on a virtual function it is the SM not activating
// the virtual port (SR-IOV needs virtualisation in the SM and a GUID and
// policy for the VF), on a physical port the SM not configuring it;
// without one, no SM runs. judge says the same for saved ibstat.
func NotActivated(state string, vf bool, smLID int) (string, []string) {
	switch {
	case vf && smLID > 0:
		return fmt.Sprintf("virtual function %s with its physical link up and an SM answering at LID %d: the SM has not activated this virtual port (not a missing SM)", state, smLID),
			[]string{"on the hypervisor, give the VF a GUID and a policy: echo <guid> > /sys/class/infiniband/<pf>/device/sriov/<vf>/node (and port); echo Follow > …/sriov/<vf>/policy; rebind the VF",
				"enable virtualisation in the SM: virt_enabled 2 in opensm.conf (or the UFM/switch SM's SR-IOV setting), then restart it"}
	case vf:
		return fmt.Sprintf("virtual function %s with its physical link up and no SM LID: the SM has not activated this virtual port, or no SM runs", state),
			[]string{"sminfo   # is there a master SM?", "enable virtualisation in the SM (virt_enabled 2 in opensm.conf) and give the VF a GUID and policy on the hypervisor"}
	case smLID > 0:
		return fmt.Sprintf("link is up but the port is %s although an SM answers at LID %d: the SM has not configured this port", state, smLID),
			[]string{"check the SM log (/var/log/opensm.log) for this port GUID", "sminfo; ibportstate to query the port"}
	}
	return fmt.Sprintf("link is up but the port is %s: no subnet manager has configured it", state),
		[]string{"systemctl enable --now opensm   # on exactly one node", "sminfo   # shows the master SM once it runs"}
}

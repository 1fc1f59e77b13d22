// Package hostcheck holds doctor's health rules over host snapshots: one
// host at a time, and the fleet rules that compare hosts. Every rule is a
// pure function of snapshots, table-tested without a filesystem.
package hostcheck

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
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

package bench

import "github.com/rdmalab/rdmalab/internal/check"

// The checks bench reports: each is a rule's catalog entry;
// the rule reports through a reporter bound to it (entry.Reporter(host)).
var (
	CheckNodeSend = check.Entry{ID: "bench.node.send", Title: "A node sends at the rate its peers do",
		Why:    "When most directions leaving one node are slow while its partners are fine with each other, the fault is that node's send side: its NIC, cable, PCIe link or CPU placement.",
		Source: "all-pairs bandwidth matrices (seed 000 practice: test every pair both ways)",
		Fixes:  []string{"rdmalab doctor on the node (port rate, PCIe link, error counters, MTU)", "check the node's cable and switch port; compare ethtool -S / perfquery counters before and after a run"},
		Needs:  "every direction from the node measured against several partners, and the cluster's median or the link's ceiling", UnknownWhen: "never: a node with too few measured partners is not named"}
	CheckNodeReceive = check.Entry{ID: "bench.node.receive", Title: "A node receives at the rate its peers do",
		Why:    "As bench.node.send, for the directions arriving at the node.",
		Source: "all-pairs bandwidth matrices",
		Fixes:  []string{"rdmalab doctor on the node (port rate, PCIe link, error counters, MTU)", "check the node's cable and switch port"},
		Needs:  "every direction into the node measured against several partners", UnknownWhen: "never: a node with too few measured partners is not named"}
	CheckNode = check.Entry{ID: "bench.node", Title: "A node is good on both sides",
		Why:    "The pass a node earns when neither its send nor its receive side is bad, so a clean node is named, not silently absent.",
		Source: "all-pairs bandwidth matrices",
		Needs:  "the node measured both ways", UnknownWhen: "never: a node not measured is reported by bench.node.unreachable or bench.run"}
	CheckDirectionSlow = check.Entry{ID: "bench.direction.slow", Title: "No pair is slow that neither end explains",
		Why:    "A bad direction whose ends are good with every other partner points at the path between them (a switch port, a route) or at noise.",
		Source: "all-pairs bandwidth matrices",
		Fixes:  []string{"measure again: the same rdmalab bench command (slow pairs are retested against known-good partners unless --no-retest)", "check the route and switch ports between the two nodes"},
		Needs:  "the pair's samples and both ends' other directions", UnknownWhen: "never: a direction not measured is bench.direction.error"}
	CheckDirectionError = check.Entry{ID: "bench.direction.error", Title: "Every direction could be measured",
		Why:    "A direction that failed while neither node is down has no number: it is a fault of the pair, not a pass.",
		Source: "perftest / iperf3 exit status",
		Fixes:  []string{"run the pair by hand (ib_write_bw) and read its error", "bench --resume measures it once fixed"},
		Needs:  "the run's result record for the direction", UnknownWhen: "never"}
	CheckPairTimeout = check.Entry{ID: "bench.pair.timeout", Title: "No pair hangs while both ends answer",
		Why:    "A pair that times out while both nodes answer other partners has a data path that does not work between them (a route, a partition key, a firewall).",
		Source: "bench's per-pair deadline",
		Fixes:  []string{"run the pair by hand with a timeout; check routes (ibtracert) and firewall rules between them"},
		Needs:  "the run's timeout record and the nodes' other results", UnknownWhen: "never"}
	CheckNodeUnreachable = check.Entry{ID: "bench.node.unreachable", Title: "Every node of the cluster could be measured",
		Why:    "A node that cannot be reached or started leaves all its directions unmeasured: absence of a result is a finding, not a pass.",
		Source: "bench preflight and launch errors",
		Fixes:  []string{"ssh NODE true   # reachable? host key known?", "rdmalab bench --resume after fixing it"},
		Needs:  "the preflight and launch results of every node", UnknownWhen: "never"}
	CheckLinkRateSuspect = check.Entry{ID: "bench.link.rate-suspect", Title: "The cluster file's link rate is believable",
		Why:    "When the whole cluster measures above what the declared link can carry, the declared rate is wrong (or the measurement is), so verdicts against it mean nothing.",
		Source: "linkrate ceilings vs the cluster's median",
		Fixes:  []string{"set link.rate in the cluster file to the ports' real rate (ibstat / ethtool)"},
		Needs:  "a declared link rate and the cluster's median", UnknownWhen: "the cluster's median is above what the declared rate carries (from five directions; with fewer, every one): the run is unproven until the rate is right"}
	CheckLinkBelowCeiling = check.Entry{ID: "bench.link.below-ceiling", Title: "The cluster reaches what its links carry",
		Why:    "When every node is equally slow, no peer comparison finds it: only the link's ceiling does. A cluster-wide cause (rate, MTU, PCIe, governor, test size).",
		Source: "linkrate ceilings (rate, encoding, headers, MTU, PCIe)",
		Fixes:  []string{"rdmalab doctor --expect-rate on every node (rate, MTU, PCIe, governor)", "measure with a larger message size"},
		Needs:  "a declared link rate (cluster file or --expect-rate) and the cluster's median", UnknownWhen: "never: without a declared rate the check does not run"}
	CheckDirectionAboveCeiling = check.Entry{ID: "bench.direction.above-ceiling", Title: "No direction beats what its link can carry",
		Why:    "A measurement above the link's ceiling is impossible: the declared rate or MTU is wrong, or the measurement is (perftest warns of unreliable timing).",
		Source: "linkrate ceilings",
		Fixes:  []string{"check the pair's rate and MTU in the cluster file", "read perftest's warnings for the pair"},
		Needs:  "the direction's link (rate, layer, MTU)", UnknownWhen: "never"}
	CheckRunLeftover = check.Entry{ID: "bench.run.leftover", Title: "A round leaves no process behind",
		Why:    "A process still alive after its round competes with the next one and skews it.",
		Source: "launch's reap of the run's process groups",
		Fixes:  []string{"find what held the process (a hung verbs call, a stuck NFS mount) on the node named"},
		Needs:  "launch's record of processes killed after their round", UnknownWhen: "never"}
	CheckRun = check.Entry{ID: "bench.run", Title: "The run measured something it can judge",
		Why:    "A run or results log with no result says nothing about the cluster; a direction with no declared rate, no latency table and fewer than three peers of its class has nothing to be told from: unknown, never pass.",
		Source: "the results log and the cluster file",
		Fixes:  []string{"declare link.rate in the cluster file (the ports' rate, as ibstat or ethtool shows it), or measure at least three directions of each link class"},
		Needs:  "at least one measured direction, and a declared rate or three directions of each link class", UnknownWhen: "nothing was measured, or a direction has neither a declared rate nor three peers to be judged against"}
	CheckPerftestWarning = check.Entry{ID: "bench.perftest.warning", Title: "perftest did not warn about its own measurement",
		Why:    "perftest's warnings (CPU frequency scaling, unreliable timing) say its numbers may be wrong, whatever they are.",
		Source: "perftest output",
		Fixes:  []string{"cpupower frequency-set -g performance", "run again with -F only if the warning is understood"},
		Needs:  "perftest's output", UnknownWhen: "never"}
	CheckPerftestBandwidth = check.Entry{ID: "bench.perftest.bandwidth", Title: "A saved perftest bandwidth is what the link carries",
		Why:    "One perftest run has no peers: only the expected link's ceiling judges it.",
		Source: "perftest output vs linkrate ceilings",
		Fixes:  []string{"rdmalab doctor --expect-rate on both nodes", "rdmalab bench for verdicts against peers"},
		Needs:  "--expect-rate (and --expect-link-layer; InfiniBand when not given); perftest's own MTU", UnknownWhen: "no expected rate is given"}
	CheckPerftestLatency = check.Entry{ID: "bench.perftest.latency", Title: "A saved perftest latency run, reported",
		Why:    "One latency run has no peers to compare with: it is reported (p50, p99, p99.9), not judged.",
		Source: "perftest output",
		Needs:  "a latency table", UnknownWhen: "always: run rdmalab bench for verdicts"}
	CheckDirectionNoisy = check.Entry{ID: "bench.direction.noisy", Title: "A short direction is told apart from the run's own noise",
		Why:    "A direction below its peers by less than its own samples' (or its class's) spread is no verdict: it is said, never failed, and measured again to tell.",
		Source: "seed 000 (p99/p99.9 spread across runs); a 4-node run that failed one direction at 86% of peers while its samples spread 17%",
		Fixes:  []string{"measure again with more --samples on a quieter machine", "rdmalab compare two runs to see whether the shortfall is stable"},
		Needs:  "at least two samples of the direction and its link class's spread", UnknownWhen: "never: a direction with one sample is judged against the class's spread"}
	CheckLinkLatency = check.Entry{ID: "bench.link.latency", Title: "The cluster's latency is what a clean fabric gives",
		Why:    "One latency run is judged on its own against seed 001's table for the link's rate: 1.0–1.5 µs typical at 100 Gb/s, over 5 µs on one switch is broken.",
		Source: "seed 001 (expected numbers on a clean fabric); seed 003 (1.15 µs QDR), seed 000 (1.41 µs 25GbE RoCE)",
		Fixes:  []string{"check the path: switch hops, PFC pauses (RoCE), CPU power states (cpupower frequency-set -g performance)", "run perftest with -F to see the CPU-frequency warning"},
		Needs:  "the p50 of every latency direction and the link's rate (cluster file) for the row", UnknownWhen: "no latency direction was measured"}
	CheckPerftestLinkLayer = check.Entry{ID: "bench.perftest.link-layer", Title: "perftest ran over the link layer expected",
		Why:    "perftest prints the layer it used (Link type: Ethernet is RoCE); a run over another layer than the one expected measured other ports.",
		Source: "perftest's Link type line; seed 000",
		Fixes:  []string{"point --ib-dev/--ib-port (or the cluster file's device/port) at the intended ports", "set link.layer (or --expect-link-layer) to the ports' layer (ibstat)"},
		Needs:  "perftest's Link type line and an expected layer", UnknownWhen: "never: without an expected layer the run's own layer is used"}
	CheckPerftestMTU = check.Entry{ID: "bench.perftest.mtu", Title: "perftest ran at the largest RDMA MTU (4096)",
		Why:    "Below 4096 every message pays more headers; on RoCE it usually means the netdev MTU was left at 1500, which limits the RDMA MTU to 1024.",
		Source: "seed 000 (the default Ethernet MTU of 1500 limits the RDMA MTU to 1024); seed 001 (MTU end to end)",
		Fixes:  []string{"ip link set <netdev> mtu 9000 on every host and switch port (RoCE)", "check the SM's MTU (InfiniBand: opensm mtu / partitions.conf)"},
		Needs:  "perftest's Mtu line", UnknownWhen: "never: a run that prints no Mtu is not judged"}
)

// Catalog lists every check bench reports (docs/checks.md is made from it).
var Catalog = []check.Entry{
	CheckNodeSend,
	CheckNodeReceive,
	CheckNode,
	CheckDirectionSlow,
	CheckDirectionError,
	CheckPairTimeout,
	CheckNodeUnreachable,
	CheckLinkRateSuspect,
	CheckLinkBelowCeiling,
	CheckDirectionAboveCeiling,
	CheckRunLeftover,
	CheckRun,
	CheckPerftestWarning,
	CheckPerftestBandwidth,
	CheckPerftestLatency,
	CheckDirectionNoisy,
	CheckLinkLatency,
	CheckPerftestLinkLayer,
	CheckPerftestMTU,
}

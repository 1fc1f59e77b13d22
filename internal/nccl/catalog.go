package nccl

import "github.com/rdmalab/rdmalab/internal/check"

// The checks nccl reports: each is a rule's catalog entry;
// the rule reports through a reporter bound to it (entry.Reporter(host)).
var (
	CheckEnvSocketIfName = check.Entry{ID: "nccl.env.socket-ifname", Title: "NCCL_SOCKET_IFNAME names an interface that reaches the other nodes",
		Why: "NCCL's bootstrap and Socket transport use the first non-loopback interface unless told; a docker0 or management NIC there hangs init or carries the data.", Source: "NCCL environment documentation; gpudirect's socket interface pick",
		Fixes: []string{"export NCCL_SOCKET_IFNAME=<the interface of the nodes' shared network>"},
		Needs: "the host snapshot's netdevs and addresses", UnknownWhen: "never: a doubtful pick is a warning"}
	CheckEnvRails = check.Entry{ID: "nccl.env.rails", Title: "NCCL has RDMA rails for its GPUs",
		Why: "Without an active RDMA port NCCL uses NET/Socket between nodes; without a GPU there is nothing to place.", Source: "NCCL topology (paths.cc)",
		Fixes: []string{"rdmalab doctor on the node (port.state, rdma.driver)"},
		Needs: "GPUs and active RDMA ports in the snapshot", UnknownWhen: "the snapshot has no GPU"}
	CheckEnvGIDIndex = check.Entry{ID: "nccl.env.gid-index", Title: "One RoCE v2 GID index serves every rail",
		Why: "NCCL_IB_GID_INDEX is one number for all devices; rails whose RoCE v2 GID sits at different indexes cannot share it.", Source: "NCCL_IB_GID_INDEX; RDMA reference §5",
		Fixes: []string{"leave NCCL_IB_GID_INDEX unset (NCCL ≥ 2.21 picks per device)", "or make the GID tables agree"},
		Needs: "the GID tables of the RoCE rails", UnknownWhen: "the GID tables are not in the snapshot"}
	CheckEnvGID = check.Entry{ID: "nccl.env.gid", Title: "Each RoCE rail has the GID NCCL will pick",
		Why: "NCCL picks a RoCE v2 GID with an IPv4 address; a rail without one falls back to a GID that does not route.", Source: "NCCL ibvwrap GID selection",
		Fixes: []string{"assign the rail's netdev an IPv4 address", "check rdma link show / show_gids"},
		Needs: "the rail's GID table", UnknownWhen: "the GID table is not in the snapshot"}
	CheckEnvGDR = check.Entry{ID: "nccl.env.gdr", Title: "GPUDirect RDMA is predicted on for each GPU",
		Why: "With GPUDirect off, every transfer stages through host memory (often 5–10× slower).", Source: "gpudirect prediction (NCCL_NET_GDR_LEVEL, peermem)",
		Fixes: []string{"modprobe nvidia-peermem", "pair each GPU with its nearest NIC (NCCL_IB_HCA)"},
		Needs: "the PCI path from each GPU to its rail and the kernel modules", UnknownWhen: "never: a doubtful prediction is a warning"}
	CheckEnvDiffer = check.Entry{ID: "nccl.env.differ", Title: "Every node gets the same NCCL environment",
		Why: "Nodes whose derived NCCL settings differ (HCA list, GID index, socket interface) do not agree on transports and hang or slow at init.", Source: "nccl env over several snapshots",
		Fixes: []string{"make the nodes alike (rdmalab doctor fleet.* rules), or set the variables per node"},
		Needs: "a snapshot of every node", UnknownWhen: "never"}
	CheckLogFailure = check.Entry{ID: "nccl.log.failure", Title: "The run did not stop on an error",
		Why: "An NCCL error or a test that stopped means the numbers before it are not a whole run.", Source: "NCCL_DEBUG log, nccl-tests output",
		Fixes: []string{"read the first error line quoted; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET for more"},
		Needs: "the log", UnknownWhen: "never"}
	CheckLogPlugin = check.Entry{ID: "nccl.log.plugin", Title: "The net plugin NCCL was told to use is there",
		Why: "NCCL_NET naming a plugin that is missing or fails to initialise makes NCCL fall back (or fail).", Source: "NCCL_DEBUG log (NET/Plugin lines)",
		Fixes: []string{"install the plugin (e.g. aws-ofi-nccl, nccl-rdma-sharp-plugins) or unset NCCL_NET"},
		Needs: "the log's NET/Plugin lines", UnknownWhen: "never: no plugin line means the internal transports"}
	CheckLogSocket = check.Entry{ID: "nccl.log.socket", Title: "Inter-node traffic does not use NET/Socket",
		Why: "NET/Socket means RDMA is not used between nodes: a fraction of the fabric's bandwidth.", Source: "NCCL_DEBUG log (Using network, channel lines)",
		Fixes: []string{"rdmalab nccl env (NCCL_IB_HCA)", "rdmalab doctor on the nodes"},
		Needs: "the log's network and channel lines", UnknownWhen: "never: reported under nccl.log.network"}
	CheckLogNetwork = check.Entry{ID: "nccl.log.network", Title: "The log says which network NCCL chose",
		Why: "Without the network line the transport is a guess.", Source: "NCCL_DEBUG log",
		Fixes: []string{"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"},
		Needs: "\"NET/IB : Using\", \"Using network\" or channel lines", UnknownWhen: "the log has none of them"}
	CheckLogMixedLayers = check.Entry{ID: "nccl.log.mixed-layers", Title: "NET/IB does not mix link layers",
		Why: "Rings that pair an InfiniBand rail with a RoCE NIC cannot connect, or run at the slower NIC's rate.", Source: "NCCL_DEBUG log (NET/IB : Using … /IB, /RoCE)",
		Fixes: []string{"NCCL_IB_HCA listing only the rails of one layer"},
		Needs: "the NET/IB device list", UnknownWhen: "never"}
	CheckLogGDR = check.Entry{ID: "nccl.log.gdr", Title: "GPUDirect RDMA is on in the run",
		Why: "Without GPUDirect RDMA, network traffic stages through host memory (often 5–10× slower). NCCL's \"GPU Direct RDMA Disabled for HCA\" means it found no peer-memory support at all (no nvidia-peermem, no DMA-BUF): that fails, unless the host's snapshot predicted GPUDirect off anyway. Channels without /GDRDMA on an HCA that has it are NCCL's choice by path distance: a warning, a failure where the prediction said on.", Source: "NCCL_DEBUG log (GDR lines, /GDRDMA channels)",
		Fixes: []string{"modprobe nvidia-peermem", "NCCL_NET_GDR_LEVEL if the path is longer than PXB"},
		Needs: "the log's GDR and channel lines", UnknownWhen: "GPUDirect was predicted on but no line confirms it"}
	CheckLogWarn = check.Entry{ID: "nccl.log.warn", Title: "NCCL printed no warning it did not shrug off",
		Why: "An NCCL WARN line is NCCL's own statement that something is off; the ones NCCL carries on from as meant (a topology attribute a VM does not expose) are named harmless and pass, the fatal ones are nccl.log.fatal.", Source: "NCCL_DEBUG log",
		Fixes: []string{"read the warning quoted"},
		Needs: "the log", UnknownWhen: "never"}
	CheckLogFatal = check.Entry{ID: "nccl.log.fatal", Title: "NCCL reported no fatal error",
		Why:    "A failed work completion (\"Got completion from peer … with error 12\": IBV_WC_RETRY_EXC_ERR, the peer stopped answering on the fabric), a failed ibv_* call (ibv_create_qp, ibv_reg_mr, ibv_modify_qp), a proxy or transport error, a timeout or an abort, with the \"-> N\" error chain after it (ncclSystemError, ncclRemoteError …), means the collective did not run as meant, whatever numbers were printed.",
		Source: "NCCL_DEBUG log; libibverbs enum ibv_wc_status; nccl.h ncclResult_t",
		Fixes:  []string{"for a work completion error: rdmalab doctor on both hosts and rdmalab bench on the pair", "for ibv_create_qp / ibv_reg_mr: ulimit -l unlimited, nvidia-peermem or DMA-BUF"},
		Needs:  "the log's WARN lines (a WARN wrapped over two lines is read whole)", UnknownWhen: "never"}
	CheckLogVersion = check.Entry{ID: "nccl.log.version", Title: "Every host runs the same NCCL version",
		Why: "Mismatched NCCL versions hang or crash at init.", Source: "NCCL_DEBUG log (NCCL version lines)",
		Fixes: []string{"install one NCCL version on every node (or one container image)"},
		Needs: "each host's version line", UnknownWhen: "never"}
	CheckLogSilent = check.Entry{ID: "nccl.log.silent", Title: "Every host of the run logged",
		Why: "A host that took part but logged nothing has an unknown transport, not the others' one.", Source: "NCCL_DEBUG log",
		Fixes: []string{"set NCCL_DEBUG=INFO on every rank (mpirun -x NCCL_DEBUG)"},
		Needs: "the NCCL_DEBUG lines of every host of the run", UnknownWhen: "a host's lines are missing"}
	CheckTestsComplete = check.Entry{ID: "nccl.tests.complete", Title: "The nccl-tests run concluded",
		Why: "A run with no result rows, no average line or JSON cut mid-document stopped: killed, timed out, hung or crashed.", Source: "nccl-tests output",
		Fixes: []string{"run again with NCCL_DEBUG=INFO and look for the last line before the stop"},
		Needs: "the whole output", UnknownWhen: "never"}
	CheckTestsCorrectness = check.Entry{ID: "nccl.tests.correctness", Title: "nccl-tests validated its results",
		Why: "Out-of-bounds (#wrong) results mean corrupted data, whatever the bandwidth; a run without validation cannot show it.", Source: "nccl-tests #wrong / out of bounds columns",
		Fixes: []string{"run with -c 1 (validation on)", "for corruption: check GPU and NIC firmware, ACS and ATS, then rdmalab doctor"},
		Needs: "the #wrong column of each size", UnknownWhen: "validation was off (0 or N/A in every row)"}
	CheckTestsImplausible = check.Entry{ID: "nccl.tests.implausible", Title: "No row is faster than memory",
		Why: "algbw above any GPU memory's speed means the operation did no work (single rank in place): such rows say nothing about the fabric.", Source: "nccl-tests output",
		Needs: "the result rows", UnknownWhen: "never"}
	CheckTestsMeasurement = check.Entry{ID: "nccl.tests.measurement", Title: "Every number of the table is a measurement",
		Why:    "inf or NaN, or a busbw beyond any GPU interconnect or NIC (more than twice NVLink 5's 900 GB/s per direction, the most the all_reduce formula reaches even with in-switch reduction), is an error of the run, the timer or the capture: judged as bandwidth it would pass anything.",
		Source: "nccl-tests output; linkrate.NVLinkMaxGBps",
		Fixes:  []string{"rerun and keep the whole output"},
		Needs:  "the result rows", UnknownWhen: "never"}
	CheckTestsPlateau = check.Entry{ID: "nccl.tests.plateau", Title: "busbw reaches its plateau and keeps it",
		Why: "busbw falling at large sizes is memory pressure, congestion or a rail going slow mid-run; still rising at the largest size means the run understates the fabric.", Source: "nccl-tests busbw by size",
		Fixes: []string{"run up to a larger size (-e 8G)"},
		Needs: "several sizes up to the plateau", UnknownWhen: "never"}
	CheckTestsBusbw = check.Entry{ID: "nccl.tests.busbw", Title: "busbw is what the NICs carry",
		Why: "Across nodes, busbw is bounded by the NICs: near their ceiling the path is RDMA with GPUDirect; far below, RDMA is likely not used or GPUDirect is off.", Source: "nccl-tests busbw vs linkrate ceilings (--expect-rate)",
		Fixes: []string{"rdmalab nccl env", "check the NCCL_DEBUG log for NET/Socket or GDR off"},
		Needs: "several nodes (the ranks' hosts, or --nodes N for output that names none) and the NIC's rate (--expect-rate, --rails)", UnknownWhen: "one rank or one node, no hosts named and no --nodes, or no NIC rate"}
	CheckRunTimeout = check.Entry{ID: "nccl.run.timeout", Title: "The nccl-tests run finished in time",
		Why: "A run killed at its deadline hung: init, a collective, or a node.", Source: "nccl run deadline",
		Fixes: []string{"run again with NCCL_DEBUG=INFO; look for the last INIT/NET line of each rank"},
		Needs: "the run's exit record", UnknownWhen: "never"}
	CheckRunExit = check.Entry{ID: "nccl.run.exit", Title: "The nccl-tests launch succeeded",
		Why: "mpirun failing to start or exiting non-zero leaves no result.", Source: "mpirun exit status",
		Fixes: []string{"read the log named in the finding"},
		Needs: "the run's exit record", UnknownWhen: "never"}
	CheckRunLeftover = check.Entry{ID: "nccl.run.leftover", Title: "A run leaves no rank behind",
		Why:    "A rank still alive after its run (a hung collective the launch's kill did not reach) holds the GPUs and NICs the next run needs.",
		Source: "launch's reap of the run's identity (RDMALAB_RUN) on every node of the run",
		Fixes:  []string{"find what held the rank (a hung verbs call, a GPU in a bad state) on the node named"},
		Needs:  "launch's record of processes killed after the run", UnknownWhen: "never"}
	CheckEnvTC = check.Entry{ID: "nccl.env.tc", Title: "NCCL's traffic class lands on the fabric's lossless priority",
		Why:    "NCCL_IB_TC defaults to 0 (DSCP 0, priority 0) while a RoCE fabric is lossless on one priority only (seed 001: priority 3, DSCP 26): unset, NCCL traffic rides the lossy class.",
		Source: "seed 001 (RoCE section); NVIDIA/nccl#2383 (GPU-initiated QPs ignore traffic_class)",
		Fixes:  []string{"rdmalab doctor   # roce.qos.path names the lossless priority", "export NCCL_IB_TC=106 NCCL_IB_SL=3"},
		Needs:  "each rail's RoCE QoS (trust, DSCP map, PFC) in the snapshot", UnknownWhen: "never: QoS not read is a warning naming what to read"}
	CheckLogGINTC = check.Entry{ID: "nccl.log.gin-tc", Title: "GPU-initiated networking carries the lossless traffic class",
		Why:    "NCCL's GPU-initiated networking on the GDAKI backend builds DevX QPs that the kernel's per-port traffic_class never reaches: without NCCL_IB_TC (or NCCL_GIN_IB_TC) they ride DSCP 0, the lossy priority, drop under load and hang (NVIDIA/nccl#2383).",
		Source: "NVIDIA/nccl#2383; NCCL's GIN (src/gin/gin_host.cc backend type 3 = GDAKI, NCCL_GIN_IB_TC falls back to NCCL_IB_TC)",
		Fixes:  []string{"export NCCL_IB_TC=<the lossless class> (rdmalab nccl env computes it)", "or NCCL_GIN_IB_TC for GIN traffic alone"},
		Needs:  "the log's GIN lines (devCommCreate: GIN backend type 3, gin_host_gdaki.cc, NCCL_GIN_TYPE=3) and its \"set by environment\" lines", UnknownWhen: "never: without a GDAKI line the check does not run, and on InfiniBand-only rails neither"}
	CheckLogGDRLevel = check.Entry{ID: "nccl.log.gdr-level", Title: "NCCL_NET_GDR_LEVEL does not force or forbid GPUDirect RDMA blindly",
		Why:    "SYS forces GPUDirect RDMA across the sockets' interconnect, where peer reads are slow or unsupported; LOC turns it off; numeric levels changed meaning between NCCL versions.",
		Source: "NCCL environment variables (NCCL_NET_GDR_LEVEL); seed 001 (PHB)",
		Fixes:  []string{"unset it (default PXB), or set PHB where GPU and NIC share a socket and it measures faster", "rdmalab nccl env --snapshot <host>.json shows each GPU's path level"},
		Needs:  "NCCL_NET_GDR_LEVEL in the log (NCCL's own lines, a command line or an export)", UnknownWhen: "never: a log that does not show it is not judged"}
)

// Catalog lists every check nccl reports: the environment it derives
// from a snapshot (nccl.env.*), NCCL_DEBUG logs (nccl.log.*), nccl-tests
// output (nccl.tests.*), its runs (nccl.run.*) and NCCL RAS reports and
// polls (nccl.ras.*). docs/checks.md is made
// from it.
var Catalog = append([]check.Entry{
	CheckEnvSocketIfName,
	CheckEnvRails,
	CheckEnvGIDIndex,
	CheckEnvGID,
	CheckEnvGDR,
	CheckEnvDiffer,
	CheckLogFailure,
	CheckLogPlugin,
	CheckLogSocket,
	CheckLogNetwork,
	CheckLogMixedLayers,
	CheckLogGDR,
	CheckLogWarn,
	CheckLogFatal,
	CheckLogVersion,
	CheckLogSilent,
	CheckTestsComplete,
	CheckTestsCorrectness,
	CheckTestsImplausible,
	CheckTestsMeasurement,
	CheckTestsPlateau,
	CheckTestsBusbw,
	CheckRunTimeout,
	CheckRunExit,
	CheckRunLeftover,
	CheckEnvTC,
	CheckLogGINTC,
	CheckLogGDRLevel,
}, RASCatalog...)

package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/ncclrun"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/resultslog"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newNCCLCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "nccl",
		Short: "Prove the GPU data path: NCCL environment, nccl-tests runs, NCCL_DEBUG judgement",
		Long: `nccl predicts from host snapshots what NCCL will do (rail NIC per GPU, path
level, GPUDirect RDMA, RoCE GID index, bootstrap interface) and writes the
environment that makes it so (env); runs nccl-tests on 2, 4, 8 … nodes of a
cluster file through Open MPI's mpirun and judges every run (run); and judges
saved nccl-tests output, NCCL_DEBUG logs and ncclras reports (judge); and
polls a running job's RAS service to tell a hang from a straggler (ras).
docs/nccl.md walks through seed 001's bring-up with these commands.`,
		Example: `  rdmalab nccl env --snapshot example:hgx-h200
  source <(rdmalab nccl env --snapshot example:hgx-h200)   # sets, runs nothing
  rdmalab nccl env --snapshot example:hgx-h200 --launch-lines 2>/dev/null
  rdmalab nccl run --cluster cluster.yaml --gpus-per-node 8 --rails 8 --snapshot node1.json
  rdmalab nccl judge all_reduce.log --expect-rate "4X NDR" --rails 8 --algo Ring
  rdmalab nccl ras --host node1 --interval 5s --polls 3`,
	}
	c.AddCommand(newNCCLEnvCmd(), newNCCLJudgeCmd(), newNCCLRunCmd(), newNCCLRASCmd())
	return c
}

func newNCCLEnvCmd() *cobra.Command {
	var in hostInput
	var output format
	var launchLines bool
	c := &cobra.Command{
		Use:   "env",
		Short: "The NCCL environment per node, each value with its reason",
		Long: `env reads each host (live, --root, or --snapshot, repeated for a fleet) and
prints, per node, the exports NCCL needs with the reason for each value:
NCCL_SOCKET_IFNAME (the management interface, never an RDMA port's netdev),
NCCL_IB_HCA (the rail NIC nearest each GPU, exact names), NCCL_IB_GID_INDEX
(the RoCE v2 IPv4 GID NCCL picks), NCCL_NET_GDR_LEVEL, NCCL_DEBUG; then the
same as mpirun -x and srun --export arguments. Each GPU's rail, PCIe path
level and GPUDirect RDMA prediction are listed with why.

Standard output is a file a shell sources and that runs nothing: comments
and shell-quoted exports (with several hosts, the values they share, then the
rest per node in a case on the short hostname). The mpirun and srun lines,
the findings and the verdict go to standard error, or the lines to standard
output after the exports with --launch-lines.

Exit codes: 0 healthy, 1 a failure (no rail near any GPU), 2 could not run,
3 unproven.`,
		Example: `  rdmalab nccl env
  rdmalab nccl env --snapshot example:hgx-h200
  source <(rdmalab nccl env --snapshot example:hgx-h200)   # sets, runs nothing
  rdmalab nccl env --snapshot example:hgx-h200 --launch-lines 2>/dev/null
  rdmalab nccl env --snapshot node1.json --snapshot node2.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hosts, err := in.load()
			if err != nil {
				return err
			}
			env, fs := nccl.MakeEnv(hosts)
			v := rules.Verdict(rules.NCCLEnv, fs)
			w := cmd.OutOrStdout()
			if output == "json" {
				if err := envelope.WriteJudged(w, envelope.NCCL, v, fs, env); err != nil {
					return err
				}
				return verdictErr(v)
			}
			// stdout is a file a shell sources: exports and comments only.
			// The launcher lines and the findings go to stderr unless
			// --launch-lines asks for the lines on stdout.
			if err := nccl.WriteEnv(w, env, report.StyleOf(w).Width); err != nil {
				return err
			}
			lines := cmd.ErrOrStderr()
			if launchLines {
				lines = w
				fmt.Fprintln(w)
			}
			if err := nccl.WriteLaunchLines(lines, env); err != nil {
				return err
			}
			e := cmd.ErrOrStderr()
			if len(fs) > 0 {
				fmt.Fprintln(e)
				report.Findings(e, fs, true)
			}
			report.VerdictLine(e, v)
			return verdictErr(v)
		},
	}
	in.register(c, true)
	outputFlag(c.Flags(), &output, "table or json (table: the shell exports)")
	c.Flags().BoolVar(&launchLines, "launch-lines", false, "print the mpirun -x and srun --export lines on standard output after the exports (then the output is no longer for sourcing)")
	return c
}

// nicFlags are what the judge needs to know about the NICs.
type nicFlags struct {
	rate   string
	layer  string
	mtu    int
	rails  int
	algo   string
	socket bool
	// nodes and ranksPerNode are for output that names no hosts
	nodes, ranksPerNode int
}

func (n *nicFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&n.rate, "expect-rate", "", `rate of one rail: 200, "4X HDR", 100GbE (default: unknown, busbw reported but not judged)`)
	c.Flags().StringVar(&n.layer, "expect-link-layer", "", "InfiniBand or RoCE (default: InfiniBand, or Ethernet for a GbE rate)")
	alias(c.Flags(), "expect-rate", "nic-rate")
	alias(c.Flags(), "expect-link-layer", "link-layer")
	c.Flags().IntVar(&n.mtu, "mtu", 0, "RDMA MTU in bytes (default 4096 on InfiniBand, 1024 on RoCE)")
	c.Flags().IntVar(&n.rails, "rails", 1, "NICs per node NCCL spreads inter-node traffic over")
	c.Flags().StringVar(&n.algo, "algo", "", "NCCL_ALGO the run used (Ring makes busbw above the NIC limit a failure)")
	c.Flags().BoolVar(&n.socket, "allow-socket", false, "NET/Socket between nodes is expected (no RDMA)")
	c.Flags().IntVar(&n.nodes, "nodes", 0, `nodes the run spanned, for output without "#  Rank … on HOST" lines (without hosts or --nodes, busbw is unproven)`)
	c.Flags().IntVar(&n.ranksPerNode, "ranks-per-node", 0, "ranks per node (with --nodes: the rank count where the columns cannot give it)")
}

func (n *nicFlags) options() (nccl.JudgeOptions, error) {
	opt := nccl.JudgeOptions{RailsPerNode: n.rails, Algo: n.algo, AllowSocket: n.socket, Nodes: n.nodes, RanksPerNode: n.ranksPerNode}
	if n.ranksPerNode > 0 && n.nodes == 0 {
		return opt, usageErr("--ranks-per-node needs --nodes N (how many nodes the run spanned)")
	}
	if n.rate == "" {
		return opt, nil
	}
	e, err := linkrate.NewExpect(n.rate, n.layer, n.mtu, fmt.Sprintf("--expect-rate %s --rails %d", n.rate, n.rails))
	if err != nil {
		return opt, usageErr("--expect-rate/--expect-link-layer/--mtu: %v", err)
	}
	opt.NIC = e.Link()
	opt.NICSource = e.Source
	return opt, nil
}

func newNCCLJudgeCmd() *cobra.Command {
	var output format
	var cluster, fabric, routes string
	var snapshots []string
	var nf nicFlags
	c := &cobra.Command{
		Use:   "judge FILE...",
		Short: "Judge saved nccl-tests output and NCCL_DEBUG logs",
		Long: `judge reads nccl-tests output (text with or without the root column, #wrong or
the older error column, mpirun rank prefixes, stray NCCL lines, or -J JSON) and
NCCL_DEBUG=INFO logs, in any mix. Any #wrong > 0 fails whatever the bandwidth;
a run without its "Avg bus bandwidth" or "concluded" line is incomplete; busbw
is judged on the large-message plateau (never the Avg line) against what the
NICs carry (--expect-rate, --rails); a plateau that falls at large sizes is
flagged. From the log, per host: the network NCCL chose, plugins, GPUDirect
RDMA per HCA and channel, NET/Socket between nodes (a failure), every WARN,
NCCL versions, and hosts that took part but did not log. A fatal WARN (a work
completion error such as "error 12", IBV_WC_RETRY_EXC_ERR; a failed ibv_* call;
a proxy or transport error, timeout or abort) fails; NCCL_IB_DISABLE=1 or
NCCL_NET=Socket on a launch line (mpirun -x, srun --export, export) or in
NCCL's "set by environment" lines fails unless --allow-socket. Output that
names no hosts needs --nodes N (and --ranks-per-node) to judge busbw.
It also reads ncclras reports (text and -f json): missing or dead ranks fail,
a collective-count MISMATCH in one report is a lagging rank, not yet a hang.
With --snapshot a suspect rank is followed to its GPU's rail NIC and port,
with --fabric to the port's cable, with --routes to the links its traffic
crosses; the finding offers the bench command that retests that rail.

Exit codes: 0 proven healthy, 1 a failure, 2 could not read a file or a bad
flag, 3 unproven (e.g. busbw with no hosts and no --nodes, or no --expect-rate).`,
		Example: `  rdmalab nccl judge all_reduce.log
  rdmalab nccl judge run.log --expect-rate "4X NDR" --rails 8 --algo Ring
  rdmalab nccl judge rank0.log -o json
  rdmalab nccl judge ras.txt --snapshot node1=node1.json --fabric fabric.json --routes lfts.dump --cluster cluster.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := nf.options()
			if err != nil {
				return err
			}
			if opt.RAS, err = rasOptions(snapshots, cluster, fabric, routes); err != nil {
				return err
			}
			inputs, err := readInputs(cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			var fs []check.Finding
			var payloads []any
			q := rules.NCCLRAS // until a file is other than an ncclras report
			for _, in := range inputs {
				f, p, err := nccl.JudgeFile(in.Name, in.Data, opt)
				if err != nil {
					return usageErr("%v", err)
				}
				if _, ras := p.(*nccl.RASReport); !ras {
					q = rules.NCCL
				}
				fs, payloads = append(fs, f...), append(payloads, p)
			}
			return writeJudged(cmd, output, q, fs, payloads)
		},
	}
	outputFlag(c.Flags(), &output, "table or json")
	nf.register(c)
	registerRASPath(c.Flags(), &snapshots, &cluster, &fabric, &routes)
	return c
}

// writeJudged renders nccl's findings and verdict and returns the exit
// the verdict maps to.
func writeJudged(cmd *cobra.Command, output format, q rules.Question, fs []check.Finding, payload any) error {
	w := cmd.OutOrStdout()
	return output.judged(w, envelope.NCCL, rules.Verdict(q, fs), fs, payload, func() {
		check.Sort(fs)
		report.Findings(w, fs, true)
	})
}

func newNCCLRunCmd() *cobra.Command {
	var o struct {
		cluster, results, dir         string
		output                        format
		nodes                         []int
		tests, testArgs, mpiArgs, env []string
		ranks                         int
		resume, overwrite             bool
		timeout                       time.Duration
		rails                         int
	}
	var in hostInput
	c := &cobra.Command{
		Use:   "run --cluster FILE",
		Short: "Run nccl-tests on 2, 4, 8 … nodes through mpirun and judge every run",
		Long: `run launches nccl-tests (all_reduce_perf by default; repeat --test for the
other collectives) on the first 2, 4, 8 … nodes of the cluster file and on the
whole cluster, one run at a time, through the cluster file's launcher: with
ssh (the default) Open MPI's mpirun with a hostfile and the cluster file's ssh
settings (key, known_hosts, port); with srun, inside an allocation, one srun
step holding every rank. Before anything runs every node is probed as bench
probes it (reachable, the nccl-tests binaries there): a node that is not ready
is exit 2, named with why. Every rank gets
NCCL_ALGO=Ring (busbw then measures the network) and NCCL_DEBUG=INFO, plus the
environment from 'nccl env' when --snapshot is given. Each run has a timeout
that kills the whole launch and, on every node, the rank itself; a hung run is
recorded with the nodes that never finished NCCL init, and the next run goes
on. Every finished run is appended and synced to --results (a header bound to
the cluster, then one JSON line a run), which is never truncated: --resume
continues it (running only what it lacks, and what failed), --overwrite
replaces it; one run writes it at a time. Raw logs go to --dir.
busbw is judged against the cluster file's link (rate, layer, MTU) times
--rails.

Exit codes: 0 every run proven, 1 a run failed or was judged failing, 2 could
not run, 3 unproven (a run's bandwidth or transport could not be judged), 130
interrupted.`,
		Example: `  rdmalab nccl run --cluster cluster.yaml --gpus-per-node 8 --rails 8 \
      --snapshot node1.json --test all_reduce_perf --test all_gather_perf
  rdmalab nccl run --cluster cluster.yaml --node-counts 2 --timeout 5m --test-arg=-b --test-arg=1G`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.cluster == "" {
				return usageErr("--cluster FILE is required (the cluster file of rdmalab bench)")
			}
			mode, err := resultslog.ModeOf(o.resume, o.overwrite)
			if err != nil {
				return usageErr("%v", err)
			}
			cl, err := cluster.Load(o.cluster)
			if err != nil {
				return usageErr("cluster %v", err)
			}
			var vars []nccl.Var
			judge := nccl.JudgeOptions{NIC: cl.Resolved(), RailsPerNode: o.rails, NICSource: "cluster file " + o.cluster}
			if len(in.snapshots) > 0 {
				hosts, err := in.load()
				if err != nil {
					return err
				}
				env, _ := nccl.MakeEnv(hosts)
				vars = env.Common
				var rails int
				judge.GDRExpected, rails = env.Expectations()
				if !cmd.Flags().Changed("rails") && rails > 0 {
					judge.RailsPerNode = rails
					judge.NICSource += fmt.Sprintf(", %d rails from the snapshots", rails)
				}
				if len(env.Differ) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "rdmalab: %s differ between the snapshots and are not passed (see rdmalab nccl env)\n", strings.Join(env.Differ, ", "))
				}
			}
			for _, kv := range o.env {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErr("--env %q: want NAME=VALUE", kv)
				}
				vars = append(vars, nccl.Var{Name: k, Value: v, Reason: "--env"})
			}
			control, cleanup, err := tempDir()
			if err != nil {
				return err
			}
			defer cleanup()
			// The cluster file's launcher: ssh (mpirun over ssh) or srun.
			nodes := launch.For(cl, launch.Setup{ControlDir: control, ConnectTimeout: 5 * time.Second, JobArgs: o.mpiArgs})
			// Bench's preflight before any size runs: a node ssh cannot
			// reach, or without the nccl-tests binaries, is exit 2 naming
			// it and why, not every size failing. The probes' control
			// connections are their own, ended before mpirun opens its
			// sessions.
			tests := o.tests
			if len(tests) == 0 {
				tests = []string{"all_reduce_perf"}
			}
			probeDir, probeCleanup, err := tempDir()
			if err != nil {
				return err
			}
			probe := launch.For(cl, launch.Setup{ControlDir: probeDir, ConnectTimeout: 5 * time.Second})
			unready := launch.Preflight(cmd.Context(), probe, cl.Nodes, func(cluster.Node) []string { return tests }, 15*time.Second)
			probe.Close() // ends the probes' masters before mpirun's ssh starts
			probeCleanup()
			if len(unready) > 0 {
				var lines []string
				for _, n := range cl.Nodes {
					if why, ok := unready[n.Name]; ok {
						lines = append(lines, n.Name+": "+why)
					}
				}
				nodes.Close()
				return usageErr("%d of %d node(s) not ready, nothing was run:\n  %s", len(unready), len(cl.Nodes), strings.Join(lines, "\n  "))
			}
			l, err := launch.JobFor(cl, nodes, launch.Setup{JobArgs: o.mpiArgs})
			if err != nil {
				return usageErr("%v", err)
			}
			defer l.Close()
			dir := o.dir
			if dir == "" {
				dir = "nccl-runs-" + time.Now().Format("20060102-150405")
			}
			results := o.results
			if results == "" {
				results = filepath.Join(dir, "results.jsonl")
			}
			ctx := cmd.Context()
			saved := sayOnStop("the runs finished are saved in %[1]s: run the same command with --results %[1]s --resume to run the rest", userfile.Name(results))
			rs, err := ncclrun.Run(ctx, ncclrun.RunOptions{Cluster: cl, NodeCounts: o.nodes, Tests: o.tests, TestArgs: o.testArgs,
				RanksPerNode: o.ranks, Env: vars, Timeout: o.timeout, Dir: dir, Launcher: l, Progress: cmd.ErrOrStderr(),
				Results: results, ClusterFile: o.cluster, Mode: mode, Judge: judge})
			if errors.Is(err, context.Canceled) {
				return &exitError{code: ExitInterrupted, err: errors.New("interrupted; " + saved)}
			}
			if err != nil {
				return usageErr("%v", err)
			}
			var fs []check.Finding
			for _, r := range rs {
				fs = append(fs, r.Findings...)
			}
			return writeJudged(cmd, o.output, rules.NCCL, fs, rs)
		},
	}
	f := c.Flags()
	f.StringVar(&o.cluster, "cluster", "", "cluster file (the format of rdmalab bench, docs/cluster.md)")
	f.IntSliceVar(&o.nodes, "node-counts", nil, "cluster sizes to run, in nodes, in order (default 2,4,8,… and all nodes)")
	alias(f, "node-counts", "nodes")
	f.StringArrayVar(&o.tests, "test", nil, "nccl-tests binary on the nodes, repeatable (default all_reduce_perf)")
	f.StringArrayVar(&o.testArgs, "test-arg", nil, "argument for the nccl-tests binary, repeatable (default -b 8 -e 8G -f 2 -g 1)")
	f.StringArrayVar(&o.mpiArgs, "mpi-arg", nil, "extra mpirun (or, with launcher srun, srun) argument, repeatable (e.g. --mpi-arg=--mca --mpi-arg=oob_tcp_if_include --mpi-arg=eno1, or --mpi-arg=--mpi=pmix)")
	f.StringArrayVar(&o.env, "env", nil, "NAME=VALUE for every rank, repeatable (after the --snapshot environment)")
	f.IntVar(&o.ranks, "gpus-per-node", 1, "ranks per node (one per GPU, nccl-tests -g 1)")
	f.IntVar(&o.rails, "rails", 1, "NICs per node for the busbw expectation (default: the snapshots' rail count, else 1)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "per run; the whole launch and every rank are killed after it")
	f.StringVar(&o.results, "results", "", "results log (JSON lines), appended and synced as runs finish (default DIR/results.jsonl)")
	f.BoolVar(&o.resume, "resume", false, "continue --results: run only what it lacks (and what failed or timed out)")
	f.BoolVar(&o.overwrite, "overwrite", false, "replace an earlier results log at --results")
	f.StringVar(&o.dir, "dir", "", "directory the raw logs go into (default nccl-runs-<time>)")
	outputFlag(f, &o.output, "table or json")
	f.StringArrayVar(&in.snapshots, "snapshot", nil, "host snapshot(s) of the nodes (example:NAME for a built-in one): every rank gets the environment 'nccl env' derives")
	return c
}

func newNCCLRASCmd() *cobra.Command {
	var o struct {
		host, cluster, fabric, routes string
		output                        format
		port, polls                   int
		interval, timeout             time.Duration
		snapshots                     []string
	}
	c := &cobra.Command{
		Use:   "ras --host HOST",
		Short: "Poll a running NCCL job's RAS service: dead ranks, and a hang told from a straggler",
		Long: `ras polls the RAS service every NCCL ≥ 2.24 process runs (NCCL_RAS_ADDR,
localhost:28028 by default: run it on a node of the job, or set NCCL_RAS_ADDR
to listen beyond localhost) with NCCL's own client protocol, --polls times,
--interval apart, each poll bounded by --timeout. It asks for the JSON report
(NCCL ≥ 2.28.7: every rank's collective counts) and falls back to the verbose
text report. Missing or dead ranks fail, naming rank, host, PID and GPU. A rank
behind the others (a MISMATCH in collective counts) is judged across the polls:
frozen at the same count in every poll is a hang ("rank 7 on host node1 stuck
at AllReduce #60 while others reached #64 for 3 polls"), behind but moving a
straggler, behind in one poll only launch skew. With --snapshot (a node's
host snapshot) the suspect rank is followed to its GPU, that GPU's rail NIC and
port, with --fabric to the port's cable, with --routes (the fabric's
forwarding tables) to the links its traffic crosses, and the finding offers
the bench command that retests that rail against known-good partners.

Exit codes: 0 every rank alive and progressing, 1 a dead or missing rank or a
hang, 2 could not run (bad flag, or no poll answered), 3 unproven (no
communicator data), 130 interrupted.`,
		Example: `  rdmalab nccl ras --host node1
  rdmalab nccl ras --host 10.0.0.5 --port 28028 --interval 10s --polls 6 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.host == "" {
				return usageErr("--host HOST is required (a node of the NCCL job whose RAS port is reachable)")
			}
			paths, err := rasOptions(o.snapshots, o.cluster, o.fabric, o.routes)
			if err != nil {
				return err
			}
			addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
			polls, err := ncclrun.PollRAS(cmd.Context(), ncclrun.PollOptions{Addr: addr, Interval: o.interval, Polls: o.polls, Timeout: o.timeout, Progress: cmd.ErrOrStderr()})
			if errors.Is(err, context.Canceled) {
				return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted after %d poll(s) of %s", len(polls), addr)}
			}
			fs := nccl.JudgeRASPolls("RAS at "+addr, polls, paths)
			if fs == nil {
				first := ""
				if len(polls) > 0 {
					first = polls[0].Err
				}
				return usageErr("no RAS report from %s in %d poll(s): %s (is an NCCL ≥ 2.24 job running there with NCCL_RAS_ENABLE=1, and NCCL_RAS_ADDR listening where this host reaches it?)", addr, len(polls), first)
			}
			return writeJudged(cmd, o.output, rules.NCCLRAS, fs, polls)
		},
	}
	f := c.Flags()
	f.StringVar(&o.host, "host", "", "a node of the job (its RAS client socket)")
	f.IntVar(&o.port, "port", ncclrun.DefaultRASPort, "the RAS client port (NCCL_RAS_ADDR's)")
	f.IntVar(&o.polls, "polls", 3, "how many reports to take (a hang needs 2 or more)")
	f.DurationVar(&o.interval, "interval", 5*time.Second, "between the starts of two polls")
	f.DurationVar(&o.timeout, "timeout", 15*time.Second, "per poll: connect, handshake and report (RAS gathers for up to 5 s)")
	registerRASPath(f, &o.snapshots, &o.cluster, &o.fabric, &o.routes)
	outputFlag(f, &o.output, "table or json")
	return c
}

// registerRASPath adds the flags that follow a suspect rank to its rail,
// the rail's cable and routes (nccl ras and nccl judge).
func registerRASPath(f *pflag.FlagSet, snapshots *[]string, cluster, fabric, routes *string) {
	f.StringArrayVar(snapshots, "snapshot", nil, "host snapshot of a node of the job, NAME=FILE to bind it to the name RAS prints (an address), or FILE (matched by hostname or RoCE GID address); repeatable: a suspect rank is followed to its GPU's rail NIC and port")
	f.StringVar(cluster, "cluster", "", "the cluster file the follow-up bench command names")
	f.StringVar(fabric, "fabric", "", "fabric snapshot (rdmalab fabric scan -o json, example:NAME): the suspect rail's cable to its switch, by the NIC's node GUID")
	f.StringVar(routes, "routes", "", "with --fabric, its forwarding tables (dump_fts or ibroute output, opensm-lfts.dump): the links the rail's traffic crosses to its partners, and partners whose routes cross them")
}

// rasOptions reads the flags that follow a suspect rank: --snapshot
// values (NAME=FILE binds a snapshot to a host as RAS prints it, FILE is
// matched by hostname), --fabric and its --routes.
func rasOptions(values []string, clusterFile, fabricFile, routesFile string) (*nccl.RASOptions, error) {
	o := &nccl.RASOptions{Hosts: map[string]*host.Snapshot{}, Cluster: clusterFile}
	if routesFile != "" && fabricFile == "" {
		return nil, usageErr("--routes %s needs --fabric (the cabling its tables route over)", userfile.Name(routesFile))
	}
	if fabricFile != "" {
		var err error
		if o.Fabric, err = intake.Fabric(fabricFile); err != nil {
			return nil, usageErr("--fabric %v", err)
		}
	}
	if routesFile != "" {
		fd, err := userfile.Open(routesFile, userfile.Routes)
		if err != nil {
			return nil, usageErr("--routes %v", err)
		}
		defer fd.Close()
		if o.Routes, err = route.ParseLFTs(fd); err != nil {
			return nil, usageErr("--routes %s: %v", userfile.Name(routesFile), err)
		}
		if len(o.Routes) == 0 {
			return nil, usageErr("--routes %s: no forwarding table in it (want dump_fts, ibroute or opensm-lfts.dump output)", userfile.Name(routesFile))
		}
		o.RoutesSource = routesFile
	}
	for _, v := range values {
		name, path, bound := strings.Cut(v, "=")
		if !bound {
			path = v
		}
		s, err := intake.Host(path)
		if err != nil {
			return nil, usageErr("--snapshot %v", err)
		}
		if bound {
			o.Hosts[name] = s
		} else {
			o.Snapshots = append(o.Snapshots, s)
		}
	}
	return o, nil
}

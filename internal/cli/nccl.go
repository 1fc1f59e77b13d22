package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/resultslog"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newNCCLCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "nccl",
		Short: "Prove the GPU data path: NCCL environment, nccl-tests runs, NCCL_DEBUG judgement",
		Long: `nccl predicts from host snapshots what NCCL will do (rail NIC per GPU, path
level, GPUDirect RDMA, RoCE GID index, bootstrap interface) and writes the
environment that makes it so (env); runs nccl-tests on 2, 4, 8 … nodes of a
cluster file through Open MPI's mpirun and judges every run (run); and judges
saved nccl-tests output and NCCL_DEBUG logs (judge). docs/nccl.md walks
through seed 001's bring-up with these commands.`,
		Example: `  rdmalab nccl env --snapshot example:hgx-h200
  rdmalab nccl run --cluster cluster.yaml --gpus-per-node 8 --rails 8 --snapshot node1.json
  rdmalab nccl judge all_reduce.log --expect-rate "4X NDR" --rails 8 --algo Ring`,
	}
	c.AddCommand(newNCCLEnvCmd(), newNCCLJudgeCmd(), newNCCLRunCmd())
	return c
}

func newNCCLEnvCmd() *cobra.Command {
	var in hostInput
	var output string
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

Exit codes: 0 nothing failed, 1 a failure (no rail near any GPU), 2 could not run.`,
		Example: `  rdmalab nccl env
  rdmalab nccl env --snapshot example:hgx-h200
  rdmalab nccl env --snapshot node1.json --snapshot node2.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			hosts, err := in.load()
			if err != nil {
				return err
			}
			env, fs := nccl.MakeEnv(hosts)
			w := cmd.OutOrStdout()
			if output == "json" {
				err = envelope.Write(w, envelope.NCCL, fs, env)
			} else {
				err = nccl.WriteEnv(w, env)
				if err == nil && len(fs) > 0 {
					fmt.Fprintln(w)
					report.Findings(w, fs, true)
				}
			}
			if err != nil {
				return err
			}
			if check.Failed(fs) {
				return errFindings
			}
			return nil
		},
	}
	in.register(c, true)
	c.Flags().StringVarP(&output, "output", "o", "table", "table (shell exports) or json")
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
}

func (n *nicFlags) options() (nccl.JudgeOptions, error) {
	opt := nccl.JudgeOptions{RailsPerNode: n.rails, Algo: n.algo, AllowSocket: n.socket}
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
	var output string
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
NCCL versions, and hosts that took part but did not log.

Exit codes: 0 nothing failed, 1 a failure, 2 could not read a file.`,
		Example: `  rdmalab nccl judge all_reduce.log
  rdmalab nccl judge run.log --expect-rate "4X NDR" --rails 8 --algo Ring
  rdmalab nccl judge rank0.log -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			opt, err := nf.options()
			if err != nil {
				return err
			}
			inputs, err := readInputs(cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			var fs []check.Finding
			var payloads []any
			for _, in := range inputs {
				f, p, err := nccl.JudgeFile(in.Name, in.Data, opt)
				if err != nil {
					return usageErr("%v", err)
				}
				fs, payloads = append(fs, f...), append(payloads, p)
			}
			return writeJudged(cmd, output, rules.NCCL, fs, payloads)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	nf.register(c)
	return c
}

// writeJudged renders nccl's findings and verdict and returns the exit
// the verdict maps to.
func writeJudged(cmd *cobra.Command, output string, q rules.Question, fs []check.Finding, payload any) error {
	w := cmd.OutOrStdout()
	v := rules.Verdict(q, fs)
	if output == "json" {
		if err := envelope.WriteJudged(w, envelope.NCCL, v, fs, payload); err != nil {
			return err
		}
	} else {
		check.Sort(fs)
		report.Findings(w, fs, true)
		report.VerdictLine(w, v)
	}
	return verdictErr(v)
}

func newNCCLRunCmd() *cobra.Command {
	var o struct {
		cluster, results, dir, output string
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
whole cluster, one run at a time, through Open MPI's mpirun with a hostfile and
the cluster file's ssh settings (key, known_hosts, port). Every rank gets
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

Exit codes: 0 nothing failed, 1 a run failed or was judged failing, 2 could not
run, 130 interrupted.`,
		Example: `  rdmalab nccl run --cluster cluster.yaml --gpus-per-node 8 --rails 8 \
      --snapshot node1.json --test all_reduce_perf --test all_gather_perf
  rdmalab nccl run --cluster cluster.yaml --nodes 2 --timeout 5m --test-arg=-b --test-arg=1G`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
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
			judge := nccl.JudgeOptions{NIC: cl.Link.Resolved(), RailsPerNode: o.rails, NICSource: "cluster file " + o.cluster}
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
			ssh := &launch.SSH{Options: cl.Launcher.Options, KnownHosts: cl.Launcher.KnownHosts, ControlDir: control}
			l, err := launch.NewMPIRun(cl, ssh, o.mpiArgs)
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
			rs, err := nccl.Run(ctx, nccl.RunOptions{Cluster: cl, NodeCounts: o.nodes, Tests: o.tests, TestArgs: o.testArgs,
				RanksPerNode: o.ranks, Env: vars, Timeout: o.timeout, Dir: dir, Launcher: l, Progress: cmd.ErrOrStderr(),
				Results: results, ClusterFile: o.cluster, Mode: mode, Judge: judge})
			if errors.Is(err, context.Canceled) {
				return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted; the runs finished are saved in %[1]s: run the same command with --results %[1]s --resume to run the rest", userfile.Name(results))}
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
	f.IntSliceVar(&o.nodes, "nodes", nil, "cluster sizes to run, in order (default 2,4,8,… and all nodes)")
	f.StringArrayVar(&o.tests, "test", nil, "nccl-tests binary on the nodes, repeatable (default all_reduce_perf)")
	f.StringArrayVar(&o.testArgs, "test-arg", nil, "argument for the nccl-tests binary, repeatable (default -b 8 -e 8G -f 2 -g 1)")
	f.StringArrayVar(&o.mpiArgs, "mpi-arg", nil, "extra mpirun argument, repeatable (e.g. --mpi-arg=--mca --mpi-arg=oob_tcp_if_include --mpi-arg=eno1)")
	f.StringArrayVar(&o.env, "env", nil, "NAME=VALUE for every rank, repeatable (after the --snapshot environment)")
	f.IntVar(&o.ranks, "gpus-per-node", 1, "ranks per node (one per GPU, nccl-tests -g 1)")
	f.IntVar(&o.rails, "rails", 1, "NICs per node for the busbw expectation (default: the snapshots' rail count, else 1)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "per run; the whole launch and every rank are killed after it")
	f.StringVar(&o.results, "results", "", "results log (JSON lines), appended and synced as runs finish (default DIR/results.jsonl)")
	f.BoolVar(&o.resume, "resume", false, "continue --results: run only what it lacks (and what failed or timed out)")
	f.BoolVar(&o.overwrite, "overwrite", false, "replace an earlier results log at --results")
	f.StringVar(&o.dir, "dir", "", "where raw logs go (default nccl-runs-<time>)")
	f.StringVarP(&o.output, "output", "o", "table", "table or json")
	f.StringArrayVar(&in.snapshots, "snapshot", nil, "host snapshot(s) of the nodes (example:NAME for a built-in one): every rank gets the environment 'nccl env' derives")
	return c
}

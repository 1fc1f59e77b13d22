package cli

import (
	"context"
	"errors"
	"time"

	"github.com/rdmalab/rdmalab/internal/benchrun"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	var o benchrun.Options
	var output format
	var fabricCA string
	var hostArgs, oldHostArgs, tests []string
	var fabricPort int
	var dryRun bool
	c := &cobra.Command{
		Use:   "bench",
		Short: "Pairwise benchmarks across a cluster, both directions, judged against the link and the peers",
		Long: `bench measures both directions of pairs of nodes of a cluster file
(docs/cluster-file.md), N/2 pairs at once per round, --samples times each. Up to
16 nodes it measures every pair, in N−1 rounds (N odd: N; --schedule circle);
beyond, 3 rounds of perfect matchings (--schedule matching: every node meets 3
partners from the whole cluster, both ways), then suspects are re-paired with
known-good partners in 2 rounds more: a 2,048-node fleet in 5 rounds instead of
2,047. The schedule, its rounds and why are printed before round 1;
--dry-run prints the plan (rounds, wall time, memory) and measures nothing.
It judges every direction against what the
link can carry (when the cluster file declares a rate; PCIe-capped when it
gives the NICs' slots) and against the median of its link class. A node whose
send or receive side fails most of its directions is named with that side and
retested against two partners healthy both ways.

Before round 1 every node is probed at once (reachable, host key known, the
engine's binary, device and port present); unready nodes stop the run (exit 2)
unless --without-unready. Each test has its own --timeout that kills both ends
(the remote process group, over the ssh control connection, and a deadline on
the node as a backstop); a node that stops answering, or times out with two
partners, is taken out of later rounds and its pairs recorded as not measured.
With the tcp engine a round starts one session per node, an agent that runs
all of the node's samples of the round (--agent=false: a server and a client
process per sample, as the perftest engine always runs).

Every finished direction is appended and synced to --results at once. A
results file is never truncated: --resume continues it (re-measuring failed
pairs unless --keep-failed), --overwrite replaces it; it is bound to the
cluster's nodes, and resuming with other nodes is refused.

Inside a Slurm allocation (salloc, sbatch) --cluster may be left out: the
nodes are SLURM_JOB_NODELIST's, each reached at its NodeAddr (or --data
NODE=ADDR), and every process is a one-task srun step pinned to its node
(--nodelist, --overlap), killed through srun on timeout (docs/slurm.md).

--schedule cover replaces the circle method with rounds planned from the
fabric's real routes (the live fabric read from this node, or --fabric and
--routes files, as 'bench schedule' reads them) that together cross every
link host traffic reaches (on a fat tree one or two rounds). Each CA port is
the cluster node named by the first word of its description. When directions
are slow, up to 3 follow-up rounds the localiser chooses split the suspects,
and the finding names the cable by both ends (switch GUID, name and port), or
the node whose HCA or cable is slow with every partner, with the pairs that
crossed it slow and at speed and how sure (docs/schedule.md).

Exit codes: 0 every direction proven, 1 a node, pair or direction failed, 2
could not run (bad flag or file, unready nodes), 3 unproven (nothing failed, but
a direction could not be judged: no rate declared and too few peers, or the
measurements overrule the declared rate), 130 interrupted (finished work is
saved).`,
		Example: `  rdmalab bench --cluster cluster.yaml --engine perftest --test ib_write_bw
  rdmalab bench --cluster cluster.yaml --expect-rate "4X HDR" --samples 3
  rdmalab bench --cluster cluster.yaml --test ib_write_bw --use-cuda   # GPUDirect RDMA: GPU vs host memory
  rdmalab bench --cluster cluster.yaml --engine tcp --results run1.jsonl
  rdmalab bench --cluster cluster.yaml --engine tcp --results run1.jsonl --resume
  rdmalab bench --cluster cluster.yaml --without-unready --output json
  salloc -N 8 rdmalab bench --engine tcp             # the allocation's nodes, through srun
  rdmalab bench --cluster cluster.yaml --schedule cover         # cover rounds from the live fabric's routes; name the slow cable
  rdmalab bench --cluster cluster.yaml --schedule cover --fabric fabric.json --routes opensm-lfts.dump
  rdmalab bench --cluster fleet.yaml --dry-run                   # rounds, wall time and memory before touching the fleet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(tests) > 1 {
				return usageErr("--test: a bench run measures one test (got %d); run bench once per test", len(tests))
			}
			if len(tests) == 1 {
				o.Test = tests[0]
			}
			for _, h := range append(hostArgs, oldHostArgs...) {
				s, err := intake.Host(h)
				if err != nil {
					return usageErr("--snapshot %v", err)
				}
				o.Hosts = append(o.Hosts, s)
			}
			dir, cleanup, err := tempDir()
			if err != nil {
				return err
			}
			defer cleanup()
			o.ControlDir, o.Progress = dir, cmd.ErrOrStderr()
			o.Fabric.Runner = fabric.Exec{CA: fabricCA, Port: fabricPort, Timeout: 2 * time.Minute}
			ctx := cmd.Context()
			if dryRun {
				d, err := benchrun.PlanRun(ctx, o)
				if err != nil {
					return usageErr("%v", err)
				}
				return output.write(cmd.OutOrStdout(), envelope.BenchPlan, nil, d, func() error { return d.Write(cmd.OutOrStdout()) })
			}
			saved := sayOnStop("the directions finished are saved in %s: run the same command with --resume to measure the rest", userfile.Name(o.Results))
			rep, err := benchrun.Run(ctx, o)
			if ctx.Err() != nil {
				// No report: the verdict of a run cut short would judge
				// what it did not measure. The log holds what it did.
				if rep == nil {
					return &exitError{code: ExitInterrupted, err: errors.New("interrupted before round 1; nothing was measured")}
				}
				return &exitError{code: ExitInterrupted, err: errors.New("interrupted; " + saved)}
			}
			if err != nil {
				return usageErr("%v", err)
			}
			v := rules.Verdict(rules.Bench, rep.Findings)
			w := cmd.OutOrStdout()
			return output.judged(w, envelope.Bench, v, rep.Findings, rep, func() { report.Bench(w, rep) })
		},
	}
	f := c.Flags()
	f.StringVar(&o.ClusterFile, "cluster", "", "cluster file (YAML, see docs/cluster-file.md); inside a Slurm allocation, without it: the job's nodes, launched with srun")
	f.StringToStringVar(&o.DataAddrs, "data", nil, "inside a Slurm allocation: a node's data-plane address instead of its NodeAddr, NODE=ADDR (repeatable)")
	f.StringVar(&o.Engine, "engine", "perftest", "perftest or tcp")
	// Repeatable in nccl run; a bench run measures one test.
	f.StringArrayVar(&tests, "test", nil, "the one test to run: perftest: ib_write_bw (default), ib_read_bw, ib_send_bw, ib_atomic_bw, ib_*_lat; tcp: bw (default) or lat")
	f.IntVar(&o.Seconds, "seconds", 5, "seconds per bandwidth sample")
	f.IntVar(&o.Samples, "samples", 3, "samples per direction; verdicts use their median, the spread is kept")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "per sample; both ends are killed after it")
	f.StringVar(&o.Rate, "expect-rate", "", "link rate, overriding the cluster file: 200, \"4X HDR\", 25GbE")
	f.StringVar(&o.Layer, "expect-link-layer", "", "link layer, overriding the cluster file: InfiniBand (IB), RoCE (Ethernet), TCP")
	alias(f, "expect-rate", "rate")
	alias(f, "expect-link-layer", "layer")
	f.StringVar(&o.Results, "results", "bench-results.jsonl", "results log (JSON lines), appended and synced as directions finish")
	f.BoolVar(&o.Resume, "resume", false, "continue --results: measure only what it lacks (and what failed)")
	f.BoolVar(&o.Overwrite, "overwrite", false, "replace an earlier results log at --results")
	f.BoolVar(&o.KeepFailed, "keep-failed", false, "with --resume: do not measure failed or timed-out pairs again")
	f.BoolVar(&o.WithoutUnready, "without-unready", false, "run without the nodes preflight finds unready (their pairs are recorded as not measured)")
	f.BoolVar(&o.NoRetest, "no-retest", false, "do not retest suspects against known-good nodes")
	f.StringArrayVar(&o.PerftestArgs, "perftest-arg", nil, "extra perftest argument, repeatable: -s 65536, -q 4, --use_cuda=0 (GPUDirect)")
	f.StringVar(&o.Rdmalab, "rdmalab", "", "rdmalab binary on the nodes (tcp engine; default: launcher.rdmalab, else this binary)")
	f.BoolVar(&o.UseCUDA, "use-cuda", false, "measure every pair again with perftest's buffers in GPU memory (--use_cuda=<node's cuda_gpu>) and judge GPU against host memory: GPUDirect RDMA proven or not")
	f.StringVar(&o.Rounds, "rounds", "", "measure the pairs of this round file (SuperBench's or ClusterKit's) instead of every pair")
	roundsFormatFlag(f, &o.RoundsFormat)
	f.StringVar(&o.Schedule, "schedule", "", "matching (3 perfect matchings, then suspects' retests), circle (every pair) or cover (rounds from the fabric's routes that cross every link, then the localiser's follow-ups); default: circle up to 16 nodes, matching beyond")
	f.StringVar(&o.Fabric.FabricFile, "fabric", "", "--schedule cover: cabling, ibnetdiscover output or a fabric snapshot (default: scan the live fabric)")
	f.StringVar(&o.Fabric.RoutesFile, "routes", "", "--schedule cover: forwarding tables, dump_fts/ibroute output or opensm-lfts.dump (default: run dump_fts)")
	f.StringVar(&fabricCA, "ca", "", "--schedule cover: local HCA to read the live fabric from, e.g. mlx5_0")
	f.StringArrayVar(&hostArgs, "snapshot", nil, "--schedule cover: the nodes' host snapshots, trees or captures (repeatable): a named cable carries its ports' PHY facts from them (docs/phy.md), else says no PHY evidence")
	// The old spelling split on commas; it keeps doing so.
	f.StringSliceVar(&oldHostArgs, "hosts", nil, "old spelling of --snapshot")
	f.Lookup("hosts").Hidden = true
	f.IntVar(&fabricPort, "port", 0, "port of --ca")
	outputFlag(f, &output, "table or json")
	f.BoolVar(&o.Agent, "agent", true, "tcp engine: one session per node per round, an agent running all of the node's samples (--agent=false: a server and a client process per sample, as perftest runs)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan (each schedule's rounds, pairs per round, expected wall time and the orchestrator's peak memory) and start nothing")
	c.AddCommand(newBenchAgentCmd(), newBenchScheduleCmd())
	return c
}

// newBenchAgentCmd is what bench starts on the nodes for the tcp engine.
func newBenchAgentCmd() *cobra.Command {
	c := &cobra.Command{Use: "agent", Short: "The tcp engine's ends, started on the nodes by 'rdmalab bench'", Hidden: true}
	var listen, connect, test string
	var timeout time.Duration
	var seconds float64
	srv := &cobra.Command{
		Use: "tcp-server", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := benchrun.ServeTCP(ctx, listen, cmd.OutOrStdout()); err != nil {
				return usageErr("%v", err)
			}
			return nil
		},
	}
	srv.Flags().StringVar(&listen, "listen", "", "address:port")
	srv.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after")
	cli := &cobra.Command{
		Use: "tcp-client", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := benchrun.ClientTCP(cmd.Context(), connect, test, seconds, 10000, cmd.OutOrStdout()); err != nil {
				return usageErr("%v", err)
			}
			return nil
		},
	}
	cli.Flags().StringVar(&connect, "connect", "", "address:port")
	cli.Flags().StringVar(&test, "test", "bw", "bw or lat")
	cli.Flags().Float64Var(&seconds, "seconds", 2, "seconds to send (bw)")
	// One session per node per round (bench --agent): the node's steps on
	// stdin, one JSON line each; the answers on stdout.
	session := &cobra.Command{
		Use: "session", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := benchrun.RunAgent(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				return usageErr("%v", err)
			}
			return nil
		},
	}
	c.AddCommand(srv, cli, session)
	return c
}

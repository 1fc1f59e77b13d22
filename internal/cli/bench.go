package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	var clusterFile, engine, test, results, output, rdmalab string
	var seconds int
	var timeout time.Duration
	var resume, noRetest bool
	var perftestArgs []string
	c := &cobra.Command{
		Use:   "bench",
		Short: "Pairwise benchmarks across a cluster, in parallel rounds, judged against each link",
		Long: `bench measures every pair of nodes of a cluster file once: N−1 rounds (N odd:
N rounds) of N/2 pairs running at the same time (the circle method). Each pair
has its own timeout that kills both ends and is recorded as timed out without
stopping the run. Every finished pair is appended at once to --results (JSON
lines), so an interrupted run loses nothing and --resume measures only what
is missing. Pairs below the healthy threshold are retested against a
known-good node to name the bad node.

Engines: perftest (ib_write_bw, ib_read_bw, ib_send_bw and the _lat tests, on
the nodes' device, port and GID index) and tcp, built in (rdmalab must be on
the nodes: launcher.rdmalab in the cluster file), for any network.
Each result reads "24.50 Gb/s = 98% of what 25GbE RoCE at MTU 4096 can carry:
healthy" (≥95% healthy, 80–95% degraded, below broken; see thresholds).

Exit codes: 0 all pairs healthy, 1 a pair is degraded, broken or failed, 2 could not run.`,
		Example: `  rdmalab bench --cluster cluster.yaml --engine perftest --test ib_write_bw
  rdmalab bench --cluster cluster.yaml --test ib_write_bw --perftest-arg=-q --perftest-arg=4 --perftest-arg=--use_cuda=0
  rdmalab bench --cluster cluster.yaml --engine tcp --results run1.jsonl
  rdmalab bench --cluster cluster.yaml --engine tcp --results run1.jsonl --resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if clusterFile == "" {
				return usageErr("--cluster FILE is required (see 'rdmalab bench --help')")
			}
			cl, err := bench.LoadCluster(clusterFile)
			if err != nil {
				return usageErr("%v", err)
			}
			switch engine {
			case "tcp":
				if test == "" {
					test = "bw"
				}
				if test != "bw" && test != "lat" {
					return usageErr("--test %q: the tcp engine runs bw or lat", test)
				}
			case "perftest":
				if test == "" {
					test = "ib_write_bw"
				}
			default:
				return usageErr("--engine %q: want perftest or tcp", engine)
			}
			var l bench.Launcher = bench.Local{}
			if cl.Launcher.Type == "ssh" {
				dir, cleanup, err := tempDir()
				if err != nil {
					return err
				}
				defer cleanup()
				ssh := bench.SSH{Options: cl.Launcher.Options, KnownHosts: cl.Launcher.KnownHosts, ControlDir: dir, RemoteTimeout: timeout}
				defer ssh.Close(cl.Nodes)
				l = ssh
			}
			bin := cl.Launcher.Rdmalab
			if rdmalab != "" {
				bin = rdmalab
			}
			if bin == "" {
				if bin, err = os.Executable(); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			r := &bench.Runner{Cluster: cl, Launcher: l, Rdmalab: bin, Options: bench.Options{
				Engine: engine, Test: test, Seconds: seconds, Timeout: timeout, Results: results,
				Resume: resume, Progress: cmd.ErrOrStderr(), Retest: !noRetest, PerftestArgs: perftestArgs,
			}}
			all, err := r.Run(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return &exitError{code: ExitUsage, err: fmt.Errorf("interrupted; finished pairs are in %s, run again with --resume", results)}
				}
				return usageErr("%v", err)
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(all); err != nil {
					return err
				}
			} else {
				var names []string
				for _, n := range cl.Nodes {
					names = append(names, n.Name)
				}
				report.Bench(w, names, all)
			}
			for _, res := range all {
				if !res.Retest && (res.Error != "" || (res.Verdict != "" && res.Verdict != bench.Healthy)) {
					return errFindings
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&clusterFile, "cluster", "", "cluster file (YAML): nodes, link, launcher, thresholds")
	f.StringVar(&engine, "engine", "perftest", "perftest or tcp")
	f.StringVar(&test, "test", "", "perftest: ib_write_bw (default), ib_read_bw, ib_send_bw, ib_write_lat, ...; tcp: bw (default) or lat")
	f.IntVar(&seconds, "seconds", 5, "seconds per bandwidth test")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "per pair; both ends are killed after it")
	f.StringVar(&results, "results", "bench-results.jsonl", "append every finished pair here (JSON lines)")
	f.BoolVar(&resume, "resume", false, "keep --results and measure only the pairs it lacks")
	f.BoolVar(&noRetest, "no-retest", false, "do not retest suspects against known-good nodes")
	f.StringArrayVar(&perftestArgs, "perftest-arg", nil, "extra perftest argument, repeatable: -s 65536, -a, -q 4, --use_cuda=0 (GPUDirect)")
	f.StringVar(&rdmalab, "rdmalab", "", "rdmalab binary on the nodes (tcp engine; default: launcher.rdmalab, else this binary)")
	f.StringVarP(&output, "output", "o", "table", "table or json")
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
			if err := bench.ServeTCP(ctx, listen, cmd.OutOrStdout()); err != nil {
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
			res, err := bench.RunTCPClient(cmd.Context(), connect, test, seconds, 10000)
			if err != nil {
				return usageErr("%v", err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	cli.Flags().StringVar(&connect, "connect", "", "address:port")
	cli.Flags().StringVar(&test, "test", "bw", "bw or lat")
	cli.Flags().Float64Var(&seconds, "seconds", 2, "seconds to send (bw)")
	c.AddCommand(srv, cli)
	return c
}

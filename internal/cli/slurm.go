package cli

import (
	"context"
	"os"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/slurm"
	"github.com/rdmalab/rdmalab/internal/slurmrun"
	"github.com/spf13/cobra"
)

func newSlurmCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "slurm",
		Short: "Work inside Slurm: a node health check that drains and resumes correctly",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErr("slurm needs a subcommand: rdmalab slurm health (see 'rdmalab slurm --help')")
		},
	}
	c.AddCommand(newSlurmHealthCmd())
	return c
}

func newSlurmHealthCmd() *cobra.Command {
	var in hostInput
	var node, rate, linkLayer string
	var limit, scontrolTimeout time.Duration
	var dryRun bool
	c := &cobra.Command{
		Use:   "health",
		Short: "Slurm HealthCheckProgram: run doctor's host rules, drain on failure, resume what rdmalab drained",
		Long: `health runs doctor's host rules on this node and tells Slurm:

  failures   drain the node with a reason that starts with "rdmalab:" and
             names the failing check and subject (sinfo -R shows it)
  healthy    resume the node only if rdmalab drained it; a node an admin or
             another tool drained stays drained, whatever rdmalab finds
  too slow   stop at --time-limit (before slurmd's own 60 s kill), drain
             with a reason naming the check that was running

The node is $SLURMD_NODENAME (slurmd sets it for HealthCheckProgram; on a
machine running several slurmd, the hostname would be wrong) or --node.
When slurmctld does not answer yet (the first run, before slurmd has
registered), nothing is changed and the exit code is 2.

slurm.conf:
  HealthCheckProgram=/usr/local/sbin/rdmalab-health
  HealthCheckInterval=300
  HealthCheckNodeState=ANY
with /usr/local/sbin/rdmalab-health:
  #!/bin/sh
  exec rdmalab slurm health --expect-rate 200 --expect-link-layer InfiniBand

Exit codes: 0 healthy, 1 failures found (drained), 2 could not run.`,
		Example: `  rdmalab slurm health --expect-rate 400
  rdmalab slurm health --node gpu017 --dry-run
  SLURMD_NODENAME=node2 rdmalab slurm health --root /captures/node2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node == "" {
				node = os.Getenv("SLURMD_NODENAME")
			}
			if node == "" {
				return usageErr("no node: set --node or run as Slurm's HealthCheckProgram (SLURMD_NODENAME)")
			}
			if limit <= 0 || scontrolTimeout <= 0 {
				return usageErr("--time-limit and --scontrol-timeout must be positive durations")
			}
			opt, err := expectFlags(rate, linkLayer)
			if err != nil {
				return err
			}
			// A health check runs where RDMA is meant to be: a node
			// without it fails, as with --nhc.
			opt.RequireRDMA = true
			checks := func(ctx context.Context, stage *slurmrun.Stage) []check.Finding {
				stage.Enter("inventory (reading the host's sysfs and procfs)")
				hosts, err := in.load()
				if err != nil {
					rep := slurm.ReadEntry.Reporter(node)
					rep.Fail("host", "%s", err)
					return rep.Findings()
				}
				opt.Progress = stage.Enter
				return hostcheck.Run(hosts[0], opt)
			}
			res, err := slurmrun.Health(cmd.Context(), slurmrun.Exec{Timeout: scontrolTimeout}, slurmrun.HealthOptions{Node: node, TimeLimit: limit, DryRun: dryRun}, checks)
			report.SlurmHealth(cmd.OutOrStdout(), res)
			if err != nil {
				return usageErr("%v", err)
			}
			if res.TimedOutIn != "" || check.Failed(res.Findings) {
				return errFindings
			}
			return nil
		},
	}
	in.register(c, false)
	f := c.Flags()
	f.StringVar(&node, "node", "", "the Slurm node name (default $SLURMD_NODENAME)")
	f.StringVar(&rate, "expect-rate", "", `rate every active RDMA port should run at: "200", "4X HDR", "25GbE"`)
	f.StringVar(&linkLayer, "expect-link-layer", "", "InfiniBand or Ethernet")
	f.DurationVar(&limit, "time-limit", 50*time.Second, "stop the checks after this long and drain naming the check that was running")
	f.DurationVar(&scontrolTimeout, "scontrol-timeout", 10*time.Second, "how long one scontrol call may take before slurmctld counts as not answering")
	f.BoolVar(&dryRun, "dry-run", false, "decide and print, but change nothing in Slurm")
	return c
}

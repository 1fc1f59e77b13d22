package cli

import (
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/schedule"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newBenchScheduleCmd is 'rdmalab bench schedule'.
func newBenchScheduleCmd() *cobra.Command {
	var in route.Input
	var output format
	var ca, roundsFile, roundsFormat string
	var byHost bool
	var port int
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "schedule",
		Short: "Plan benchmark rounds from the real routes: every link exercised in few rounds",
		Long: `schedule reads the fabric's cabling and its switches' forwarding tables, follows
every pair of host ports' route through them (the directed links each packet
crosses), and plans rounds of pairs (each node in at most one pair per round,
both directions measured) that together cross every link host traffic can
reach: on a fat tree one or two rounds, where the circle method (all pairs,
what ClusterKit FULL and SuperBench pair-wise run) takes N−1. It prints both
round counts, how many circle rounds pass before every link has carried
traffic, and the links no host-to-host route crosses (no benchmark between
hosts can test those; they are listed, not hidden). It does not run anything:
'rdmalab bench --schedule cover' plans, runs and names the slow cable in one
command.

Inputs, any of them from a file or the live fabric from this node:
  --fabric FILE   ibnetdiscover output (or an ibsim netlist), or a fabric
                  snapshot from 'rdmalab fabric scan --output json'
                  (default: scan the live fabric with infiniband-diags)
  --routes FILE   forwarding tables: dump_fts (dump_lfts) or ibroute output,
                  or OpenSM's opensm-lfts.dump (default: run dump_fts)
With an ibnetdiscover file the two are joined by node description, so
descriptions must be unique; a snapshot joins by GUID. docs/schedule.md
describes the formats and the JSON.

--rounds FILE writes the rounds as a round file for other tools
(--rounds-format clusterkit, the default, as bench --rounds reads it:
"<round> <node1> <node2>" lines; superbench: one line per round, "i,j;k,l"
host indices in node-name order). With --hostnames
the nodes are named by host, as a cluster file names them.

Exit codes: 0 planned, 1 host pairs without a route, 2 could not run.`,
		Example: `  rdmalab bench schedule                                   # the live fabric
  rdmalab bench schedule --fabric fabric.json --routes opensm-lfts.dump
  rdmalab bench schedule --fabric ibnetdiscover.txt --routes dump_fts.txt --output json
  rdmalab bench schedule --fabric fabric.json --routes lfts.txt --rounds cover.txt --rounds-format superbench
  rdmalab bench --cluster cluster.yaml --schedule cover --fabric fabric.json --routes lfts.txt   # plan, run, name the cable`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rf schedule.Format
			if roundsFile != "" {
				var err error
				if rf, err = schedule.ParseFormat(roundsFormat); err != nil {
					return usageErr("--rounds-format: %v", err)
				}
			}
			in.Runner = fabric.Exec{CA: ca, Port: port, Timeout: timeout}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			f, src, err := route.Load(ctx, in)
			if err != nil {
				return usageErr("%v", err)
			}
			res := schedule.Plan(f, src)
			if roundsFile != "" {
				rounds := res.Schedule
				if byHost {
					if rounds, err = rounds.ByHost(); err != nil {
						return usageErr("--hostnames: %v", err)
					}
				}
				if err := writeRoundFile(roundsFile, rounds, rf); err != nil {
					return usageErr("--rounds %v", err)
				}
			}
			fs := res.Findings()
			w := cmd.OutOrStdout()
			if err := output.write(w, envelope.Schedule, fs, res.Payload, func() error { return res.WriteTable(w) }); err != nil {
				return err
			}
			if check.Failed(fs) {
				return errFindings
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&in.FabricFile, "fabric", "", "cabling: ibnetdiscover output or a fabric snapshot (default: scan the live fabric)")
	fl.StringVar(&in.RoutesFile, "routes", "", "forwarding tables: dump_fts/ibroute output or opensm-lfts.dump (default: run dump_fts)")
	fl.StringVar(&roundsFile, "rounds", "", "also write the rounds to this round file")
	fl.BoolVar(&byHost, "hostnames", false, "name nodes in the round file by host (the first word of the CA's description, \"gpu017 mlx5_0\" → gpu017), as a cluster file names them")
	roundsFormatFlag(fl, &roundsFormat)
	alias(fl, "rounds-format", "format")
	fl.StringVar(&ca, "ca", "", "local HCA to read the live fabric from, e.g. mlx5_0")
	fl.IntVar(&port, "port", 0, "port of --ca")
	fl.DurationVar(&timeout, "timeout", 2*time.Minute, "give up on any one diagnostic tool after this long")
	outputFlag(fl, &output, "table or json")
	return c
}

// roundsFormatFlag is --rounds-format, the one name and default for the
// dialect of a round file, read (bench --rounds) or written (bench
// schedule --rounds): ClusterKit's names check themselves against the
// cluster file, where SuperBench's indices silently follow its order.
func roundsFormatFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "rounds-format", string(schedule.ClusterKit), "the round file's format: clusterkit (<round> <node1> <node2>) or superbench (i,j;k,l by node index)")
}

func writeRoundFile(path string, s *schedule.Schedule, f schedule.Format) error {
	return userfile.WriteAtomic(path, 0o644, func(w io.Writer) error { return schedule.WriteRounds(w, s, f) })
}

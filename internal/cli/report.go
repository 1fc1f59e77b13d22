package cli

import (
	"fmt"
	"os"

	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/report/htmlreport"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var out, title string
	c := &cobra.Command{
		Use:   "report [--out FILE.html] INPUT...",
		Short: "One page for a whole cluster: ready or not, and what is wrong where",
		Long: `report reads any mix of rdmalab outputs and prints the verdict: ready, not
ready (with the findings that decide it) or unproven (something could not be
judged). With --out it writes one self-contained HTML page: the verdict, each
node's findings by severity with its device locality map and GPU↔NIC matrix,
the fabric's links worst first and its subnet manager, the bench heatmaps
(one cell per direction, sender by receiver: the share of what the link can
carry, or of the peers' median; latency p50 and p99.9), each node's send and
receive sides, and the suspects with their retests. The page needs no network
and no JavaScript; send it to anyone.

An INPUT is a file, a directory (every .json and .jsonl in it; other files
are skipped and listed) or example:NAME (the built-in examples):
  host snapshots          rdmalab inventory --output json
  host trees, captures    a directory holding sys/, a copy of
                          /sys/class/infiniband, rdmalab gather's .tar.gz
                          (read as inventory --root reads them)
  doctor, fabric check    rdmalab doctor|fabric check --output json
  fabric snapshots        rdmalab fabric scan --output json
  bench                   rdmalab bench --output json (preferred), or its --results log
Snapshots and results logs given without their judgement are judged here with
the same rules and default options (a results log: against the peers only, no
link rate); the page says so.

Exit codes: 0 ready (proven), 1 not ready (a finding failed), 2 could not
run, 3 unproven (nothing failed, but what decides readiness was not judged).`,
		Example: `  rdmalab report --out cluster.html doctor.json fabric.json bench.json
  rdmalab report --out cluster.html snapshots/ run1.jsonl
  rdmalab report example:hgx-h200 example:qdr-lab      # verdict only, in the terminal`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := intake.Load(args)
			if err != nil {
				return usageErr("%v", err)
			}
			v := report.NewClusterView(in)
			if out != "" {
				if err := writeHTML(out, v, htmlreport.Options{Title: title}); err != nil {
					return usageErr("%v", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
			}
			report.Cluster(cmd.OutOrStdout(), v)
			switch v.Verdict.State {
			case report.NotReady:
				return errFindings
			case report.Unproven:
				return errUnproven
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "write the HTML report to this file")
	c.Flags().StringVar(&title, "title", "", "page title (default: rdmalab cluster report)")
	return c
}

// writeHTML writes to a temporary name and renames, so a failed render
// never leaves half a page under the real name.
func writeHTML(path string, v *report.ClusterView, o htmlreport.Options) error {
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	err = htmlreport.Write(f, v, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

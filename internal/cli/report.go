package cli

import (
	"fmt"
	"io"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/report/htmlreport"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var output format
	var out, title string
	c := &cobra.Command{
		Use:   "report [--html FILE] INPUT...",
		Short: "One page for a whole cluster: ready or not, and what is wrong where",
		Long: `report reads any mix of rdmalab outputs and prints the verdict: ready, not
ready (with the findings that decide it) or unproven (something could not be
judged). With --html it writes one self-contained HTML page: the verdict, each
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
  saved tool outputs      anything rdmalab judge reads (ibstat, iblinkinfo, lspci
                          -vvv, perftest, nccl-tests…), named as files
Snapshots, results logs and saved outputs given without their judgement are
judged here once with the same rules and default options (a results log:
against the peers only, no link rate); the page says so. --output json gives
the verdict and every finding in the rdmalab envelope (kind report).

Exit codes: 0 ready (proven), 1 not ready (a finding failed), 2 could not
run, 3 unproven (nothing failed, but what decides readiness was not judged).`,
		Example: `  rdmalab report --html cluster.html doctor.json fabric.json bench.json
  rdmalab report --html cluster.html snapshots/ run1.jsonl
  rdmalab report example:hgx-h200 example:qdr-lab      # verdict only, in the terminal`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := judge.Load(args)
			if err != nil {
				return usageErr("%v", err)
			}
			v := report.NewClusterView(in)
			if out != "" {
				if err := writeHTML(out, v, htmlreport.Options{Title: title}); err != nil {
					return usageErr("--html %v", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", userfile.Name(out))
			}
			cv := clusterVerdict(in.Findings, v)
			if output == "json" {
				p := reportPayload{Sources: in.Sources, Skipped: in.Skipped, Derived: in.Derived}
				if err := envelope.WriteJudged(cmd.OutOrStdout(), envelope.Report, cv, in.Findings, p); err != nil {
					return err
				}
			} else {
				report.Cluster(cmd.OutOrStdout(), v)
			}
			return verdictErr(cv)
		},
	}
	c.Flags().StringVar(&out, "html", "", "write the HTML report to this file")
	alias(c.Flags(), "html", "out")
	c.Flags().StringVar(&title, "title", "", "page title (default: rdmalab cluster report)")
	outputFlag(c.Flags(), &output, "table or json (the readiness verdict and every input's findings, in the rdmalab envelope)")
	return c
}

// reportPayload is report -o json's payload: what was read and how.
type reportPayload struct {
	Sources []string `json:"sources"`
	Skipped []string `json:"skipped,omitempty"`
	Derived []string `json:"derived,omitempty"`
}

// clusterVerdict is the page's verdict as the envelope carries it: the
// one rule (rules.Verdict), and unproven where the page found a host not
// proven to have RDMA, so text, HTML, JSON and the exit code agree.
func clusterVerdict(fs []check.Finding, v *report.ClusterView) check.Verdict {
	cv := rules.Verdict(rules.Report, fs)
	if v.Verdict.State == report.Unproven && cv.Status == check.Healthy {
		cv.Status, cv.Reason, cv.Answer = check.Unproven, v.Verdict.Why, ""
	}
	return cv
}

// writeHTML writes the page through userfile, so a failed render never
// leaves half a page under the real name and a device, FIFO or link named
// by --html is written as the shell would, never replaced.
func writeHTML(path string, v *report.ClusterView, o htmlreport.Options) error {
	return userfile.WriteAtomic(path, 0o644, func(w io.Writer) error { return htmlreport.Write(w, v, o) })
}

package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/userfile"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
)

func newJudgeCmd() *cobra.Command {
	var output format
	var rate, layer, topology, fabricFile, routes string
	var snapshots []string
	var thresholds []string
	var verbose bool
	c := &cobra.Command{
		Use:   "judge FILE... | -",
		Short: "Judge saved tool outputs (IB tools, rdma, lspci, perftest, nccl-tests, RoCE QoS…) with the live rules",
		Long: `judge reads what you already have (a saved tool output, pasted from a ticket
or captured months ago) and judges it with the same rules and the same
findings as the live commands. Each file is recognised by its content,
never its name; the formats (from the registry, internal/formats):

` + formatList() + `
A file no format recognises is exit 2 naming it. '-' reads standard input.
docs/judge.md says what each format is judged by and what each rule needs.

Exit codes: 0 proven healthy, 1 failures found, 2 could not run, 3 unproven
(nothing failed, but what decides the output's health could not be judged:
the verdict line names the flag or input that would answer).`,
		Example: `  rdmalab judge ibnetdiscover.txt
  rdmalab judge --expect-rate "4X HDR" iblinkinfo.txt ibqueryerrors.txt
  ssh node017 ibstat | rdmalab judge --expect-rate 200 --expect-link-layer IB -
  rdmalab judge --topology cabling.yaml ibnetdiscover-today.txt`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fopt, err := fabricCheckFlags{topology: topology, rate: rate, thresholds: thresholds}.options()
			if err != nil {
				return err
			}
			e, err := expect(rate, layer)
			if err != nil {
				return err
			}
			opt := judge.Options{Expect: e, Plan: fopt.Plan, Thresholds: fopt.Thresholds}
			if fabricFile != "" || routes != "" {
				if opt.RAS, err = rasOptions(nil, "", fabricFile, routes); err != nil {
					return err
				}
			}
			if len(snapshots) > 1 {
				return usageErr("--snapshot: one host, the one the outputs were saved on (got %d)", len(snapshots))
			}
			if len(snapshots) == 1 {
				if opt.Snapshot, err = intake.Host(snapshots[0]); err != nil {
					return usageErr("%v", err)
				}
			}
			inputs, err := readInputs(cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			var rs []judge.Result
			for _, in := range inputs {
				if in.Format == nil {
					return usageErr("%v", &formats.UnrecognisedError{Name: in.Name})
				}
				saved, err := in.Format.ReadAs(in.Name, in.Data)
				if err != nil {
					return usageErr("%v", err)
				}
				r, err := judge.Saved(saved, opt)
				if err != nil {
					return usageErr("%v", err)
				}
				rs = append(rs, r)
			}
			fs := judge.Findings(rs)
			v := rules.Verdict(rules.Judge, fs)
			w := cmd.OutOrStdout()
			return output.judged(w, envelope.Judge, v, fs, rs, func() { report.Judge(w, rs, verbose) })
		},
	}
	f := c.Flags()
	f.StringVar(&rate, "expect-rate", "", "rate every link and port should run at: Gb/s (200), 25GbE, or width and speed (\"4X HDR\")")
	f.StringVar(&layer, "expect-link-layer", "", "link layer every host port should have: InfiniBand (IB) or RoCE (Ethernet)")
	alias(f, "expect-link-layer", "expect-layer")
	f.StringVar(&topology, "topology", "", "intended cabling, for topology outputs (ibnetdiscover file, ibsim netlist or .yaml)")
	f.StringArrayVar(&thresholds, "threshold", nil, "override an error counter threshold, COUNTER=N (repeatable)")
	f.StringArrayVar(&snapshots, "snapshot", nil, "the host a host-side output was saved on (snapshot, capture or root; example:NAME), to compare with it")
	f.StringVar(&fabricFile, "fabric", "", "for an ncclras report: the fabric snapshot a suspect rank's rail is cabled into (rdmalab fabric scan -o json)")
	f.StringVar(&routes, "routes", "", "for an ncclras report, with --fabric: its forwarding tables (dump_fts, ibroute, opensm-lfts.dump): the links the rail's traffic crosses")
	f.BoolVarP(&verbose, "verbose", "v", false, "list passed checks too")
	outputFlag(f, &output, "table or json (findings and what was read, in the rdmalab envelope)")
	return c
}

// readInputs reads each named saved output, or standard input for "-",
// through intake, which says what each one is.
func readInputs(stdin io.Reader, args []string) ([]*intake.Input, error) {
	var in []*intake.Input
	for _, a := range args {
		i, err := intake.Read(stdin, a, userfile.ToolOutput)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		in = append(in, i)
	}
	return in, nil
}

// formatList is judge --help's list of formats, one line each, made from
// the registry so that it names every format there is.
func formatList() string {
	var b strings.Builder
	for _, f := range formats.Formats {
		fmt.Fprintf(&b, "  %-24s %s\n", f.Name, f.Help)
	}
	return b.String()
}

package cli

import (
	"io"

	"github.com/rdmalab/rdmalab/internal/userfile"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
)

func newJudgeCmd() *cobra.Command {
	var output, rate, layer, topology, snapshot string
	var thresholds []string
	var verbose bool
	c := &cobra.Command{
		Use:   "judge FILE... | -",
		Short: "Judge saved outputs of ibnetdiscover, iblinkinfo, ibqueryerrors, ibstat, ibstatus, ibv_devinfo",
		Long: `judge reads what you already have (a saved tool output, pasted from a ticket
or captured months ago) and judges it with the same rules and the same
findings as the live commands. Each file is recognised by its content:

  ibnetdiscover (topology, or -p)  links by GUID: rate against --expect-rate,
                                   the device models (vendid/devid), peers
  iblinkinfo (default or --line)   the same, plus port states and LIDs
  ibqueryerrors, ibcheckerrors     error counters; output cut short or with
                                   an error line is unknown, not "no errors"
  ibstat, ibstatus, ibv_devinfo    read as a host snapshot and judged by
                                   doctor's port rules: state, LID/SM, rate
                                   (--expect-rate, else the majority of the
                                   host's ports of one model), link layer
                                   (--expect-link-layer)
  nvidia-smi topo -m               rail alignment (each GPU's own NIC at
                                   PIX/PXB); with --snapshot of the same
                                   host, compared with the PCI tree

A file no format recognises is exit 2 naming it. '-' reads standard input.
docs/judge.md lists the formats and what each rule needs to be sure.

Exit codes: 0 proven healthy, 1 failures found, 2 could not run, 3 unproven
(nothing failed, but what decides the output's health could not be judged:
the verdict line names the flag or input that would answer).`,
		Example: `  rdmalab judge ibnetdiscover.txt
  rdmalab judge --expect-rate "4X HDR" iblinkinfo.txt ibqueryerrors.txt
  ssh node017 ibstat | rdmalab judge --expect-rate 200 --expect-link-layer IB -
  rdmalab judge --topology cabling.yaml ibnetdiscover-today.txt`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			fopt, err := fabricCheckFlags{topology: topology, rate: rate, thresholds: thresholds}.options()
			if err != nil {
				return err
			}
			e, err := expect(rate, layer)
			if err != nil {
				return err
			}
			opt := judge.Options{Expect: e, Plan: fopt.Plan, Thresholds: fopt.Thresholds}
			if snapshot != "" {
				if opt.Snapshot, err = intake.Host(snapshot); err != nil {
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
					return usageErr("%v", &judge.UnrecognisedError{Name: in.Name})
				}
				r, err := judge.As(in.Format, in.Name, in.Data, opt)
				if err != nil {
					return usageErr("%v", err)
				}
				rs = append(rs, r)
			}
			fs := judge.Findings(rs)
			v := rules.Verdict(rules.Judge, fs)
			w := cmd.OutOrStdout()
			if output == "json" {
				if err := envelope.WriteJudged(w, envelope.Judge, v, fs, rs); err != nil {
					return err
				}
			} else {
				report.Judge(w, rs, verbose)
				report.VerdictLine(w, v)
			}
			return verdictErr(v)
		},
	}
	f := c.Flags()
	f.StringVar(&rate, "expect-rate", "", "rate every link and port should run at: Gb/s (200), 25GbE, or width and speed (\"4X HDR\")")
	f.StringVar(&layer, "expect-link-layer", "", "link layer every host port should have: IB or RoCE (Ethernet)")
	alias(f, "expect-link-layer", "expect-layer")
	f.StringVar(&topology, "topology", "", "intended cabling, for topology outputs (ibnetdiscover file, ibsim netlist or .yaml)")
	f.StringArrayVar(&thresholds, "threshold", nil, "override an error counter threshold, COUNTER=N (repeatable)")
	f.StringVar(&snapshot, "snapshot", "", "the host a host-side output was saved on (snapshot, capture or root; example:NAME), to compare with it")
	f.BoolVarP(&verbose, "verbose", "v", false, "list passed checks too")
	f.StringVarP(&output, "output", "o", "table", "table or json (findings and what was read, in the rdmalab envelope)")
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

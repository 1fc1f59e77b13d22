package cli

import (
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var output format
	c := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs: what changed per direction and per node, beyond each run's own noise",
		Long: `compare sets two runs of the same measurement side by side and says what
changed from RUN_A to RUN_B: two bench results logs (per direction:
bandwidth, or latency at p50, p99 and p99.9; per node: its send and receive
sides), or two nccl-tests outputs (the plateau bus bandwidth of each run).

A change is judged against each run's own spread (the samples of that
direction in each run) and never below 5%: a change inside the noise is
"no change". A node whose send or receive side got worse with most of its
partners is named. docs/compare.md describes it.

A direction measured in RUN_A that fell to 0, failed or vanished in RUN_B
got worse; a value that is not finite or above what any link carries is no
measurement and fails; RUN_A and RUN_B that are one run prove nothing.

Exit codes: 0 nothing got worse, 1 something got worse, 2 could not run,
3 unproven (the two runs are one run).`,
		Example: `  rdmalab compare optimised.jsonl contended.jsonl
  rdmalab compare internal/compare/testdata/seed000-optimised.jsonl internal/compare/testdata/seed000-wrong-numa.jsonl
  rdmalab compare -o json before.jsonl after.jsonl`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in [2][]byte
			for i, a := range args {
				// A results log or a saved nccl-tests output: the larger bound.
				r, err := intake.Read(nil, a, userfile.ResultsLog)
				if err != nil {
					return usageErr("%v", err)
				}
				in[i] = r.Data
			}
			r, err := compare.Run(args[0], in[0], args[1], in[1])
			if err != nil {
				return usageErr("%v", err)
			}
			v := rules.Verdict(rules.Compare, r.Findings)
			w := cmd.OutOrStdout()
			return output.judged(w, envelope.Compare, v, r.Findings, r, func() { report.Compare(w, r) })
		},
	}
	outputFlag(c.Flags(), &output, "table or json (the comparison, in the rdmalab envelope)")
	return c
}

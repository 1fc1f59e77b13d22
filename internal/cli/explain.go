package cli

import (
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
)

func newExplainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain CHECK-ID",
		Short: "Say what a check looks at, why it matters, when it is unknown and how to fix it",
		Long: `explain prints a check's catalog entry: what it checks and why, where the
belief comes from, what it needs to be sure, what makes it unknown, whether
an unknown there leaves the command's question open (the run is then
unproven, exit 3), and the fixes. Every check id a finding names works here;
docs/checks.md lists them all.

Exit codes: 0 printed, 2 no such check (the closest ids are suggested).`,
		Example: `  rdmalab explain port.state
  rdmalab explain fabric.link.speed`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			var ids []string
			for _, c := range rules.Catalogs() {
				for _, e := range c.Entries {
					ids = append(ids, e.ID)
				}
			}
			return ids, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			e, ok := rules.Lookup(args[0])
			if !ok {
				var near []string
				for _, c := range rules.Catalogs() {
					for _, x := range c.Entries {
						if strings.Contains(x.ID, args[0]) || strings.HasPrefix(x.ID, strings.SplitN(args[0], ".", 2)[0]+".") {
							near = append(near, x.ID)
						}
					}
				}
				slices.Sort(near)
				if len(near) > 8 {
					near = near[:8]
				}
				hint := "docs/checks.md lists every check"
				if len(near) > 0 {
					hint = "did you mean " + strings.Join(near, ", ") + "?"
				}
				return usageErr("explain %s: no such check; %s", args[0], hint)
			}
			p := report.NewPrinter(cmd.OutOrStdout())
			p.Printf("%s\n", p.Bold(e.ID+": "+e.Title))
			p.Wrapped("  why: ", "    ", e.Why)
			if e.Source != "" {
				p.Wrapped("  source: ", "    ", e.Source)
			}
			p.Wrapped("  needs: ", "    ", e.Needs)
			p.Wrapped("  unknown when: ", "    ", e.UnknownWhen)
			if e.Decides {
				p.Wrapped("  decides: ", "    ", "yes: an unknown here leaves the command's question open, so the run is unproven (exit 3)")
			}
			for _, f := range e.Fixes {
				p.Printf("  fix: %s\n", f)
			}
			return nil
		},
	}
}

package cli

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
)

// demoVMs is how many VMs the demo plans on each example host.
var demoVMs = map[string]int{"seed000-epyc": 2, "hgx-h200": 2}

func newDemoCmd() *cobra.Command {
	var only string
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run inventory, doctor and plan on the built-in example hosts (no root, no hardware)",
		Long: `demo runs rdmalab on the example hosts built into the binary: the EPYC lab
host of "Building a Multi-Node RDMA Lab on a Single Machine" (two RTX 3090s,
two ConnectX-4 Lx, RoCE 25G), a Dell R730 on a QDR InfiniBand switch, and an
HGX 8×H200 host with eight ConnectX-7 behind four PCIe switches.

Any command reads them too: --snapshot example:NAME.`,
		Example: `  rdmalab demo
  rdmalab demo --host hgx-h200
  rdmalab inventory --snapshot example:seed000-epyc --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The homelab first: it is the one most readers have.
			names := []string{"seed000-epyc", "r730-qdr", "hgx-h200"}
			if only != "" {
				// The names every other command takes: example:NAME, and the
				// QDR lab's fabric, which the demo shows with its host.
				only = strings.TrimPrefix(only, "example:")
				if only == "qdr-lab" {
					only = "r730-qdr"
				}
				names = []string{only}
			}
			w := cmd.OutOrStdout()
			for i, name := range names {
				s, err := examples.Load(name)
				if err != nil {
					return usageErr("%v", err)
				}
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "━━━ example host %s: rdmalab inventory --snapshot example:%s\n\n", name, name)
				report.Inventory(w, s)
				fmt.Fprintf(w, "━━━ rdmalab doctor --snapshot example:%s\n\n", name)
				fs := hostcheck.Doctor([]*host.Snapshot{s}, hostcheck.Options{})
				report.Findings(w, fs, false)
				report.VerdictLine(w, rules.Verdict(rules.Doctor, fs))
				if name == "r730-qdr" {
					fmt.Fprintf(w, "\n━━━ the QDR lab's fabric, recorded on ibsim:\n━━━ rdmalab fabric check --fabric example:qdr-lab\n\n")
					if err := fabricDemo(w); err != nil {
						return err
					}
				}
				if vms := demoVMs[name]; vms > 0 {
					fmt.Fprintf(w, "\n━━━ rdmalab plan vms --snapshot example:%s --vms %d\n\n", name, vms)
					planDemo(w, s, vms)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&only, "host", "", "run on this example host only (NAME or example:NAME; qdr-lab shows r730-qdr with its fabric)")
	return c
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// completeValues teaches shell completion the values flags take, by the
// flag's name across every command (one flag name per idea): example hosts
// and fabrics beside files for inputs, the outputs, layers, engines.
func completeValues(root *cobra.Command) {
	fixed := map[string][]string{
		"output":            {"table", "json"},
		"color":             {"never", "auto", "always"},
		"expect-link-layer": {"IB", "RoCE"},
		"engine":            {"perftest", "tcp"},
		"schedule":          {"circle", "cover"},
		"rounds-format":     {"clusterkit", "superbench"},
		"expect-rate":       {"25GbE", "100GbE", "200GbE", "400GbE", "4X EDR", "4X HDR", "4X NDR", "4X XDR"},
	}
	hosts := func() []string {
		var out []string
		for _, n := range examples.Names() {
			out = append(out, "example:"+n)
		}
		return out
	}
	fabrics := func() []string {
		var out []string
		for _, n := range examples.FabricNames() {
			out = append(out, "example:"+n)
		}
		return out
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if _, done := c.GetFlagCompletionFunc(f.Name); done {
				return
			}
			var fn func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)
			switch {
			case fixed[f.Name] != nil:
				vals := fixed[f.Name]
				fn = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return vals, cobra.ShellCompDirectiveNoFileComp
				}
			case f.Name == "snapshot" || f.Name == "root" || f.Name == "fabric":
				// example:NAME or a file: --fabric is a fabric, the others a host.
				list := hosts
				if f.Name == "fabric" {
					list = fabrics
				}
				fn = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return list(), cobra.ShellCompDirectiveDefault
				}
			}
			if fn != nil {
				_ = c.RegisterFlagCompletionFunc(f.Name, fn)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// newReleaseCmd writes what a release ships beside the binary: one man page
// per command and the shell completions. Hidden: the release target
// (make release) runs it.
func newReleaseCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "release-files DIR",
		Short:  "Write man pages (DIR/man/man1) and shell completions (DIR/completions) for a release",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			man := filepath.Join(args[0], "man", "man1")
			comp := filepath.Join(args[0], "completions")
			for _, d := range []string{man, comp} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return usageErr("%v", err)
				}
			}
			hdr := &doc.GenManHeader{Title: "RDMALAB", Section: "1", Source: "rdmalab", Manual: "rdmalab manual"}
			if err := doc.GenManTree(root, hdr, man); err != nil {
				return usageErr("man pages: %v", err)
			}
			for name, gen := range map[string]func(string) error{
				"rdmalab.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
				"_rdmalab":     root.GenZshCompletionFile,
				"rdmalab.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
			} {
				if err := gen(filepath.Join(comp, name)); err != nil {
					return usageErr("completion %s: %v", name, err)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s\n", man, comp)
			return nil
		},
	}
	return c
}

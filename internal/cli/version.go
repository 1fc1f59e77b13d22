package cli

import (
	"encoding/json"
	"fmt"

	"github.com/rdmalab/rdmalab/internal/buildinfo"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	var output format
	c := &cobra.Command{
		Use:   "version",
		Short: "Say which rdmalab this is: version, commit, build date, Go version",
		Long: `version prints the version, the commit it was built from (with "local
changes" when the checkout was modified), the commit's date and the Go
version. A release build sets them with -ldflags (make release); any other
build in a git checkout (go build, go install) carries the commit the Go
toolchain stamped into it. Every JSON document rdmalab writes names the
same version and commit, and the exporter serves rdmalab_build_info.

Exit codes: 0 printed, 2 bad flag.`,
		Example: `  rdmalab version
  rdmalab version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := buildinfo.Get()
			if output == "json" {
				e := json.NewEncoder(cmd.OutOrStdout())
				e.SetIndent("", "  ")
				return e.Encode(b)
			}
			fmt.Fprintln(cmd.OutOrStdout(), b.String())
			return nil
		},
	}
	outputFlag(c.Flags(), &output, "table or json")
	return c
}

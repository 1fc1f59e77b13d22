package cli

import (
	"io"
	"os"

	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

// addOutputFlags adds the global terminal flags; before any command runs,
// stdout becomes a report.Terminal carrying the Style they ask for, so every
// renderer reads the same options and JSON output is untouched.
func addOutputFlags(root *cobra.Command, stdout io.Writer) {
	var color string
	var req report.StyleRequest
	f := root.PersistentFlags()
	f.StringVar(&color, "color", "auto", "colour outcomes: never, auto (a terminal without NO_COLOR) or always")
	f.BoolVar(&req.ASCII, "ascii", false, "plain ASCII: no box drawing or symbols (automatic when TERM=dumb)")
	f.IntVar(&req.Width, "width", 0, "fit tables to this many columns (default: the terminal's width, else $COLUMNS, else no limit)")
	f.BoolVarP(&req.Quiet, "quiet", "q", false, "summary and failures only")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkRanges(cmd); err != nil {
			return err
		}
		req.Color = report.ColorMode(color)
		st, err := report.DetectStyle(stdout, req, os.Getenv)
		if err != nil {
			return usageErr("%v", err)
		}
		// Snapshot data (hostnames, device names) is the user's: its
		// control characters never reach the terminal raw.
		root.SetOut(&report.Terminal{Writer: userfile.TerminalWriter(stdout), Style: st})
		return nil
	}
}

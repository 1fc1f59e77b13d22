package cli

import (
	"errors"
	"io"
	"os"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// format is --output, what a command prints on standard output: one type
// for every command, checked as flags are parsed, so "-o yaml" is exit 2
// naming the flag before anything runs.
type format string

const (
	formatTable format = "table"
	formatJSON  format = "json"
)

func (f *format) String() string { return string(*f) }
func (f *format) Type() string   { return "format" }
func (f *format) Set(s string) error {
	switch format(s) {
	case formatTable, formatJSON:
		*f = format(s)
		return nil
	}
	return errors.New("want table or json")
}

// outputFlag adds -o/--output (default table) to a command's flags.
func outputFlag(f *pflag.FlagSet, p *format, usage string) {
	*p = formatTable
	f.VarP(p, "output", "o", usage)
}

// write is every command's output tail for what is not judged (a plan, a
// snapshot, a design): the JSON envelope of kind, or the table.
func (f format) write(w io.Writer, kind envelope.Kind, fs []check.Finding, payload any, table func() error) error {
	if f == formatJSON {
		return envelope.Write(w, kind, fs, payload)
	}
	return table()
}

// judged is every judging command's output tail: the JSON envelope with
// the verdict, or the table and then the verdict line; the error is the
// exit the verdict maps to (0, 1 or 3).
func (f format) judged(w io.Writer, kind envelope.Kind, v check.Verdict, fs []check.Finding, payload any, table func()) error {
	if f == formatJSON {
		if err := envelope.WriteJudged(w, kind, v, fs, payload); err != nil {
			return err
		}
	} else {
		table()
		report.VerdictLine(w, v)
	}
	return verdictErr(v)
}

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

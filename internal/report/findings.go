package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
)

// Findings renders findings grouped by severity, worst first, each with its
// evidence and fix; passes are summarised unless verbose.
func Findings(w io.Writer, fs []check.Finding, verbose bool) {
	c := check.Count(fs)
	fmt.Fprintf(w, "%d fail · %d warn · %d unknown · %d pass\n", c[check.Fail], c[check.Warn], c[check.Unknown], c[check.Pass])
	for _, out := range []check.Outcome{check.Fail, check.Warn, check.Unknown, check.Pass} {
		if c[out] == 0 || (out == check.Pass && !verbose) {
			continue
		}
		fmt.Fprintf(w, "\n%s (%d)\n", strings.ToUpper(string(out)), c[out])
		for _, f := range fs {
			if f.Outcome != out {
				continue
			}
			who := f.Subject
			if f.Host != "" {
				who = f.Host + " " + f.Subject
			}
			fmt.Fprintf(w, "  %-26s %s: %s\n", f.Check, who, f.Message)
			if out == check.Pass {
				continue
			}
			for _, e := range f.Evidence {
				src := ""
				if e.Source != "" {
					src = "  (" + e.Source + ")"
				}
				fmt.Fprintf(w, "      %s = %s%s\n", e.What, e.Value, src)
			}
			for _, fix := range f.Fix {
				fmt.Fprintf(w, "      fix: %s\n", fix)
			}
		}
	}
	if !verbose && c[check.Pass] > 0 {
		fmt.Fprintf(w, "\n%d checks passed (--verbose lists them)\n", c[check.Pass])
	}
}

// NHC prints one line per failure, the way LBNL NHC reports to Slurm.
func NHC(w io.Writer, fs []check.Finding) {
	for _, f := range fs {
		if f.Outcome == check.Fail {
			fmt.Fprintf(w, "ERROR: rdmalab: %s: %s %s: %s\n", f.Check, f.Host, f.Subject, f.Message)
		}
	}
}

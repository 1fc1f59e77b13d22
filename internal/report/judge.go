package report

import (
	"fmt"
	"io"

	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Judge renders each judged file: its name and the format it was read
// as, then its findings.
func Judge(w io.Writer, rs []judge.Result, verbose bool) {
	for i, r := range rs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s (%s output)\n", userfile.TermLine(r.File), r.Format)
		for _, sk := range r.Skipped {
			fmt.Fprintf(w, "skipped: %s\n", userfile.TermLine(sk))
		}
		Findings(w, r.Findings, verbose)
	}
}

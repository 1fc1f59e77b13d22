package report

import (
	"fmt"
	"io"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/slurm"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// SlurmHealth prints a health run the way NHC logs: one line per failure
// (names escaped with userfile.Line, so one whatever they hold), then what
// was decided about the node and why.
func SlurmHealth(w io.Writer, r slurm.HealthResult) {
	for _, f := range r.Findings {
		if f.Outcome == check.Fail {
			fmt.Fprintf(w, "ERROR: rdmalab: %s %s: %s\n", userfile.Line(f.Check), userfile.Line(f.Subject), userfile.Line(f.Message))
		}
	}
	if r.TimedOutIn != "" {
		fmt.Fprintf(w, "ERROR: rdmalab: health check timed out in %s\n", userfile.Line(r.TimedOutIn))
	}
	if r.State == "" {
		return
	}
	verb := map[bool]string{true: "done", false: "not applied"}[r.Applied]
	if r.Decision.Action == slurm.Keep {
		verb = "no change"
	}
	fmt.Fprintf(w, "node %s (%s): %s, %s: %s\n", userfile.Line(r.Node), userfile.Line(r.State), r.Decision.Action, verb, userfile.Line(r.Decision.Why))
}

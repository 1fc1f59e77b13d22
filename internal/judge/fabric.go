package judge

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/formats"
)

// judgeCheckErrors: each counter the older ibcheckerrors found over its
// own threshold fails fabric.port.errors on its port.
func judgeCheckErrors(c *formats.CheckErrors) []check.Finding {
	rep := fabriccheck.PortErrorsEntry.Reporter("")
	for _, w := range c.Over {
		f := rep.Fail(fmt.Sprintf("lid %s (%s) port %s %s", w.LID, w.Desc, w.Port, w.Counter), "%s, over ibcheckerrors' threshold %s", w.Value, w.Threshold)
		f.Evidence = []check.Evidence{{What: w.Counter, Value: w.Value, Source: "ibcheckerrors"}}
		// The fixes name this port: perfquery -R 2 7 (-a for the node's
		// every port when ibcheckerrors summed them).
		at := strings.NewReplacer("<lid>", w.LID, "<port>", w.Port)
		if w.Port == "all" {
			at = strings.NewReplacer("-R <lid> <port>", "-a -R "+w.LID, "<lid> <port>", w.LID)
			f.Message += " (summed over the node's ports)"
		}
		for i, fx := range f.Fix {
			f.Fix[i] = at.Replace(fx)
		}
	}
	if len(c.Over) == 0 {
		rep.Pass("ports", "ibcheckerrors found no port over its thresholds")
	}
	return rep.Findings()
}

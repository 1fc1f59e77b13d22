package judge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/formats"
)

// judgeCheckErrors: each counter the older ibcheckerrors found over its
// own threshold fails fabric.port.errors on its port.
func judgeCheckErrors(c *formats.CheckErrors) []check.Finding {
	var fs []check.Finding
	for _, w := range c.Over {
		// The fixes name this port: perfquery -R 2 7 (-a for the node's
		// every port when ibcheckerrors summed them).
		at := strings.NewReplacer("<lid>", w.LID, "<port>", w.Port)
		if w.Port == "all" {
			at = strings.NewReplacer("-R <lid> <port>", "-a -R "+w.LID, "<lid> <port>", w.LID)
		}
		var fixes []string
		for _, fx := range fixOf("fabric.port.errors") {
			fixes = append(fixes, at.Replace(fx))
		}
		f := check.Finding{Check: "fabric.port.errors", Outcome: check.Fail,
			Subject:  fmt.Sprintf("lid %s (%s) port %s %s", w.LID, w.Desc, w.Port, w.Counter),
			Message:  fmt.Sprintf("%s, over ibcheckerrors' threshold %s", w.Value, w.Threshold),
			Evidence: []check.Evidence{{What: w.Counter, Value: w.Value, Source: "ibcheckerrors"}},
			Fix:      fixes}
		if w.Port == "all" {
			f.Message += " (summed over the node's ports)"
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		fs = append(fs, check.Finding{Check: "fabric.port.errors", Outcome: check.Pass, Subject: "ports", Message: "ibcheckerrors found no port over its thresholds"})
	}
	return fs
}

func fixOf(id string) []string {
	for _, e := range fabriccheck.Catalog {
		if e.ID == id {
			return slices.Clone(e.Fixes)
		}
	}
	return nil
}

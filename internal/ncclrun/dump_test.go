package ncclrun

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
)

func dump(fs []check.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Outcome, f.Check, f.Host, f.Message)
	}
	return b.String()
}

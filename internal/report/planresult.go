package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/plan"
)

// PlanPayload is the plan document's payload: the plan (or the nearest
// one that can be met) and, when refused, the request that would be met.
type PlanPayload struct {
	Plan    *plan.Plan    `json:"plan,omitempty"`
	Nearest *plan.Request `json:"nearest_request,omitempty"`
}

// PlanJSON writes a plan or a refusal as one envelope: the refusal's
// reasons and the plan's notes are its findings.
func PlanJSON(w io.Writer, p *plan.Plan, refusal *plan.Refusal) error {
	var fs []check.Finding
	payload := PlanPayload{Plan: p}
	if refusal != nil {
		fs = append(fs, refusal.Reasons...)
		payload.Nearest = refusal.Nearest
	}
	if p != nil {
		fs = append(fs, p.Notes...)
	}
	return envelope.Write(w, envelope.Plan, fs, payload)
}

// PlanResult prints a refusal (with the flags of the nearest request), the
// plan, and the files written.
func PlanResult(w io.Writer, p *plan.Plan, refusal *plan.Refusal, flags func(plan.Request) string, outDir string, files []plan.File) {
	if refusal != nil {
		near := ""
		if p != nil {
			near = flags(p.Request)
		}
		Refusal(w, refusal.Reasons, near)
	}
	if p != nil {
		Plan(w, p)
	}
	if len(files) > 0 {
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Name
		}
		fmt.Fprintf(w, "\nWrote %s: %s\n", outDir, strings.Join(names, ", "))
	}
}

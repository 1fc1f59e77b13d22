package slurm

import (
	"fmt"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Action is what a health check does to its node.
type Action string

// Actions.
const (
	DrainNode  Action = "drain"  // failures, and the node is not drained by someone else
	ResumeNode Action = "resume" // healthy again, and rdmalab drained it
	Keep       Action = "keep"   // nothing to change
)

// Decision is the health check's verdict on its node, with the reason.
type Decision struct {
	Action Action `json:"action"`
	// Reason is the drain reason given to Slurm (starts with ReasonPrefix).
	Reason string `json:"reason,omitempty"`
	// Why explains the decision to the person reading the log.
	Why string `json:"why"`
}

// maxReason keeps the drain reason readable in sinfo -R.
const maxReason = 200

// Decide is the policy, a pure function: drain on failures unless the node
// is already drained by someone else (their reason stands); resume only a
// node rdmalab drained; never resume an admin's drain.
func Decide(n Node, failing []check.Finding, timedOutIn string) Decision {
	var reason string
	switch {
	case timedOutIn != "":
		reason = fmt.Sprintf("%s health check timed out in %s", ReasonPrefix, userfile.Line(timedOutIn))
	case len(failing) > 0:
		// The one escaping of a Slurm reason: names from the node (device,
		// netdev, description) shown escaped, so the reason stays one line
		// in sinfo -R and scontrol show node, whatever they hold.
		f := failing[0]
		reason = fmt.Sprintf("%s %s %s: %s", ReasonPrefix, userfile.Line(f.Check), userfile.Line(f.Subject), userfile.Line(f.Message))
		if len(failing) > 1 {
			reason += fmt.Sprintf(" (+%d more)", len(failing)-1)
		}
	}
	if len(reason) > maxReason {
		// Cut on a character boundary, never inside a UTF-8 sequence.
		cut := maxReason - len("…")
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "…"
	}
	switch {
	case reason != "" && n.Drained() && !n.OursToResume():
		return Decision{Action: Keep, Why: fmt.Sprintf("unhealthy, but already drained by someone else (%q): their reason stands", n.Reason)}
	case reason != "" && n.OursToResume() && n.Reason == reason:
		return Decision{Action: Keep, Reason: reason, Why: "unhealthy and already drained by rdmalab for the same reason"}
	case reason != "":
		return Decision{Action: DrainNode, Reason: reason, Why: "unhealthy"}
	case n.OursToResume():
		return Decision{Action: ResumeNode, Why: fmt.Sprintf("healthy again; rdmalab had drained it (%q)", n.Reason)}
	case n.Drained():
		return Decision{Action: Keep, Why: fmt.Sprintf("healthy, but drained by someone else (%q): left drained", n.Reason)}
	}
	return Decision{Action: Keep, Why: "healthy"}
}

// HealthResult is what one health run found and did.
type HealthResult struct {
	Node     string          `json:"node"`
	State    string          `json:"state"`
	Findings []check.Finding `json:"-"`
	Decision Decision        `json:"decision"`
	// TimedOutIn names the check that was running when time ran out.
	TimedOutIn string `json:"timed_out_in,omitempty"`
	Applied    bool   `json:"applied"`
}

package schedule

import "github.com/rdmalab/rdmalab/internal/check"

// The checks schedule reports: each is a rule's catalog entry;
// the rule reports through a reporter bound to it (entry.Reporter(host)).
var (
	CheckUnrouted = check.Entry{ID: "schedule.unrouted", Title: "Every host pair has a route",
		Why:    "A pair with no route in the forwarding tables cannot talk at all; no schedule can measure it.",
		Source: "forwarding tables (ibroute, dump_fts, OpenSM lfts dump)",
		Fixes:  []string{"check the subnet manager's log for routing errors and re-sweep (opensm, or ibdiagnet -r)"},
		Needs:  "the forwarding tables of every switch and the cabling", UnknownWhen: "never: missing tables are schedule.input"}
	CheckUncoverable = check.Entry{ID: "schedule.uncoverable", Title: "Every link carries some host-to-host route",
		Why:    "A directed link no host pair's route crosses cannot be tested by any benchmark between hosts.",
		Source: "forwarding tables joined with the cabling",
		Fixes:  []string{"test it from the switch side (mlxlink, ibdiagnet), or change the routing engine"},
		Needs:  "the forwarding tables and the cabling", UnknownWhen: "never"}
	CheckInput = check.Entry{ID: "schedule.input", Title: "The schedule's inputs are whole",
		Why:    "A forwarding table or cable that could not be read leaves routes unknown, not absent.",
		Source: "forwarding tables, cabling",
		Fixes:  []string{"dump the missing tables again (ibroute, dump_fts)"},
		Needs:  "every switch's forwarding table", UnknownWhen: "an input could not be read or joined"}
	CheckCover = check.Entry{ID: "schedule.cover", Title: "The schedule covers every coverable link",
		Why:    "A cover schedule that leaves a coverable link untested would let a bad cable pass.",
		Source: "cover rounds",
		Needs:  "the coverable links and the rounds", UnknownWhen: "never"}
)

// Catalog lists every check the schedule reports (docs/checks.md is made
// from it).
var Catalog = []check.Entry{
	CheckUnrouted,
	CheckUncoverable,
	CheckInput,
	CheckCover,
}

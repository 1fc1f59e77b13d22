package compare

import "github.com/rdmalab/rdmalab/internal/check"

// The checks compare reports: each is a rule's catalog entry;
// the rule reports through a reporter bound to it (entry.Reporter(host)).
var (
	CheckDirection = check.Entry{ID: "compare.direction", Title: "A direction is no worse than in the first run",
		Why:    "Between two runs of the same measurement, a change is believed only beyond both runs' own spread (never below 5%): inside it, the answer is \"no change\".",
		Source: "seed 000 (optimised vs wrong NUMA vs CPU contention at p50, p99, p99.9)",
		Fixes:  []string{"find what changed between the runs on the two ends: CPU load and isolation, NUMA placement, link rate, MTU, error counters"},
		Needs:  "the direction measured in both runs, with samples", UnknownWhen: "never: a direction measured in one run only is compare.missing"}
	CheckNode = check.Entry{ID: "compare.node", Title: "A node's send or receive side is no worse than in the first run",
		Why:    "When most directions leaving (or entering) one node got worse, the change is that node's, not its partners'.",
		Source: "seed 000; all-pairs practice",
		Fixes:  []string{"compare what differs on the node between the runs: CPU load and isolation, NUMA placement (rdmalab doctor), link rate, MTU, error counters"},
		Needs:  "several of the node's directions compared", UnknownWhen: "never: a node with too few compared directions is not named"}
	CheckMissing = check.Entry{ID: "compare.missing", Title: "Both runs measured the same directions",
		Why:    "A direction measured in one run only cannot be compared; it is named so nothing is silently left out.",
		Source: "the two runs' results",
		Fixes:  []string{"bench --resume the run that lacks them"},
		Needs:  "both runs' direction lists", UnknownWhen: "never: a direction measured in the first run and absent or failed in the second fails"}
	CheckAbsurd = check.Entry{ID: "compare.absurd", Title: "Every compared value is a measurement",
		Why:    "A bandwidth that is not finite, negative, or above what any link (12X XDR) or GPU (NVLink 5) carries is no measurement: nothing can be compared with it, and a run that printed it is not healthy.",
		Source: "linkrate's fastest link and GPU fabric",
		Fixes:  []string{"measure again; a tool printing this measured nothing (a timer or counter wrapped, a division by zero)"},
		Needs:  "the values of both runs", UnknownWhen: "never"}
	CheckSelf = check.Entry{ID: "compare.self", Title: "The two runs are two runs",
		Why:    "A run compared with itself always shows no change: it cannot say whether anything got worse, so the comparison is unproven, never \"nothing got worse\".",
		Source: "the two inputs (the same bytes, or every direction the same measurement with its start time)",
		Fixes:  []string{"give the earlier run as RUN_A and a newer run of the same test as RUN_B"},
		Needs:  "two different runs", UnknownWhen: "the two inputs are one run"}
)

// Catalog lists every check compare reports (docs/checks.md is made from it).
var Catalog = []check.Entry{
	CheckDirection,
	CheckNode,
	CheckMissing,
	CheckAbsurd,
	CheckSelf,
}

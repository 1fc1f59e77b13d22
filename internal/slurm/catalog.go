package slurm

import "github.com/rdmalab/rdmalab/internal/check"

// ReadEntry is the health check's own check: the node could be read.
var ReadEntry = check.Entry{ID: "slurm.health.read", Title: "The health check could read the node",
	Why:    "A node whose sysfs and procfs cannot be read cannot be said healthy: the health check fails it (and drains it) rather than pass it unseen.",
	Source: "slurm health (HealthCheckProgram)",
	Fixes:  []string{"run rdmalab inventory on the node by hand and read its error"},
	Needs:  "the node's /sys and /proc", UnknownWhen: "never: an unreadable node fails"}

// Catalog lists the checks of the health check itself; the host rules it
// runs are doctor's (docs/checks.md is made from every catalog).
var Catalog = []check.Entry{ReadEntry}

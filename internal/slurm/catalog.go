package slurm

import "github.com/rdmalab/rdmalab/internal/check"

// Catalog lists the checks of the health check itself; the host rules it
// runs are doctor's (docs/checks.md is made from every catalog).
var Catalog = []check.Entry{
	{ID: "slurm.health.read", Title: "The health check could read the node",
		Why:    "A node whose sysfs and procfs cannot be read cannot be said healthy: the health check fails it (and drains it) rather than pass it unseen.",
		Source: "slurm health (HealthCheckProgram)",
		Fixes:  []string{"run rdmalab inventory on the node by hand and read its error"},
		Needs:  "the node's /sys and /proc", UnknownWhen: "never: an unreadable node fails"},
}

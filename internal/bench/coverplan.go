package bench

import (
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/schedule"
)

// What the runner (internal/benchrun) asks of a cover plan: its rounds,
// the localiser's next round and verdict over the records so far, and
// what it saw around the run (fabric scans, host snapshots) for the
// judgement. The plan itself runs nothing.

// Rounds are the cover rounds, as pairs of cluster node indices.
func (cp *CoverPlan) Rounds() [][]Pair { return cp.rounds }

// Pairs turns a round of the localiser (CA indices) into cluster node
// pairs.
func (cp *CoverPlan) Pairs(r []schedule.IPair) []Pair { return cp.pairs(r) }

// Locator is the localiser fed with the records so far.
func (cp *CoverPlan) Locator(c *cluster.Cluster, recs []Record, rep *Report) *schedule.Locator {
	return cp.locator(c, recs, rep)
}

// Fault is the cable or node a localiser's verdict names, or nil.
func (cp *CoverPlan) Fault(v schedule.Verdict) *Fault { return cp.fault(v) }

// Scanned records the fabric scans before and after the run (or why
// they failed): the named cable's counters are a second witness.
func (cp *CoverPlan) Scanned(before, after *fabric.Snapshot, err error) {
	cp.before, cp.after, cp.scanErr = before, after, err
}

// WithHosts gives the nodes' host snapshots, for the named cable's PHY
// facts.
func (cp *CoverPlan) WithHosts(hosts []*host.Snapshot) { cp.hosts = hosts }

// Judge adds the localiser's verdict over recs to the report.
func (cp *CoverPlan) Judge(c *cluster.Cluster, rep *Report, recs []Record) {
	cp.judgeCover(c, rep, recs)
}

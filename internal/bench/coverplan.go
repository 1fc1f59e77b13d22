package bench

import (
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/schedule"
)

// CoverPlan is `bench --schedule cover`'s plan as the runner
// (internal/benchrun) sees it: its rounds, the localiser's next round and
// verdict over the records so far, and what was seen around the run
// (fabric scans, host snapshots) for the judgement. It runs nothing.
type CoverPlan struct{ cp *coverPlan }

// NewCoverPlan plans the cover rounds over the fabric read from src (its
// routes) and maps every CA to the cluster node its description names.
func NewCoverPlan(f *route.Fabric, src string, c *cluster.Cluster) (*CoverPlan, error) {
	cp, err := newCoverPlan(f, src, c)
	if err != nil {
		return nil, err
	}
	return &CoverPlan{cp}, nil
}

// Rounds are the cover rounds, as pairs of cluster node indices.
func (p *CoverPlan) Rounds() [][]Pair { return p.cp.rounds }

// Pairs turns a round of the localiser (CA indices) into cluster node
// pairs.
func (p *CoverPlan) Pairs(r []schedule.IPair) []Pair { return p.cp.pairs(r) }

// Locator is the localiser fed with the records so far.
func (p *CoverPlan) Locator(c *cluster.Cluster, recs []Record, rep *Report) *schedule.Locator {
	return p.cp.locator(c, recs, rep)
}

// Fault is the cable or node a localiser's verdict names, or nil.
func (p *CoverPlan) Fault(v schedule.Verdict) *Fault { return p.cp.fault(v) }

// Scanned records the fabric scans before and after the run (or why
// they failed): the named cable's counters are a second witness.
func (p *CoverPlan) Scanned(before, after *fabric.Snapshot, err error) {
	p.cp.before, p.cp.after, p.cp.scanErr = before, after, err
}

// WithHosts gives the nodes' host snapshots, for the named cable's PHY
// facts.
func (p *CoverPlan) WithHosts(hosts []*host.Snapshot) { p.cp.hosts = hosts }

// Judge adds the localiser's verdict over recs to the report.
func (p *CoverPlan) Judge(c *cluster.Cluster, rep *Report, recs []Record) {
	p.cp.judgeCover(c, rep, recs)
}

package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
)

// ClusterView is the whole cluster report, computed once from the inputs:
// the verdict, then per node, fabric and bench.
type ClusterView struct {
	Verdict Verdict
	Counts  Counts
	Sources []string
	Skipped []string
	Derived []string
	Nodes   []NodeView // worst first
	Fleet   FindingsView
	Fabrics []FabricView
	Benches []BenchView
}

// Verdict states whether the cluster is ready and the findings that decide it.
type Verdict struct {
	State    VerdictState
	Why      string
	Deciding []Decider // one per check, the first few
	More     int       // deciding checks not listed
}

// Decider is a finding that decides the verdict, standing for every
// finding of the same check (Others more).
type Decider struct {
	check.Finding
	Others int
}

// VerdictState is ready, not ready, or cannot tell.
type VerdictState string

// Verdict states. Unknown is never ready: a check that could not read its
// inputs leaves the cluster unproven.
const (
	Ready    VerdictState = "ready"
	NotReady VerdictState = "not ready"
	Unproven VerdictState = "unproven"
)

// decidingShown is how many deciding findings the top of a report lists.
const decidingShown = 6

// NodeView is one host: its findings and, when its snapshot was given, its
// locality map and GPU↔NIC matrix.
type NodeView struct {
	Name     string
	Summary  string // "2 CPU packages, 8 GPUs, 8 RDMA devices · kernel 6.8"
	Findings FindingsView
	Locality []LocalityRow
	Affinity *AffinityView
}

// FabricView is one fabric scan.
type FabricView struct {
	Summary     string // "3 switch(es), 8 CA(s), 12 link(s), 40 port(s)"
	CollectedAt string
	SMs         []SMRow
	SMError     string
	Links       []LinkRow // worst first
	Degraded    int       // links with a problem
	Findings    FindingsView
	Errors      []string
}

// SMRow is one subnet manager.
type SMRow struct {
	Name     string
	LID      int
	State    string
	Priority int
	Outcome  check.Outcome // MASTER pass, others unknown
}

// LinkRow is one cable.
type LinkRow struct {
	Name     string
	A, B     string
	Now      string // "4X QDR 40 Gb/s"
	RateGbps float64
	CouldBe  string // what both ends support, when more than now
	Problems []string
	Outcome  check.Outcome // the worst finding naming the link or its ports; pass if none
}

// NewClusterView judges and lays out the inputs once for every renderer.
func NewClusterView(in *Inputs) *ClusterView {
	v := &ClusterView{Sources: in.Sources, Skipped: in.Skipped, Derived: in.Derived, Counts: CountOf(in.Findings)}
	v.Verdict = verdictOf(in.Findings, v.Counts)

	var hostFs, fleet []check.Finding
	for _, f := range in.Findings {
		switch {
		case strings.HasPrefix(f.Check, "fabric.") || strings.HasPrefix(f.Check, "bench."):
		case f.Host != "":
			hostFs = append(hostFs, f)
		default:
			fleet = append(fleet, f)
		}
	}
	byName := map[string]*host.Snapshot{}
	for _, h := range hostcheck.Latest(in.Hosts) {
		byName[h.Hostname] = h // the rules judged each host's newest snapshot too
	}
	names := map[string]bool{}
	for n := range byName {
		names[n] = true
	}
	for _, f := range hostFs {
		names[f.Host] = true
	}
	for n := range names {
		nv := NodeView{Name: cmp.Or(n, "(unnamed host)")}
		var fs []check.Finding
		for _, f := range hostFs {
			if f.Host == n {
				fs = append(fs, f)
			}
		}
		nv.Findings = NewFindingsView(fs)
		if s := byName[n]; s != nil {
			nv.Summary = hostSummary(s)
			nv.Locality = Locality(s)
			nv.Affinity = Affinity(s)
		} else {
			nv.Summary = "no snapshot given: findings only"
		}
		v.Nodes = append(v.Nodes, nv)
	}
	slices.SortFunc(v.Nodes, func(a, b NodeView) int {
		ca, cb := a.Findings.Counts, b.Findings.Counts
		return cmp.Or(cmp.Compare(cb.Fail, ca.Fail), cmp.Compare(cb.Warn, ca.Warn), cmp.Compare(cb.Unknown, ca.Unknown), cmp.Compare(a.Name, b.Name))
	})

	var fabricFs, benchFs []check.Finding
	for _, f := range in.Findings {
		if strings.HasPrefix(f.Check, "fabric.") {
			fabricFs = append(fabricFs, f)
		}
		if strings.HasPrefix(f.Check, "bench.") {
			benchFs = append(benchFs, f)
		}
	}
	for _, s := range in.Fabrics {
		v.Fabrics = append(v.Fabrics, newFabricView(s, fabricFs))
	}
	if len(in.Fabrics) == 0 && len(fabricFs) > 0 {
		v.Fabrics = append(v.Fabrics, FabricView{Summary: "fabric check results without the scan", Findings: NewFindingsView(fabricFs)})
	}
	var unmatched []check.Finding
	v.Benches, unmatched = newBenchViews(in.Bench, benchFs)
	// Bench findings about no pair or node of the results are never lost.
	v.Fleet = NewFindingsView(append(fleet, unmatched...))
	return v
}

func verdictOf(fs []check.Finding, c Counts) Verdict {
	pick := func(o check.Outcome) []check.Finding {
		var out []check.Finding
		for _, f := range fs {
			if f.Outcome == o {
				out = append(out, f)
			}
		}
		return out
	}
	var v Verdict
	var deciding []check.Finding
	switch {
	case c.Fail > 0:
		v.State, deciding = NotReady, pick(check.Fail)
		v.Why = fmt.Sprintf("%d check(s) failed", c.Fail)
	case c.Unknown > 0:
		v.State, deciding = Unproven, pick(check.Unknown)
		v.Why = fmt.Sprintf("nothing failed, but %d check(s) could not be judged: unknown is not pass", c.Unknown)
	case c.Total() == 0:
		v.State, v.Why = Unproven, "nothing was checked"
	default:
		v.State = Ready
		v.Why = fmt.Sprintf("%d check(s) passed, none failed or unknown", c.Pass)
		if c.Warn > 0 {
			v.Why += fmt.Sprintf("; %d warning(s) to read", c.Warn)
		}
	}
	// One line per check, so one bad pattern (eleven slow pairs) does not
	// hide the others.
	var ds []Decider
	at := map[string]int{}
	for _, f := range deciding {
		if i, ok := at[f.Check]; ok {
			ds[i].Others++
			continue
		}
		at[f.Check] = len(ds)
		ds = append(ds, Decider{Finding: f})
	}
	if len(ds) > decidingShown {
		v.More = len(ds) - decidingShown
		ds = ds[:decidingShown]
	}
	v.Deciding = ds
	return v
}

func hostSummary(s *host.Snapshot) string {
	pk, cores, threads := cpuCounts(s)
	parts := []string{fmt.Sprintf("%d package(s), %d cores, %d threads, %d NUMA node(s)", pk, cores, threads, len(s.NUMANodes)),
		fmt.Sprintf("%d GPU(s), %d RDMA device(s)", len(s.GPUs), len(s.RDMADevices))}
	if s.Kernel.Release != "" {
		parts = append(parts, "kernel "+s.Kernel.Release)
	}
	parts = append(parts, "source "+s.Source)
	return strings.Join(parts, " · ")
}

func newFabricView(s *fabric.Snapshot, fs []check.Finding) FabricView {
	types := map[fabric.NodeType]int{}
	for _, n := range s.Nodes {
		types[n.Type]++
	}
	links := s.Links()
	names := s.Names()
	v := FabricView{
		Summary:     fmt.Sprintf("%d switch(es), %d CA(s), %d link(s), %d port(s)", types[fabric.Switch], types[fabric.CA], len(links), len(s.Ports)),
		CollectedAt: s.CollectedAt.Format("2006-01-02 15:04 MST"),
		SMError:     s.SMQueryError,
		Errors:      s.Errors,
	}
	byLID := map[int]string{}
	for _, p := range s.Ports {
		if p.LID > 0 {
			byLID[p.LID] = names.Node(p.NodeGUID)
		}
	}
	for _, sm := range s.SMs {
		o := check.Unknown // DISCOVERING, NOTACTIVE: fabric.sm judges them
		if sm.State == "MASTER" || sm.State == "STANDBY" {
			o = check.Pass
		}
		v.SMs = append(v.SMs, SMRow{Name: cmp.Or(byLID[sm.LID], sm.GUID.String()), LID: sm.LID, State: sm.State, Priority: sm.Priority, Outcome: o})
	}
	for _, l := range links {
		r := LinkRow{Name: names.Link(l), A: names.PortOf(l.A), B: names.PortOf(l.B), RateGbps: l.A.RateGbps, Outcome: check.Pass,
			Now:     fmt.Sprintf("%s %s %g Gb/s", l.A.Width, l.A.Speed, l.A.RateGbps),
			CouldBe: strings.TrimSpace(cmp.Or(l.A.CouldBeWidth, l.B.CouldBeWidth) + " " + cmp.Or(l.A.CouldBeSpeed, l.B.CouldBeSpeed))}
		for _, f := range fs {
			if f.Outcome == check.Pass || (f.Subject != r.Name && f.Subject != r.A && f.Subject != r.B) {
				continue
			}
			r.Problems = append(r.Problems, f.Check+": "+f.Message)
			if f.Outcome.Rank() < r.Outcome.Rank() {
				r.Outcome = f.Outcome
			}
		}
		if r.Outcome != check.Pass || r.CouldBe != "" {
			v.Degraded++
		}
		v.Links = append(v.Links, r)
	}
	slices.SortStableFunc(v.Links, func(a, b LinkRow) int {
		return cmp.Or(cmp.Compare(a.Outcome.Rank(), b.Outcome.Rank()), cmp.Compare(degradedRank(a), degradedRank(b)), cmp.Compare(a.RateGbps, b.RateGbps), cmp.Compare(a.Name, b.Name))
	})
	// All fabric findings, those on links included: with several scans,
	// findings cannot be told apart by subject alone.
	v.Findings = NewFindingsView(fs)
	return v
}

// degradedRank puts links that could run faster before those that cannot.
func degradedRank(l LinkRow) int {
	if l.CouldBe != "" {
		return 0
	}
	return 1
}

// BenchView is one bench test over the cluster (one engine and test).
type BenchView struct {
	Engine, Test string
	Latency      bool // latency results: the matrix holds microseconds
	Nodes        []string
	// Pairs has one cell per unordered pair of nodes (Row < Col), measured
	// or not, in row order: the heatmap's cells.
	Pairs []PairCell
	// RelativeOnly is set when no result had a link ceiling: shares are of
	// the best pair, not of what the link can carry.
	RelativeOnly bool
	Counts       map[string]int // healthy, degraded, broken, error, unjudged, missing
	Scores       []NodeScore    // worst first
	Retests      []RetestRow
	Sweeps       []Sweep
	Findings     FindingsView
}

// PairCell is one pair's first measurement.
type PairCell struct {
	Row, Col    int
	A, B        string
	Measured    bool
	Gbps        float64
	Share       float64 // of the link's ceiling (or of the best pair when RelativeOnly)
	CeilingGbps float64
	Verdict     string // healthy, degraded, broken, error, unjudged
	P50Us       float64
	P99Us       float64
	P999Us      float64
	Text        string // the result's own sentence, or its error
}

// NodeScore is a node's mean share over its pairs.
type NodeScore struct {
	Node  string
	Share float64 // mean; a failed pair counts 0
	Pairs int
	Worst string // the node's worst pair
}

// RetestRow is one suspect retested against a known-good node.
type RetestRow struct {
	Suspect, KnownGood string
	Fine               bool
	Text               string
}

// Sweep is one pair's message-size sweep.
type Sweep struct {
	Pair        string
	Points      []SweepPoint
	CeilingGbps float64 // 0 when unknown
}

// SweepPoint is one message size.
type SweepPoint struct {
	Bytes int64
	Gbps  float64
}

// newBenchViews makes one view per engine and test, each with the
// findings about its pairs (subject "a ↔ b", either order) and retested
// nodes; it returns the bench findings that match none.
func newBenchViews(rs []BenchResult, fs []check.Finding) ([]BenchView, []check.Finding) {
	type key struct{ engine, test string }
	var order []key
	groups := map[key][]BenchResult{}
	for _, r := range rs {
		k := key{r.Engine, r.Test}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	matched := make([]bool, len(fs))
	var out []BenchView
	for _, k := range order {
		v := newBenchView(groups[k])
		v.Engine, v.Test = k.engine, k.test
		var mine []check.Finding
		for i, f := range fs {
			for _, r := range groups[k] {
				if f.Subject == r.A+" ↔ "+r.B || f.Subject == r.B+" ↔ "+r.A || (r.Retest && f.Subject == r.B) {
					mine, matched[i] = append(mine, f), true
					break
				}
			}
		}
		v.Findings = NewFindingsView(mine)
		out = append(out, v)
	}
	var rest []check.Finding
	for i, f := range fs {
		if !matched[i] {
			rest = append(rest, f)
		}
	}
	return out, rest
}

func newBenchView(rs []BenchResult) BenchView {
	var v BenchView
	var first []BenchResult
	for _, r := range rs {
		if r.Retest {
			v.Retests = append(v.Retests, RetestRow{Suspect: r.B, KnownGood: r.A, Fine: r.Error == "" && r.Verdict == bench.Healthy, Text: cmp.Or(r.Error, r.Judgment)})
			continue
		}
		first = append(first, r)
		for _, n := range []string{r.A, r.B} {
			if !slices.Contains(v.Nodes, n) {
				v.Nodes = append(v.Nodes, n)
			}
		}
	}
	slices.Sort(v.Nodes)
	idx := map[string]int{}
	for i, n := range v.Nodes {
		idx[n] = i
	}
	// The first measurement of each unordered pair; a second direction
	// keeps the worse.
	type pk struct{ i, j int }
	got := map[pk]BenchResult{}
	for _, r := range first {
		i, j := idx[r.A], idx[r.B]
		if i > j {
			i, j = j, i
		}
		if prev, ok := got[pk{i, j}]; !ok || worseResult(r, prev) {
			got[pk{i, j}] = r
		}
		if r.P50Us > 0 && r.Gbps == 0 {
			v.Latency = true
		}
	}
	best := 0.0
	anyCeiling := false
	for _, r := range got {
		best = max(best, r.Gbps)
		if r.Ratio > 0 {
			anyCeiling = true
		}
	}
	v.RelativeOnly = !v.Latency && !anyCeiling
	v.Counts = map[string]int{}
	for i := range v.Nodes {
		for j := i + 1; j < len(v.Nodes); j++ {
			c := PairCell{Row: i, Col: j, A: v.Nodes[i], B: v.Nodes[j]}
			r, ok := got[pk{i, j}]
			if ok {
				c.Measured, c.Gbps, c.Share, c.P50Us, c.P99Us, c.P999Us = true, r.Gbps, r.Ratio, r.P50Us, r.P99Us, r.P999Us
				c.A, c.B = r.A, r.B
				if r.Ratio > 0 {
					c.CeilingGbps = r.Gbps / r.Ratio
				} else if v.RelativeOnly && best > 0 {
					c.Share = r.Gbps / best
				}
				c.Verdict = cmp.Or(r.Verdict, "unjudged")
				if r.Error != "" {
					c.Verdict, c.Share = "error", 0
				}
				if v.Latency && r.Error == "" {
					c.Verdict = "measured"
				}
				c.Text = cmp.Or(r.Error, r.Judgment)
				v.Counts[c.Verdict]++
			} else {
				c.Verdict = "missing"
				v.Counts["missing"]++
			}
			v.Pairs = append(v.Pairs, c)
		}
	}
	if !v.Latency {
		v.Scores = scores(v.Nodes, v.Pairs)
	}
	for _, r := range first {
		if len(r.Rows) < 2 {
			continue
		}
		s := Sweep{Pair: r.A + " ↔ " + r.B}
		if r.Ratio > 0 {
			s.CeilingGbps = r.Gbps / r.Ratio
		}
		for _, row := range r.Rows {
			s.Points = append(s.Points, SweepPoint{Bytes: row.Bytes, Gbps: cmp.Or(row.AvgGbps, row.PeakGbps)})
		}
		v.Sweeps = append(v.Sweeps, s)
	}
	return v
}

// worseResult orders two measurements of one pair: an error, then the
// lower share, then the lower rate.
func worseResult(a, b BenchResult) bool {
	if (a.Error != "") != (b.Error != "") {
		return a.Error != ""
	}
	if a.Ratio != b.Ratio {
		return a.Ratio < b.Ratio
	}
	return a.Gbps < b.Gbps
}

func scores(nodes []string, pairs []PairCell) []NodeScore {
	var out []NodeScore
	for _, n := range nodes {
		s := NodeScore{Node: n}
		sum, worst := 0.0, math.Inf(1)
		for _, c := range pairs {
			if !c.Measured || (c.A != n && c.B != n) {
				continue
			}
			s.Pairs++
			sum += c.Share
			if c.Share < worst {
				worst = c.Share
				s.Worst = c.A + " ↔ " + c.B
			}
		}
		if s.Pairs > 0 {
			s.Share = sum / float64(s.Pairs)
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b NodeScore) int { return cmp.Compare(a.Share, b.Share) })
	return out
}

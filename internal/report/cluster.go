package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/rules"
)

// ClusterView is the whole cluster report, computed once from the inputs:
// the verdict, then per node, fabric and bench.
type ClusterView struct {
	Verdict Verdict
	Counts  Counts
	// NodeCount is every node any input names: hosts, and the nodes of
	// every bench test.
	NodeCount int
	Sources   []string
	Skipped   []string
	// Repeated names inputs given more than once (a file twice, copies of
	// one snapshot), each once with its count.
	Repeated []string
	Derived  []string
	Nodes    []NodeView // worst first
	Fleet    FindingsView
	Fabrics  []FabricView
	Benches  []BenchView
	// Compare is the first results log given against the second, when
	// exactly two runs of the same test were given (rdmalab compare's
	// result); two logs of different tests are not two runs of one
	// measurement, and are not compared.
	Compare *compare.Result
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
	// PHY is its ends' physical layer, as the findings naming it carry
	// it (phycheck: one line per end, "no PHY evidence" when none).
	PHY []check.Evidence
}

// NewClusterView lays out inputs already judged (intake.Load) once for
// every renderer.
func NewClusterView(in *intake.Inputs) *ClusterView {
	v := &ClusterView{Sources: in.Sources, Skipped: in.Skipped, Derived: in.Derived, Counts: CountOf(in.Findings), Compare: in.Compare}
	v.Verdict = verdictOf(in.Findings, v.Counts)
	for _, s := range in.Skipped {
		if strings.Contains(s, " times; read once") {
			v.Repeated = append(v.Repeated, s)
		}
	}
	for _, f := range in.Findings {
		if f.Check == hostcheck.DuplicateID {
			v.Repeated = append(v.Repeated, f.Host+": "+f.Message)
		}
	}
	if v.Verdict.State == Ready {
		v.Verdict = provenHosts(v.Verdict, hostcheck.Latest(in.Hosts), in.Findings)
	}

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
		v.Fabrics = append(v.Fabrics, newFabricView(s, fabricFs, in.Hosts))
	}
	if len(in.Fabrics) == 0 && len(fabricFs) > 0 {
		v.Fabrics = append(v.Fabrics, FabricView{Summary: "fabric check results without the scan", Findings: NewFindingsView(fabricFs)})
	}
	var unmatched []check.Finding
	v.Benches, unmatched = newBenchViews(in.Bench, benchFs)
	// Bench findings about no pair or node of the results are never lost.
	v.Fleet = NewFindingsView(append(fleet, unmatched...))
	for _, b := range v.Benches {
		for _, n := range b.Nodes {
			names[n] = true
		}
	}
	v.NodeCount = len(names)
	return v
}

func verdictOf(fs []check.Finding, c Counts) Verdict {
	// The one verdict rule (rules.Verdict), as every command decides it;
	// the page lists the findings that decided it.
	cv := rules.Verdict(rules.Report, fs)
	var v Verdict
	v.Why = cv.Reason
	if cv.Answer != "" {
		v.Why += "; to answer it: " + cv.Answer
	}
	var deciding []check.Finding
	switch cv.Status {
	case check.Failing:
		v.State = NotReady
		for _, f := range fs {
			if f.Outcome == check.Fail {
				deciding = append(deciding, f)
			}
		}
	case check.Unproven:
		v.State = Unproven
		for _, f := range fs {
			if f.Outcome == check.Unknown && rules.Decides(f.Check) {
				deciding = append(deciding, f)
			}
		}
	default:
		v.State = Ready
		if c.Warn+c.Unknown > 0 {
			v.Why += fmt.Sprintf("; %d warning(s) and %d unknown(s) that decide nothing, to read", c.Warn, c.Unknown)
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

// provenHosts keeps "ready" only when every host given was proven to have
// RDMA (rdma.present passed): findings that all passed on a host with no
// RDMA device say nothing about the cluster it should serve.
func provenHosts(v Verdict, hosts []*host.Snapshot, fs []check.Finding) Verdict {
	var unproven []string
	for _, h := range hosts {
		if !slices.ContainsFunc(fs, func(f check.Finding) bool {
			return f.Check == "rdma.present" && f.Host == h.Hostname && f.Outcome == check.Pass
		}) {
			unproven = append(unproven, h.Hostname)
		}
	}
	if len(unproven) == 0 {
		return v
	}
	return Verdict{State: Unproven, Why: fmt.Sprintf("nothing failed, but %d host(s) were not proven to have RDMA (rdma.present did not pass): %s", len(unproven), strings.Join(unproven, ", "))}
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

func newFabricView(s *fabric.Snapshot, fs []check.Finding, hosts []*host.Snapshot) FabricView {
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
			if f.Outcome == check.Pass || !onLink(f.Subject, r) {
				continue
			}
			r.Problems = append(r.Problems, f.Check+": "+f.Message)
			for _, e := range f.Evidence {
				if strings.HasPrefix(e.What, phycheck.EvidencePrefix) && !slices.Contains(r.PHY, e) {
					r.PHY = append(r.PHY, e)
				}
			}
			if f.Outcome.Rank() < r.Outcome.Rank() {
				r.Outcome = f.Outcome
			}
		}
		// The hosts' own PHY facts about a host end (saved outputs in
		// the snapshots given beside the scan), when a finding did not
		// bring them.
		if facts := phycheck.HostFacts(hosts); len(facts) > 0 {
			for _, p := range []*fabric.Port{l.A, l.B} {
				guid := p.PortGUID
				if guid == 0 {
					guid = p.NodeGUID
				}
				end := phycheck.Cable([]phycheck.End{phycheck.EndOf(hosts, guid, p.Num, names.PortOf(p))}, facts)
				if len(end[0].Ports) == 0 {
					continue
				}
				for _, e := range phycheck.Evidence(end) {
					if !slices.ContainsFunc(r.PHY, func(x check.Evidence) bool { return x.What == e.What }) {
						r.PHY = append(r.PHY, e)
					}
				}
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

// onLink: a finding's subject is the link, one of its ports, or a
// counter of one of them ("lab02 HCA-1 port 1 SymbolErrorCounter").
func onLink(subject string, r LinkRow) bool {
	for _, s := range []string{r.Name, r.A, r.B} {
		if s != "" && (subject == s || strings.HasPrefix(subject, s+" ")) {
			return true
		}
	}
	return false
}

// degradedRank puts links that could run faster before those that cannot.
func degradedRank(l LinkRow) int {
	if l.CouldBe != "" {
		return 0
	}
	return 1
}

// BenchView is one judged bench test over the cluster (one engine and
// test): the directed matrix, each node's two sides, the suspects.
type BenchView struct {
	Engine, Test string
	Latency      bool // the matrix holds microseconds
	Source       string
	// Against says what the verdicts were judged against, in words.
	Against string
	// RateDeclared: bandwidth colours are shares of what the link can
	// carry; otherwise of the peers' median.
	RateDeclared bool
	Link         string
	MedianValue  float64 // Gb/s, or p50 µs
	Nodes        []string
	// Cells has one cell per ordered pair of different nodes (row sends,
	// column receives), measured or not, in row order: the heatmap's cells.
	Cells     []DirCell
	Counts    map[string]int // good, bad, above ceiling, failed, timed out, not measured, missing
	Summaries []bench.NodeSummary
	Suspects  []SuspectRow
	Good      []string // nodes healthy both ways, best first
	Findings  FindingsView

	// Cover is --schedule cover's verdict and every link's measurements.
	Cover *bench.Cover
}

// Cell states.
const (
	CellGood        = "good"
	CellBad         = "bad"
	CellNoisy       = "noisy" // short, but inside the run's own noise: measure again
	CellAbove       = "above ceiling"
	CellFailed      = "failed"
	CellTimedOut    = "timed out"
	CellNotMeasured = "not measured"
	CellMissing     = "missing" // no record at all
)

// CellStates lists cell states in the order counts are printed.
var CellStates = []string{CellGood, CellBad, CellNoisy, CellAbove, CellFailed, CellTimedOut, CellNotMeasured, CellMissing}

// DirCell is one direction's final measurement.
type DirCell struct {
	Row, Col int
	From, To string
	State    string
	Gbps     float64
	P50Us    float64
	P99Us    float64
	P999Us   float64
	// Share is what the colour encodes: of the link's ceiling when a rate
	// was declared, else of the peers' median (of the cluster's median
	// when the link class has too few directions for one); for latency,
	// p50 over the peers' median (higher is worse).
	Share        float64
	ShareOf      string // "link ceiling", "peers' median", "cluster median"
	PeerShare    float64
	CeilingShare float64
	CeilingGbps  float64
	Samples      int
	Text         string // why it is bad, its error, or why it was not measured
}

// Failed is true when the direction has no measurement.
func (c DirCell) Failed() bool {
	switch c.State {
	case CellFailed, CellTimedOut, CellNotMeasured, CellMissing:
		return true
	}
	return false
}

// SuspectRow is a node one of whose sides fails most of its directions,
// with its retests against nodes healthy both ways.
type SuspectRow struct {
	Node, Side string
	Bad, Total int
	Confirmed  string // yes, no, mixed, "" (not retested)
	Retests    []string
}

// newBenchViews makes one view per judged test, each with its own
// findings; it returns the bench findings that belong to no test (from
// documents without a payload, or findings files from before envelopes).
func newBenchViews(runs []intake.BenchRun, fs []check.Finding) ([]BenchView, []check.Finding) {
	mine := map[string]int{}
	var out []BenchView
	for _, r := range runs {
		v := newBenchView(r)
		for _, f := range r.Findings {
			mine[findingKey(f)]++
		}
		out = append(out, v)
	}
	var rest []check.Finding
	for _, f := range fs {
		if k := findingKey(f); mine[k] > 0 {
			mine[k]--
			continue
		}
		rest = append(rest, f)
	}
	return out, rest
}

func findingKey(f check.Finding) string {
	return string(f.Outcome) + "\x00" + f.Check + "\x00" + f.Host + "\x00" + f.Subject + "\x00" + f.Message
}

func newBenchView(r intake.BenchRun) BenchView {
	rep := r.Report
	v := BenchView{Engine: rep.Engine, Test: rep.Test, Latency: rep.Latency, Source: r.Source, RateDeclared: rep.RateDeclared,
		Link: rep.Link, MedianValue: rep.MedianValue, Summaries: rep.Nodes, Good: rep.Good, Findings: NewFindingsView(r.Findings)}
	v.Cover = rep.Cover
	switch {
	case rep.Latency:
		v.Against = "the peers' median p50 latency of each link class"
	case rep.RateDeclared:
		v.Against = "what " + rep.Link + " can carry, and the peers' median of each link class"
	default:
		v.Against = "the peers' median of each link class (no link rate declared)"
	}
	if r.FromLog {
		v.Against += "; judged by this report from the results log, default thresholds"
	}
	for _, n := range rep.Nodes {
		v.Nodes = append(v.Nodes, n.Name)
	}
	// Nodes named only by directions (a document without node summaries).
	for _, d := range rep.Directions {
		for _, n := range []string{d.From, d.To} {
			if !slices.Contains(v.Nodes, n) {
				v.Nodes = append(v.Nodes, n)
			}
		}
	}
	idx := map[string]int{}
	for i, n := range v.Nodes {
		idx[n] = i
	}
	byDir := map[[2]int]bench.Direction{}
	for _, d := range rep.Directions {
		byDir[[2]int{idx[d.From], idx[d.To]}] = d
	}
	v.Counts = map[string]int{}
	for i := range v.Nodes {
		for j := range v.Nodes {
			if i == j {
				continue
			}
			c := DirCell{Row: i, Col: j, From: v.Nodes[i], To: v.Nodes[j]}
			if d, ok := byDir[[2]int{i, j}]; ok {
				c = dirCell(rep, d, c)
			} else {
				c.State, c.Text = CellMissing, "no record of this direction"
			}
			v.Counts[c.State]++
			v.Cells = append(v.Cells, c)
		}
	}
	for _, s := range rep.Suspects {
		row := SuspectRow{Node: s.Node, Side: s.Side, Bad: s.Bad, Total: s.Total, Confirmed: s.Confirmed}
		for _, t := range s.Retests {
			res := rep.FormatValue(valueOf(rep, bench.Direction{Record: t}))
			switch {
			case t.NotMeasured != "":
				res = "not measured: " + t.NotMeasured
			case t.TimedOut:
				res = "timed out"
			case t.Error != "":
				res = "failed: " + t.Error
			}
			row.Retests = append(row.Retests, t.From+" → "+t.To+": "+res)
		}
		v.Suspects = append(v.Suspects, row)
	}
	return v
}

func dirCell(rep *bench.Report, d bench.Direction, c DirCell) DirCell {
	c.Gbps, c.P50Us, c.P99Us, c.P999Us = d.Gbps, d.P50Us, d.P99Us, d.P999Us
	c.PeerShare, c.CeilingShare, c.CeilingGbps = d.Share, d.CeilingShare, d.CeilingGbps
	c.Samples = max(len(d.SamplesGbps), len(d.SamplesP50Us))
	switch {
	case d.NotMeasured != "":
		c.State, c.Text = CellNotMeasured, d.NotMeasured
		return c
	case d.TimedOut:
		c.State, c.Text = CellTimedOut, cmp.Or(d.Error, "timed out (both ends killed)")
		return c
	case d.Error != "":
		c.State, c.Text = CellFailed, d.Error
		return c
	}
	c.State, c.Text = CellGood, d.Why
	// A cell is good only when nothing holds it short of its ceiling:
	// above AboveCeiling of it is a measurement error (never good, even
	// when the whole run overruled the declared rate), and below Healthy
	// it is not healthy, even when the verdict is the whole cluster's
	// (bench.link.below-ceiling) rather than the direction's. The
	// thresholds are the one table (cluster.DefaultThresholds) the legend
	// prints.
	t := cluster.DefaultThresholds
	switch {
	case d.Bad:
		c.State = CellBad
	case d.Above || (d.CeilingGbps > 0 && d.CeilingShare > t.AboveCeiling):
		c.State = CellAbove
		c.Text = fmt.Sprintf("above what %s can carry (%.0f%% of %.2f Gb/s): a measurement error or a wrong rate, never good", d.Link, 100*d.CeilingShare, d.CeilingGbps)
	case d.Noisy:
		c.State, c.Text = CellNoisy, d.NoisyWhy
	case rep.RateDeclared && d.CeilingGbps > 0 && d.CeilingShare < t.Healthy:
		c.State = CellBad
		c.Text = fmt.Sprintf("%.0f%% of what %s can carry (%.2f Gb/s), below healthy (%.0f%%)", math.Floor(100*d.CeilingShare), d.Link, d.CeilingGbps, 100*t.Healthy)
	}
	v := valueOf(rep, d)
	switch {
	case rep.RateDeclared && d.CeilingGbps > 0:
		c.Share, c.ShareOf = d.CeilingShare, "link ceiling"
	case d.RefValue > 0:
		c.Share, c.ShareOf = d.Share, "peers' median"
	case rep.MedianValue > 0:
		c.Share, c.ShareOf = v/rep.MedianValue, "cluster median"
	}
	return c
}

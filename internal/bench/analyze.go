package bench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// Analyze judges the final state of every direction of one test: against
// what the link can carry when a rate is declared, and always against the
// median of the same link class; it names the nodes whose send or receive
// side fails most of their directions, reads their retests, and returns
// findings. Later records of a direction replace earlier ones, so a
// resumed log is judged once, from its final state.
func Analyze(c *cluster.Cluster, engine, test string, latency bool, recs []Record, out map[string]string, leftovers []string) *Report {
	return AnalyzeRun(c, engine, test, latency, recs, out, nil, leftovers)
}

// AnalyzeRun is Analyze with the directions not measured because a node
// was out, counted per node (Runner.Skipped).
func AnalyzeRun(c *cluster.Cluster, engine, test string, latency bool, recs []Record, out map[string]string, skipped map[string]int, leftovers []string) *Report {
	a := &analysis{
		skipped: skipped,
		c:       c,
		t:       c.Thresholds,
		idx:     c.Index(),
		rep:     &Report{Engine: engine, Test: test, Latency: latency, Out: out, Leftovers: leftovers, layer: string(c.Expect().Layer)},
	}
	a.selectRecords(recs)
	a.measureDirections()
	a.judgeRun()
	a.measureCentres()
	for i := range a.rep.Directions {
		a.judgeDirection(&a.rep.Directions[i])
	}
	a.summarizeNodes()
	a.nameSuspects()
	a.nameKnownGood()
	a.readSuspectRetests()
	a.rep.Findings = append(a.findings(), runFindings(a.rep, a.lat)...)
	return a.rep
}

// analysis is the state of one Analyze run, filled step by step.
type analysis struct {
	c   *cluster.Cluster
	t   cluster.Thresholds
	idx map[string]int
	rep *Report

	retests    []Record          // suspects' retests, latest phase only
	dirRetests map[string]Record // a lone bad direction measured again

	byClass    map[string][]float64 // measured values per link class
	classNoise map[string]float64
	all        []float64 // every measured value
	shares     []float64 // every measured share of its link's ceiling

	lat                       *latencyRow
	medianShare               float64
	rateSuspect, clusterBelow bool
	useAbsolute               bool
	// ceilingBelieved: a rate was declared and the run does not overrule
	// it, so a direction above it is a measurement error and every
	// direction is held to it.
	ceilingBelieved bool

	suspectSide map[string]bool // "node|side" of each suspect
	ownBad      map[string]int
	// unjudged are directions nothing judged: no ceiling, no latency
	// table, fewer than three peers.
	unjudged []string
	skipped  map[string]int     // node → directions not measured, it being out
	refs     map[string]float64 // class → its median, once
}

// selectRecords keeps this test's records between known nodes: the final
// state of each direction, and the retests of the latest retest phase.
func (a *analysis) selectRecords(recs []Record) {
	engine, test := a.rep.Engine, a.rep.Test
	final := map[string]Record{}
	a.dirRetests = map[string]Record{}
	// Only the latest retest phase counts (after the last measurement):
	// a resumed run's retests replace the earlier run's, never add to them.
	lastPlain := -1
	for i, r := range recs {
		if !r.Retest && r.Engine == engine && r.Test == test {
			lastPlain = i
		}
	}
	for i, r := range recs {
		if r.Retest && i < lastPlain {
			continue
		}
		if r.Engine != engine || r.Test != test {
			continue
		}
		if _, ok := a.idx[r.From]; !ok {
			continue
		}
		if _, ok := a.idx[r.To]; !ok {
			continue
		}
		if r.Retest && r.Suspect == "" {
			a.dirRetests[r.DirKey()] = r
			continue
		}
		if r.Retest {
			a.retests = append(a.retests, r)
			continue
		}
		final[r.DirKey()] = r
	}
	for _, r := range final {
		a.rep.Directions = append(a.rep.Directions, Direction{Record: r})
	}
	slices.SortFunc(a.rep.Directions, func(x, y Direction) int {
		return cmp.Or(cmp.Compare(a.idx[x.From], a.idx[y.From]), cmp.Compare(a.idx[x.To], a.idx[y.To]))
	})
}

// absurdValue says why a measured value is no measurement (not finite,
// not positive, a bandwidth above what any link carries), or "".
func absurdValue(v float64, latency bool) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
		return fmt.Sprintf("%v is no measurement", v)
	case !latency && v > linkrate.FastestGbps():
		return fmt.Sprintf("no measurement: more than any link carries (%.0f Gb/s, 12X XDR)", linkrate.FastestGbps())
	}
	return ""
}

// beyondNoise is the share of its peers' centre below which a direction
// is bad whatever the run's noise.
const beyondNoise = 0.5

// value is what a record is judged by: Gb/s, or p50 µs for latency.
func (a *analysis) value(r Record) float64 {
	return valueOf(r, a.rep.Latency)
}

// class is the link class of a record's direction: its two nodes'
// classes, in order, so both directions of a pair share one.
func (a *analysis) class(r Record) string {
	x, y := a.c.Nodes[a.idx[r.From]].Class, a.c.Nodes[a.idx[r.To]].Class
	if x > y {
		x, y = y, x
	}
	return x + "|" + y
}

// measureDirections fills each measured direction's ceiling and sample
// spread, and gathers every measured value.
func (a *analysis) measureDirections() {
	c, rep := a.c, a.rep
	declared := !rep.Latency && c.Resolved().RateGbps > 0
	rep.RateDeclared = declared
	for i := range rep.Directions {
		d := &rep.Directions[i]
		if d.Failed() {
			continue
		}
		v := a.value(d.Record)
		a.all = append(a.all, v)
		if declared {
			l := c.LinkFor(c.Nodes[a.idx[d.From]], c.Nodes[a.idx[d.To]])
			if d.MTUBytes > 0 {
				l.MTUBytes = d.MTUBytes // perftest's own MTU
			}
			d.CeilingGbps, d.Link = l.CeilingGbps(), l.Describe()
			d.CeilingShare = v / d.CeilingGbps
			a.shares = append(a.shares, d.CeilingShare)
		}
		if n := len(d.SamplesGbps) + len(d.SamplesP50Us); n > 1 {
			s := d.SamplesGbps
			if rep.Latency {
				s = d.SamplesP50Us
			}
			d.Spread = (slices.Max(s) - slices.Min(s)) / math.Max(Median(s), 1e-9)
		}
	}
}

// measureCentres gathers, per link class, the values a direction's peers
// are judged against, and each class's own spread. The centre is a median
// that no minority can move, and never above physics: when the declared
// ceiling is believed, a direction above AboveCeiling of it is a
// measurement error (a finding, never a peer) and the rest count at most
// at their ceiling, so no direction turns good because others got (or
// seemed) faster. The spread is twice the robust deviation of the class
// around its median (MAD × 1.4826 estimates σ), so one slow direction does
// not widen it, a noisy machine does.
func (a *analysis) measureCentres() {
	a.byClass = map[string][]float64{}
	for _, d := range a.rep.Directions {
		if d.Failed() {
			continue
		}
		v := a.value(d.Record)
		if absurdValue(v, a.rep.Latency) != "" {
			continue
		}
		if a.ceilingBelieved && d.CeilingGbps > 0 {
			if d.CeilingShare > a.t.AboveCeiling {
				continue
			}
			v = min(v, d.CeilingGbps)
		}
		a.byClass[a.class(d.Record)] = append(a.byClass[a.class(d.Record)], v)
	}
	a.classNoise = map[string]float64{}
	for k, vs := range a.byClass {
		if len(vs) < 3 {
			continue
		}
		m := Median(vs)
		dev := make([]float64, len(vs))
		for i, v := range vs {
			dev[i] = math.Abs(v - m)
		}
		a.classNoise[k] = 2 * 1.4826 * Median(dev) / math.Max(m, 1e-9)
	}
}

// judgeRun decides what the directions are judged against: the latency
// table, and the link's ceiling unless the whole run says the declared
// rate is wrong (above it) or the cause is cluster-wide (below healthy).
func (a *analysis) judgeRun() {
	c, rep := a.c, a.rep
	a.lat = latencyExpectation(c, rep.Engine, rep.Test, rep.Latency)
	rep.MedianValue = Median(a.all)
	declared := rep.RateDeclared
	if declared {
		rep.Link = c.Resolved().Describe()
	}
	a.medianShare = Median(a.shares)
	// Above the ceiling, the run overrules the declared rate only by a
	// real majority: with fewer than five directions a median is one or
	// two of them, and two artefacts must not lift a physical ceiling, so
	// there every direction must be above it.
	a.rateSuspect = declared && a.medianShare > a.t.AboveCeiling &&
		(len(a.shares) >= 5 || slices.Min(a.shares) > a.t.AboveCeiling)
	a.ceilingBelieved = declared && !a.rateSuspect
	if a.ceilingBelieved {
		// Under a believed ceiling, what is above it is a measurement
		// error: the cluster's level is the median of the rest, capped.
		var plausible []float64
		for _, s := range a.shares {
			if s <= a.t.AboveCeiling {
				plausible = append(plausible, min(s, 1))
			}
		}
		a.medianShare = Median(plausible)
		// A cluster-wide cause needs at least three directions to show
		// it; fewer are judged one by one against the ceiling.
		a.clusterBelow = len(plausible) >= 3 && a.medianShare < a.t.Healthy
	}
	a.useAbsolute = a.ceilingBelieved && !a.clusterBelow
}

// judgeDirection decides whether one measured direction is bad (with
// why), only noisy, or above its link's ceiling.
func (a *analysis) judgeDirection(d *Direction) {
	if d.Failed() {
		return
	}
	v := a.value(d.Record)
	ref := a.classRef(a.class(d.Record))
	d.RefValue = ref
	d.Noise = math.Max(d.Spread, a.classNoise[a.class(d.Record)])
	why, noisy := a.againstPeers(d, v)
	if w := absurdValue(v, a.rep.Latency); w != "" {
		why, noisy = []string{w}, nil
	}
	if a.lat != nil {
		if b := a.lat.BrokenUs * a.lat.trips; v > b {
			why = append(why, fmt.Sprintf("p50 above %.1f µs, which is broken, not slow, on one switch (%s)", b, a.lat.Source))
		}
	}
	if a.useAbsolute {
		w, n := a.againstCeiling(d, v)
		why, noisy = append(why, w...), append(noisy, n...)
	}
	// Above a believed ceiling is a measurement error, whatever else.
	d.Above = a.ceilingBelieved && d.CeilingGbps > 0 && d.CeilingShare > a.t.AboveCeiling
	d.Bad = len(why) > 0
	d.Why = strings.Join(why, "; ")
	d.Noisy = !d.Bad && len(noisy) > 0
	if d.Noisy {
		d.NoisyWhy = strings.Join(noisy, "; ")
	}
	if r, ok := a.dirRetests[d.DirKey()]; ok && d.Bad {
		d.Retest = &r
	}
	// Passing against nothing is no pass: with no rate declared, no
	// latency table and under three directions of its class, a direction
	// at a tenth of its link has no one to be told from.
	if !d.Bad && ref == 0 && !a.useAbsolute && !a.clusterBelow && a.lat == nil {
		a.unjudged = append(a.unjudged, d.From+" → "+d.To)
	}
}

// classRef is the median of a link class (0 under 3 directions), sorted
// once per class: per direction it made judging 120,000 directions
// quadratic.
func (a *analysis) classRef(class string) float64 {
	if ref, ok := a.refs[class]; ok {
		return ref
	}
	ref := 0.0
	if vs := a.byClass[class]; len(vs) >= 3 {
		ref = Median(vs)
	}
	if a.refs == nil {
		a.refs = map[string]float64{}
	}
	a.refs[class] = ref
	return ref
}

// againstPeers judges a direction's value v against the median of its
// link class (d.RefValue): why it is bad, or why it is only noisy.
func (a *analysis) againstPeers(d *Direction, v float64) (why, noisy []string) {
	ref, t := d.RefValue, a.t
	if ref <= 0 {
		return nil, nil
	}
	d.Share = v / ref
	// A shortfall inside the run's own noise is not a verdict, but no
	// noise hides a direction below half its peers: the spread is itself
	// measured on a few directions that one fast and one slow can widen
	// without bound, while a healthy link's run-to-run noise is tens of
	// percent (a loaded two-core machine's TCP loopback included), never half.
	if !a.rep.Latency && d.Share < t.Bandwidth {
		w := fmt.Sprintf("%.0f%% of the peers' median %.2f Gb/s", 100*d.Share, ref)
		if 1-d.Share > d.Noise || d.Share < beyondNoise {
			why = append(why, w)
		} else {
			noisy = append(noisy, fmt.Sprintf("%s, a shortfall of %.0f%% inside the run's own noise (%.0f%%)", w, 100*(1-d.Share), 100*d.Noise))
		}
	}
	if a.rep.Latency && d.Share > t.Latency {
		w := fmt.Sprintf("%.1f× the peers' median p50 %.2f µs", d.Share, ref)
		// Likewise no noise hides a p50 at twice the bad threshold.
		if d.Share-1 > d.Noise || d.Share > 2*t.Latency {
			why = append(why, w)
		} else {
			noisy = append(noisy, fmt.Sprintf("%s, inside the run's own noise (%.0f%%)", w, 100*d.Noise))
		}
	}
	return why, noisy
}

// againstCeiling judges a direction's value v against what its link can
// carry: broken, degraded, noisy, or above the ceiling (d.Above).
func (a *analysis) againstCeiling(d *Direction, v float64) (why, noisy []string) {
	t := a.t
	// The best sample says what the link can carry: when it reaches
	// healthy, a median short of it is noise.
	best := v
	if len(d.SamplesGbps) > 0 {
		best = slices.Max(d.SamplesGbps)
	}
	switch {
	case d.CeilingShare < t.Healthy && best/d.CeilingGbps >= t.Healthy:
		noisy = append(noisy, fmt.Sprintf("%.0f%% of what %s can carry, but its best sample reached %.0f%%", 100*d.CeilingShare, d.Link, 100*best/d.CeilingGbps))
	case d.CeilingShare < t.Degraded:
		why = append(why, fmt.Sprintf("%.0f%% of what %s can carry (%.2f Gb/s): broken", 100*d.CeilingShare, d.Link, d.CeilingGbps))
	case d.CeilingShare < t.Healthy:
		why = append(why, fmt.Sprintf("%.0f%% of what %s can carry (%.2f Gb/s): degraded", 100*d.CeilingShare, d.Link, d.CeilingGbps))
	}
	return why, noisy
}

// summarizeNodes counts each node's two sides: measured and bad
// directions, their medians, and the failures held against it.
func (a *analysis) summarizeNodes() {
	c, rep, idx, out := a.c, a.rep, a.idx, a.rep.Out
	nodes := make([]NodeSummary, len(c.Nodes))
	sendVals, recvVals := make([][]float64, len(c.Nodes)), make([][]float64, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = NodeSummary{Name: n.Name, Out: out[n.Name], NotMeasured: a.skipped[n.Name]}
	}
	for _, d := range rep.Directions {
		f, to := idx[d.From], idx[d.To]
		if d.Failed() {
			// A failure is held against the node known to have caused it.
			switch {
			case d.ErrorNode != "" && idx[d.ErrorNode] == f || out[d.From] != "":
				nodes[f].Failed++
			case d.ErrorNode != "" && idx[d.ErrorNode] == to || out[d.To] != "":
				nodes[to].Failed++
			default:
				nodes[f].Failed++
				nodes[to].Failed++
			}
			continue
		}
		nodes[f].SendTotal++
		nodes[to].RecvTotal++
		sendVals[f] = append(sendVals[f], a.value(d.Record))
		recvVals[to] = append(recvVals[to], a.value(d.Record))
		if d.Bad {
			nodes[f].SendBad++
			nodes[to].RecvBad++
		}
	}
	for i := range nodes {
		nodes[i].SendValue, nodes[i].RecvValue = Median(sendVals[i]), Median(recvVals[i])
	}
	rep.Nodes = nodes
}

// nameSuspects names each node side that fails most (and at least two)
// of its directions, then counts each node's own bad directions.
func (a *analysis) nameSuspects() {
	rep := a.rep
	a.suspectSide = map[string]bool{}
	for _, n := range rep.Nodes {
		for _, s := range []struct {
			side       string
			bad, total int
		}{{Send, n.SendBad, n.SendTotal}, {Receive, n.RecvBad, n.RecvTotal}} {
			if s.bad >= 2 && 2*s.bad > s.total {
				rep.Suspects = append(rep.Suspects, Suspect{Node: n.Name, Side: s.side, Bad: s.bad, Total: s.total})
				a.suspectSide[n.Name+"|"+s.side] = true
			}
		}
	}
	// A node's own bad directions: those no suspect at the other end explains.
	a.ownBad = map[string]int{}
	for _, d := range rep.Directions {
		if d.Bad && !a.suspectSide[d.To+"|"+Receive] {
			a.ownBad[d.From]++
		}
		if d.Bad && !a.suspectSide[d.From+"|"+Send] {
			a.ownBad[d.To]++
		}
	}
}

// nameKnownGood lists the nodes with nothing against them, best first:
// the partners a suspect is retested against.
func (a *analysis) nameKnownGood() {
	rep := a.rep
	var good []NodeSummary
	for _, n := range rep.Nodes {
		if n.Out == "" && a.ownBad[n.Name] == 0 && !a.suspectSide[n.Name+"|"+Send] && !a.suspectSide[n.Name+"|"+Receive] && n.Failed == 0 && n.SendTotal > 0 && n.RecvTotal > 0 {
			good = append(good, n)
		}
	}
	slices.SortStableFunc(good, func(x, y NodeSummary) int {
		if rep.Latency {
			return cmp.Compare(max(x.SendValue, x.RecvValue), max(y.SendValue, y.RecvValue))
		}
		return cmp.Compare(min(y.SendValue, y.RecvValue), min(x.SendValue, x.RecvValue))
	})
	for _, g := range good {
		rep.Good = append(rep.Good, g.Name)
	}
}

// readSuspectRetests reads each suspect's retests: the latest against
// each partner, judged against the peers, confirm it or not.
func (a *analysis) readSuspectRetests() {
	rep := a.rep
	for i := range rep.Suspects {
		s := &rep.Suspects[i]
		last := map[string]Record{}
		var order []string
		for _, r := range a.retests {
			if r.Suspect != s.Node || (s.Side == Send) != (r.From == s.Node) {
				continue
			}
			partner := r.To
			if s.Side == Receive {
				partner = r.From
			}
			if _, seen := last[partner]; !seen {
				order = append(order, partner)
			}
			last[partner] = r
		}
		bad, fine := 0, 0
		for _, p := range order {
			r := last[p]
			s.Retests = append(s.Retests, r)
			if r.Failed() || retestBad(r, rep, a.t, rep.Latency) {
				bad++
			} else {
				fine++
			}
		}
		switch {
		case bad > 0 && fine == 0:
			s.Confirmed = "yes"
		case fine > 0 && bad == 0:
			s.Confirmed = "no"
		case bad > 0:
			s.Confirmed = "mixed"
		}
	}
}

// latencyRow is seed 001's latency expectation for a perftest latency
// test, scaled to what the test reports (one way, or a round trip).
type latencyRow struct {
	linkrate.Expected
	trips float64
}

// latencyExpectation is the table row a perftest latency run is judged
// by, alone or with peers; nil for the TCP engine (socket latency is not
// RDMA latency) and for bandwidth tests.
func latencyExpectation(c *cluster.Cluster, engine, test string, latency bool) *latencyRow {
	if !latency || !strings.HasPrefix(engine, "perftest") {
		return nil
	}
	op := ""
	for _, o := range []string{"read", "atomic", "write", "send"} {
		if strings.Contains(test, o) {
			op = o
			break
		}
	}
	return &latencyRow{linkrate.ExpectedFor(c.Resolved().RateGbps), linkrate.LatencyRoundTrips(op)}
}

func retestBad(r Record, rep *Report, t cluster.Thresholds, latency bool) bool {
	if rep.MedianValue <= 0 {
		return false
	}
	if latency {
		return r.P50Us > t.Latency*rep.MedianValue
	}
	return r.Gbps < t.Bandwidth*rep.MedianValue
}

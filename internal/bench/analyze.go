package bench

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// Sides of a node.
const (
	Send    = "send"
	Receive = "receive"
)

// Direction is the final state of one direction, judged.
type Direction struct {
	Record
	// RefValue is the median of the same link class (Gb/s, or p50 µs for
	// latency); Share is this direction's value over it.
	RefValue float64 `json:"ref_value,omitempty"`
	Share    float64 `json:"share_of_peers,omitempty"`
	// CeilingGbps is what the link can carry (0 when no rate was declared);
	// CeilingShare is the measurement over it.
	CeilingGbps  float64 `json:"ceiling_gbps,omitempty"`
	CeilingShare float64 `json:"ceiling_share,omitempty"`
	Link         string  `json:"link,omitempty"`
	// Spread is (max − min) / median of the samples; Noise is the larger
	// of it and the spread of the direction's link class: a shortfall
	// inside it is not a verdict.
	Spread float64 `json:"spread,omitempty"`
	Noise  float64 `json:"noise,omitempty"`
	Bad    bool    `json:"bad,omitempty"`
	// Noisy: short of the peers or the link, but inside the run's own
	// noise (NoisyWhy says by how much): measure again, not a failure.
	Noisy    bool   `json:"noisy,omitempty"`
	NoisyWhy string `json:"noisy_why,omitempty"`
	Above    bool   `json:"above_ceiling,omitempty"`
	Why      string `json:"why,omitempty"`
	// Retest is the direction measured again after it was found bad with
	// no suspect node to explain it.
	Retest *Record `json:"retest,omitempty"`
}

// NodeSummary is one node's two sides.
type NodeSummary struct {
	Name      string  `json:"name"`
	SendValue float64 `json:"send_value,omitempty"` // median Gb/s (p50 µs for latency)
	RecvValue float64 `json:"receive_value,omitempty"`
	SendBad   int     `json:"send_bad"`
	SendTotal int     `json:"send_measured"`
	RecvBad   int     `json:"receive_bad"`
	RecvTotal int     `json:"receive_measured"`
	Failed    int     `json:"failed"`
	Out       string  `json:"taken_out,omitempty"`
	// NotMeasured counts the directions not tried because the node was
	// out (the runner summarises them per node, not one record per pair).
	NotMeasured int `json:"not_measured,omitempty"`
}

// Suspect is a node one of whose sides fails most of its directions.
type Suspect struct {
	Node    string   `json:"node"`
	Side    string   `json:"side"`
	Bad     int      `json:"bad"`
	Total   int      `json:"measured"`
	Retests []Record `json:"retests,omitempty"`
	// Confirmed: "yes" (every retest bad), "no" (every retest fine),
	// "mixed", or "" (not retested).
	Confirmed string `json:"confirmed,omitempty"`
}

// Report is a bench run judged: the view every renderer uses.
type Report struct {
	Engine       string            `json:"engine"`
	Test         string            `json:"test"`
	Latency      bool              `json:"latency"`
	RateDeclared bool              `json:"rate_declared"`
	Link         string            `json:"link,omitempty"`
	MedianValue  float64           `json:"median_value"` // Gb/s or p50 µs
	Directions   []Direction       `json:"directions"`
	Nodes        []NodeSummary     `json:"nodes"`
	Suspects     []Suspect         `json:"suspects,omitempty"`
	Good         []string          `json:"known_good,omitempty"`
	Out          map[string]string `json:"taken_out,omitempty"`
	Leftovers    []string          `json:"leftovers,omitempty"`
	// CUDA is the same test in GPU memory (--use-cuda), GPUDirect the
	// per-direction verdicts of GPU against host memory.
	CUDA      *Report         `json:"cuda,omitempty"`
	Cover     *Cover          `json:"cover,omitempty"`  // --schedule cover: the localiser's verdict
	Rounds    *RoundsUsed     `json:"rounds,omitempty"` // what the run took (bench.Run sets it)
	GPUDirect []check.Finding `json:"gpudirect,omitempty"`
	Findings  []check.Finding `json:"-"`
	// layer is the cluster file's link layer, as written.
	layer string
}

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
			a.dirRetests[r.dirKey()] = r
			continue
		}
		if r.Retest {
			a.retests = append(a.retests, r)
			continue
		}
		final[r.dirKey()] = r
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
	if r, ok := a.dirRetests[d.dirKey()]; ok && d.Bad {
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

// runFindings judge the run as a whole against what the link should do
// with no peers needed: the link layer and MTU perftest used, and a
// perftest latency run against seed 001's table (so one pair, or one run,
// gets a verdict).
func runFindings(rep *Report, lat *latencyRow) []check.Finding {
	fs, layers := layerFindings(rep)
	if f, ok := mtuFinding(rep, layers); ok {
		fs = append(fs, f)
	}
	if f, ok := latencyFinding(rep, lat); ok {
		fs = append(fs, f)
	}
	return fs
}

// layerFindings: the layer perftest ran over, against the cluster file's.
// It returns the layers perftest reported, sorted.
func layerFindings(rep *Report) ([]check.Finding, []linkrate.Layer) {
	var fs []check.Finding
	declared, derr := linkrate.ParseLayer(rep.layer)
	ran := map[linkrate.Layer][]string{}
	for _, d := range rep.Directions {
		if l, err := linkrate.ParseLayer(d.LinkType); err == nil && !d.Failed() {
			ran[l] = append(ran[l], d.From+" → "+d.To)
		}
	}
	layers := slices.Sorted(maps.Keys(ran))
	for _, l := range layers {
		dirs := ran[l]
		if derr == nil && declared != linkrate.TCP && l != declared {
			fs = append(fs, check.Finding{Check: "bench.perftest.link-layer", Outcome: check.Fail, Subject: "cluster file link",
				Message:  fmt.Sprintf("%d direction(s) ran over %s (perftest's Link type), not the cluster file's %s: %s", len(dirs), l, declared, strings.Join(dirs, ", ")),
				Evidence: []check.Evidence{{What: "Link type", Value: string(l), Source: "perftest"}, {What: "link.layer", Value: string(declared), Source: "cluster file"}},
				Fix:      []string{"set link.layer in the cluster file to the ports' link layer (ibstat), or point device/port at the intended ports"}})
		}
	}
	return fs, layers
}

// mtuFinding judges the smallest MTU perftest used, on the layer it ran
// over (layers, when one), else the cluster file's; false when perftest
// reported no MTU.
func mtuFinding(rep *Report, layers []linkrate.Layer) (check.Finding, bool) {
	mtu, dirs := 0, 0
	var hosts []string
	for _, d := range rep.Directions {
		if d.Failed() || d.MTUBytes == 0 {
			continue
		}
		if mtu == 0 || d.MTUBytes < mtu {
			mtu = d.MTUBytes
		}
	}
	if mtu == 0 {
		return check.Finding{}, false
	}
	for _, d := range rep.Directions {
		if !d.Failed() && d.MTUBytes == mtu {
			dirs++
			for _, h := range []string{d.From, d.To} {
				if !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
				}
			}
		}
	}
	l := linkrate.Link{Layer: linkrate.InfiniBand, MTUBytes: mtu}
	src := "assumed InfiniBand: the cluster file names no link layer"
	if declared, err := linkrate.ParseLayer(rep.layer); err == nil {
		l.Layer, src = declared, "the cluster file's link layer"
	}
	if len(layers) == 1 {
		l.Layer, src = layers[0], "perftest's Link type"
	}
	f := judgeMTU("perftest", mtu, l, src)
	f.Host = strings.Join(hosts, ", ")
	f.Message += fmt.Sprintf(" (%d direction(s))", dirs)
	return f, true
}

// latencyFinding judges a perftest latency run's median p50 against seed
// 001's table; false when there is no table row or nothing measured.
func latencyFinding(rep *Report, lat *latencyRow) (check.Finding, bool) {
	if lat == nil {
		return check.Finding{}, false
	}
	var p50 []float64
	for _, d := range rep.Directions {
		if !d.Failed() {
			p50 = append(p50, d.P50Us)
		}
	}
	if len(p50) == 0 {
		return check.Finding{}, false
	}
	m := Median(p50)
	lo, hi := lat.LowUs*lat.trips, lat.HighUs*lat.trips
	f := check.Finding{Check: "bench.link.latency", Subject: "cluster", Evidence: []check.Evidence{
		{What: "median p50", Value: fmt.Sprintf("%.2f µs over %d direction(s)", m, len(p50)), Source: rep.Engine + " " + rep.Test},
		{What: "a clean fabric", Value: fmt.Sprintf("%.2f–%.2f µs; above %.1f µs broken", lo, hi, lat.BrokenUs*lat.trips), Source: lat.Source + ", " + lat.Link},
	}}
	switch {
	case m <= hi:
		f.Outcome = check.Pass
		f.Message = fmt.Sprintf("median p50 %.2f µs is within what a clean fabric does (%.2f–%.2f µs on %s): healthy", m, lo, hi, lat.Link)
	case m <= lat.BrokenUs*lat.trips:
		f.Outcome = check.Warn
		f.Message = fmt.Sprintf("median p50 %.2f µs is above what a clean fabric does (%.2f–%.2f µs on %s): check CPU governor, NUMA placement, MTU and the switch path", m, lo, hi, lat.Link)
	default:
		f.Outcome = check.Fail
		f.Message = fmt.Sprintf("median p50 %.2f µs is above %.1f µs: broken, not slow, on one switch (a clean fabric does %.2f–%.2f µs on %s)", m, lat.BrokenUs*lat.trips, lo, hi, lat.Link)
	}
	return f, true
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

// FormatValue prints a measurement: Gb/s or p50 latency, two decimals.
func (r *Report) FormatValue(v float64) string {
	if r.Latency {
		return fmt.Sprintf("p50 %.2f µs", v)
	}
	return fmt.Sprintf("%.2f Gb/s", v)
}

// findings says what the judged run means, in the order a reader acts
// on it: suspects, bad paths, noise, failures, the link as a whole,
// perftest's warnings, leftovers, then the nodes found good.
func (a *analysis) findings() []check.Finding {
	var fs []check.Finding
	for _, s := range a.rep.Suspects {
		fs = append(fs, a.suspectFinding(s))
	}
	fs = append(fs, a.pathFindings()...)
	fs = append(fs, a.noisyFindings()...)
	fs = append(fs, a.failureFindings()...)
	fs = append(fs, a.linkFindings()...)
	fs = append(fs, warningFindings(a.rep.Directions, a.t)...)
	if l := a.rep.Leftovers; len(l) > 0 {
		fs = append(fs, check.Finding{Check: "bench.run.leftover", Outcome: check.Warn, Subject: "processes",
			Message: fmt.Sprintf("%d process(es) of this run were still alive after their round and were killed: %s", len(l), strings.Join(l, "; "))})
	}
	fs = append(fs, a.goodNodeFindings()...)
	if len(a.rep.Directions) == 0 {
		fs = append(fs, check.Finding{Check: "bench.run", Outcome: check.Unknown, Subject: "cluster", Message: "nothing was measured"})
	}
	if u := a.unjudged; len(u) > 0 {
		fs = append(fs, check.Finding{Check: "bench.run", Outcome: check.Unknown, Subject: "cluster",
			Message: fmt.Sprintf("%d direction(s) could not be judged: no link rate is declared and their link class has fewer than three measured directions to compare them with (%s)", len(u), strings.Join(u, ", ")),
			Fix:     []string{"declare link.rate in the cluster file (the ports' rate, as ibstat or ethtool shows it), or measure at least three directions of each link class"}})
	}
	return fs
}

// judgedAgainst names what a direction is compared with, for messages.
func (a *analysis) judgedAgainst() string {
	ref := "the median of the same link class"
	if !a.rep.RateDeclared && !a.rep.Latency {
		ref += " (no rate in the cluster file: judged against the peers only)"
	}
	return ref
}

// measuredBy names the engine and test, the source of measured evidence.
func (a *analysis) measuredBy() string {
	return fmt.Sprintf("%s %s", a.rep.Engine, a.rep.Test)
}

// suspectFinding says why one node side is suspect and what its retests
// against known-good partners concluded.
func (a *analysis) suspectFinding(s Suspect) check.Finding {
	rep := a.rep
	var ev []check.Evidence
	var vals []string
	for _, d := range rep.Directions {
		if d.Bad && ((s.Side == Send && d.From == s.Node) || (s.Side == Receive && d.To == s.Node)) {
			ev = append(ev, check.Evidence{What: d.From + " → " + d.To, Value: rep.FormatValue(valueOf(d.Record, rep.Latency)) + ": " + d.Why, Source: a.measuredBy()})
			vals = append(vals, fmt.Sprintf("%.0f%%", 100*d.Share))
		}
	}
	verb := map[string]string{Send: "sends", Receive: "receives"}[s.Side]
	msg := fmt.Sprintf("%s %s badly: %d of its %d measured %s directions are below %s (%s)", s.Node, verb, s.Bad, s.Total, s.Side, a.judgedAgainst(), strings.Join(vals, ", "))
	if rep.Latency {
		msg = fmt.Sprintf("%s %s slowly: %d of its %d measured %s directions are above %s", s.Node, verb, s.Bad, s.Total, s.Side, a.judgedAgainst())
	}
	outcome := check.Fail
	var partners []string
	for _, r := range s.Retests {
		p := r.To
		if s.Side == Receive {
			p = r.From
		}
		res := rep.FormatValue(valueOf(r, rep.Latency))
		if r.Failed() {
			res = "failed: " + r.Error
		}
		partners = append(partners, p+" "+res)
		ev = append(ev, check.Evidence{What: "retest " + r.From + " → " + r.To, Value: res, Source: "against a known-good node"})
	}
	switch s.Confirmed {
	case "yes":
		msg += fmt.Sprintf("; against known-good %s it is still bad: %s's %s side is at fault", strings.Join(partners, ", "), s.Node, s.Side)
	case "no":
		msg += fmt.Sprintf("; against known-good %s it is fine: not confirmed, measure again", strings.Join(partners, ", "))
		outcome = check.Warn
	case "mixed":
		msg += fmt.Sprintf("; retests disagree (%s)", strings.Join(partners, ", "))
	}
	return check.Finding{Check: "bench.node." + s.Side, Outcome: outcome, Host: s.Node, Subject: s.Side + " side", Message: msg, Evidence: ev,
		Fix: []string{"rdmalab doctor on " + s.Node + " (port rate, PCIe link, error counters, MTU)", "check the cable and switch port of " + s.Node + "; compare ethtool -S / perfquery counters before and after a run"}}
}

// pathFindings: bad directions no suspect explains, the pair or the path
// between them.
func (a *analysis) pathFindings() []check.Finding {
	rep := a.rep
	var fs []check.Finding
	for _, d := range rep.Directions {
		if !d.Bad || a.suspectSide[d.From+"|"+Send] || a.suspectSide[d.To+"|"+Receive] {
			continue
		}
		msg := fmt.Sprintf("%s, %s", rep.FormatValue(valueOf(d.Record, rep.Latency)), d.Why)
		if d.Spread > a.t.Spread {
			msg += fmt.Sprintf(" (samples spread %.0f%%: noisy, measure again)", 100*d.Spread)
		}
		msg += "; neither end is bad with its other partners: the path between them"
		outcome := check.Fail
		ev := directionEvidence(d, rep, a.measuredBy())
		// Retested before failing: a direction fine the second time was noise.
		if r := d.Retest; r != nil {
			res := rep.FormatValue(valueOf(*r, rep.Latency))
			if r.Failed() {
				res = "failed: " + r.Error
			}
			ev = append(ev, check.Evidence{What: "measured again", Value: res, Source: "retest of this direction"})
			if !r.Failed() && !retestBad(*r, rep, a.t, rep.Latency) {
				outcome = check.Warn
				msg += fmt.Sprintf("; measured again it is fine (%s): not confirmed, likely noise", res)
			} else {
				msg += fmt.Sprintf("; measured again it is still bad (%s)", res)
			}
		} else {
			msg += ", or noise (not measured again)"
		}
		fs = append(fs, check.Finding{Check: "bench.direction.slow", Outcome: outcome, Subject: d.From + " → " + d.To, Message: msg, Evidence: ev})
	}
	return fs
}

// noisyFindings: short, but inside the run's own noise: said, never
// failed.
func (a *analysis) noisyFindings() []check.Finding {
	rep := a.rep
	var fs []check.Finding
	for _, d := range rep.Directions {
		if !d.Noisy {
			continue
		}
		fs = append(fs, check.Finding{Check: "bench.direction.noisy", Outcome: check.Warn, Subject: d.From + " → " + d.To,
			Message:  fmt.Sprintf("%s is %s: not a verdict; measure again (more --samples, a quieter machine) to tell", rep.FormatValue(valueOf(d.Record, rep.Latency)), d.NoisyWhy),
			Evidence: directionEvidence(d, rep, a.measuredBy())})
	}
	return fs
}

// failureFindings: failures by node when one is known, else by pair.
func (a *analysis) failureFindings() []check.Finding {
	rep := a.rep
	type nodeFail struct {
		dirs int
		why  string
	}
	var fs []check.Finding
	byNode := map[string]*nodeFail{}
	for _, n := range a.c.Nodes {
		if why := rep.Out[n.Name]; why != "" {
			byNode[n.Name] = &nodeFail{why: why, dirs: a.skipped[n.Name]}
		}
	}
	for _, d := range rep.Directions {
		if !d.Failed() {
			continue
		}
		node := d.ErrorNode
		if node == "" {
			for _, n := range []string{d.From, d.To} {
				if rep.Out[n] != "" {
					node = n
					break
				}
			}
		}
		if node != "" {
			nf := byNode[node]
			if nf == nil {
				nf = &nodeFail{why: d.Error}
				byNode[node] = nf
			}
			nf.dirs++
			continue
		}
		id := "bench.direction.error"
		msg := "failed: " + cmpOr(d.Error, d.NotMeasured)
		if d.TimedOut {
			id = "bench.pair.timeout"
			msg = "timed out (both ends killed) while both ends answer otherwise: the data path between them"
		}
		fs = append(fs, check.Finding{Check: id, Outcome: check.Fail, Subject: d.From + " → " + d.To, Message: msg})
	}
	for _, n := range a.c.Nodes {
		nf := byNode[n.Name]
		if nf == nil {
			continue
		}
		fs = append(fs, check.Finding{Check: "bench.node.unreachable", Outcome: check.Fail, Host: n.Name, Subject: "node",
			Message: fmt.Sprintf("%s could not be measured: %s; %d direction(s) not measured (--resume measures them once it is fixed)", n.Name, nf.why, nf.dirs),
			Fix:     []string{"ssh " + n.SSH + " true   # reachable? host key known?", "rdmalab bench --resume … after fixing it"}})
	}
	return fs
}

// linkFindings judge the declared link against the run: a rate the
// cluster exceeds, a whole cluster below it, directions above it.
func (a *analysis) linkFindings() []check.Finding {
	rep := a.rep
	var fs []check.Finding
	if a.rateSuspect {
		// Every direction above what its link can carry: nothing was
		// judged against physics, so the run proves nothing healthy.
		fs = append(fs, check.Finding{Check: "bench.link.rate-suspect", Outcome: check.Unknown, Subject: "cluster file link",
			Message: fmt.Sprintf("the cluster's median %s is %.0f%% of what %s can carry: no link carries more than its ceiling, so the declared rate is likely wrong (the measurements suggest at least %.0f Gb/s), or the measurement is (see any perftest warning); judged against the peers only",
				rep.FormatValue(rep.MedianValue), 100*a.medianShare, rep.Link, rep.MedianValue),
			Fix: []string{"set link.rate in the cluster file to the ports' real rate (ibstat / ethtool)"}})
	}
	if a.clusterBelow {
		fs = append(fs, check.Finding{Check: "bench.link.below-ceiling", Outcome: check.Fail, Subject: "cluster",
			Message: fmt.Sprintf("the whole cluster runs at %.0f%% of what %s can carry (median %s): a cluster-wide cause (rate, MTU, PCIe, CPU governor, test size), not one node",
				100*a.medianShare, rep.Link, rep.FormatValue(rep.MedianValue))})
	}
	for _, d := range rep.Directions {
		if d.Above {
			causes := "a wrong rate or MTU for this pair in the cluster file, or a measurement artefact"
			if len(d.Warnings) > 0 {
				causes = "perftest's warning \"" + d.Warnings[0] + "\" (its timing is unreliable), or " + causes
			}
			fs = append(fs, check.Finding{Check: "bench.direction.above-ceiling", Outcome: check.Warn, Subject: d.From + " → " + d.To,
				Message:  fmt.Sprintf("suspect: %s is %.0f%% of what %s can carry (%.2f Gb/s), which no link does; likely causes: %s", rep.FormatValue(d.Gbps), 100*d.CeilingShare, d.Link, d.CeilingGbps, causes),
				Evidence: directionEvidence(d, rep, a.measuredBy())})
		}
	}
	return fs
}

// goodNodeFindings pass each measured node with nothing against it.
func (a *analysis) goodNodeFindings() []check.Finding {
	rep := a.rep
	var fs []check.Finding
	unjudged := map[string]bool{}
	for _, u := range a.unjudged {
		from, to, _ := strings.Cut(u, " → ")
		unjudged[from], unjudged[to] = true, true
	}
	for _, n := range rep.Nodes {
		if n.Out != "" || n.Failed > 0 || a.ownBad[n.Name] > 0 || a.suspectSide[n.Name+"|"+Send] || a.suspectSide[n.Name+"|"+Receive] || n.SendTotal+n.RecvTotal == 0 || unjudged[n.Name] {
			continue
		}
		msg := fmt.Sprintf("%s sends at %s and receives at %s (medians over %d and %d partners), judged against %s", n.Name,
			rep.FormatValue(n.SendValue), rep.FormatValue(n.RecvValue), n.SendTotal, n.RecvTotal, a.judgedAgainst())
		if n.SendBad+n.RecvBad > 0 {
			msg += fmt.Sprintf("; its %d bad direction(s) are with a suspect named above", n.SendBad+n.RecvBad)
		}
		if rep.RateDeclared {
			msg += " and what " + rep.Link + " can carry"
		}
		fs = append(fs, check.Finding{Check: "bench.node", Outcome: check.Pass, Host: n.Name, Subject: "both sides", Message: msg})
	}
	return fs
}

func valueOf(r Record, latency bool) float64 {
	if latency {
		return r.P50Us
	}
	return r.Gbps
}

func directionEvidence(d Direction, rep *Report, source string) []check.Evidence {
	ev := []check.Evidence{{What: "measured", Value: rep.FormatValue(valueOf(d.Record, rep.Latency)), Source: source}}
	if len(d.SamplesGbps) > 1 {
		ev = append(ev, check.Evidence{What: "samples", Value: fmt.Sprintf("%v Gb/s, spread %.0f%%", d.SamplesGbps, 100*d.Spread)})
	}
	if d.RefValue > 0 {
		ev = append(ev, check.Evidence{What: "peers' median", Value: rep.FormatValue(d.RefValue), Source: "same link class"})
	}
	if d.CeilingGbps > 0 {
		ev = append(ev, check.Evidence{What: "link ceiling", Value: fmt.Sprintf("%.2f Gb/s", d.CeilingGbps), Source: d.Link + " (cluster file)"})
	}
	return ev
}

// warningFindings: each kind of perftest warning once, with the nodes
// that printed it, its fix, and whether it mattered at the saturation of
// the directions that printed it (their share of the link's ceiling: the
// highest when one is above it, else the lowest).
func warningFindings(ds []Direction, t cluster.Thresholds) []check.Finding {
	type kind struct {
		lines, hosts []string
		shares       []float64
	}
	var order []string
	kinds := map[string]*kind{}
	for _, d := range ds {
		for _, w := range d.Warnings {
			key := w
			if k := warningKind(w); k != nil {
				key = k.kind
			}
			k := kinds[key]
			if k == nil {
				k = &kind{}
				kinds[key] = k
				order = append(order, key)
			}
			if !slices.Contains(k.lines, w) {
				k.lines = append(k.lines, w)
			}
			for _, h := range []string{d.From, d.To} {
				if !slices.Contains(k.hosts, h) {
					k.hosts = append(k.hosts, h)
				}
			}
			if d.CeilingShare > 0 {
				k.shares = append(k.shares, d.CeilingShare)
			}
		}
	}
	var fs []check.Finding
	for _, key := range order {
		k := kinds[key]
		sat := 0.0
		if len(k.shares) > 0 {
			sat = slices.Min(k.shares)
			if m := slices.Max(k.shares); m > t.AboveCeiling {
				sat = m
			}
		}
		fs = append(fs, WarningFindings(k.lines, strings.Join(k.hosts, ", "), "perftest", sat, t)...)
	}
	return fs
}

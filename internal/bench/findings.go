package bench

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

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
	r := CheckPerftestLinkLayer.Reporter("")
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
			f := r.Fail("cluster file link", "%d direction(s) ran over %s (perftest's Link type), not the cluster file's %s: %s", len(dirs), l, declared, strings.Join(dirs, ", "))
			f.Evidence = []check.Evidence{{What: "Link type", Value: string(l), Source: "perftest"}, {What: "link.layer", Value: string(declared), Source: "cluster file"}}
			f.Fix = []string{"set link.layer in the cluster file to the ports' link layer (ibstat), or point device/port at the intended ports"}
		}
	}
	return r.Findings(), layers
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
	f := judgeMTU("perftest", "", mtu, l, src) // the results log keeps no device
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
	r := CheckLinkLatency.Reporter("")
	var f check.Finding
	switch {
	case m <= hi:
		f = r.New(check.Pass, "cluster", "median p50 %.2f µs is within what a clean fabric does (%.2f–%.2f µs on %s): healthy", m, lo, hi, lat.Link)
	case m <= lat.BrokenUs*lat.trips:
		f = r.New(check.Warn, "cluster", "median p50 %.2f µs is above what a clean fabric does (%.2f–%.2f µs on %s): check CPU governor, NUMA placement, MTU and the switch path", m, lo, hi, lat.Link)
	default:
		f = r.New(check.Fail, "cluster", "median p50 %.2f µs is above %.1f µs: broken, not slow, on one switch (a clean fabric does %.2f–%.2f µs on %s)", m, lat.BrokenUs*lat.trips, lo, hi, lat.Link)
	}
	f.Evidence = []check.Evidence{
		{What: "median p50", Value: fmt.Sprintf("%.2f µs over %d direction(s)", m, len(p50)), Source: rep.Engine + " " + rep.Test},
		{What: "a clean fabric", Value: fmt.Sprintf("%.2f–%.2f µs; above %.1f µs broken", lo, hi, lat.BrokenUs*lat.trips), Source: lat.Source + ", " + lat.Link},
	}
	return f, true
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
		fs = append(fs, *CheckRunLeftover.Reporter("").Warn("processes", "%d process(es) of this run were still alive after their round and were killed: %s", len(l), strings.Join(l, "; ")))
	}
	fs = append(fs, a.goodNodeFindings()...)
	run := CheckRun.Reporter("")
	if len(a.rep.Directions) == 0 {
		run.Unknown("cluster", "nothing was measured")
	}
	if u := a.unjudged; len(u) > 0 {
		// The unknown's fix is the run's answer (check.Verdict.Answer).
		run.Unknown("cluster", "%d direction(s) could not be judged: no link rate is declared and their link class has fewer than three measured directions to compare them with (%s)", len(u), strings.Join(u, ", ")).Fix =
			[]string{"declare link.rate in the cluster file (the ports' rate, as ibstat or ethtool shows it), or measure at least three directions of each link class"}
	}
	return append(fs, run.Findings()...)
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
	e := CheckNodeSend
	if s.Side == Receive {
		e = CheckNodeReceive
	}
	f := e.Reporter(s.Node).New(outcome, s.Side+" side", "%s", msg)
	f.Evidence = ev
	f.Fix = []string{"rdmalab doctor on " + s.Node + " (port rate, PCIe link, error counters, MTU)", "check the cable and switch port of " + s.Node + "; compare ethtool -S / perfquery counters before and after a run"}
	return f
}

// pathFindings: bad directions no suspect explains, the pair or the path
// between them.
func (a *analysis) pathFindings() []check.Finding {
	rep := a.rep
	r := CheckDirectionSlow.Reporter("")
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
			} else if noise, inside := a.retestInsideNoise(d, *r); !r.Failed() && inside {
				outcome = check.Warn
				msg += fmt.Sprintf("; measured again %s, short by less than the two measurements differ (their samples spread %.0f%%): not confirmed, likely noise", res, 100*noise)
			} else {
				msg += fmt.Sprintf("; measured again it is still bad (%s)", res)
			}
		} else {
			msg += ", or noise (not measured again)"
		}
		r.Report(outcome, d.From+" → "+d.To, "%s", msg).Evidence = ev
	}
	return r.Findings()
}

// noisyFindings: short, but inside the run's own noise: said, never
// failed.
func (a *analysis) noisyFindings() []check.Finding {
	rep := a.rep
	r := CheckDirectionNoisy.Reporter("")
	for _, d := range rep.Directions {
		if !d.Noisy {
			continue
		}
		r.Warn(d.From+" → "+d.To, "%s is %s: not a verdict; measure again (more --samples, a quieter machine) to tell", rep.FormatValue(valueOf(d.Record, rep.Latency)), d.NoisyWhy).
			Evidence = directionEvidence(d, rep, a.measuredBy())
	}
	return r.Findings()
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
		e := CheckDirectionError
		msg := "failed: " + cmpOr(d.Error, d.NotMeasured)
		if d.TimedOut {
			e = CheckPairTimeout
			msg = "timed out (both ends killed) while both ends answer otherwise: the data path between them"
		}
		fs = append(fs, *e.Reporter("").Fail(d.From+" → "+d.To, "%s", msg))
	}
	unreachable := CheckNodeUnreachable.Reporter("")
	for _, n := range a.c.Nodes {
		nf := byNode[n.Name]
		if nf == nil {
			continue
		}
		unreachable.On(n.Name).Fail("node", "%s could not be measured: %s; %d direction(s) not measured (--resume measures them once it is fixed)", n.Name, nf.why, nf.dirs).
			Fix = []string{"ssh " + n.SSH + " true   # reachable? host key known?", "rdmalab bench --resume … after fixing it"}
	}
	return append(fs, unreachable.Findings()...)
}

// linkFindings judge the declared link against the run: a rate the
// cluster exceeds, a whole cluster below it, directions above it.
func (a *analysis) linkFindings() []check.Finding {
	rep := a.rep
	var fs []check.Finding
	if a.rateSuspect {
		// Every direction above what its link can carry: nothing was
		// judged against physics, so the run proves nothing healthy.
		f := CheckLinkRateSuspect.Reporter("").New(check.Unknown, "cluster file link", "the cluster's median %s is %.0f%% of what %s can carry: no link carries more than its ceiling, so the declared rate is likely wrong (the measurements suggest at least %.0f Gb/s), or the measurement is (see any perftest warning); judged against the peers only",
			rep.FormatValue(rep.MedianValue), 100*a.medianShare, rep.Link, rep.MedianValue)
		f.Fix = []string{"set link.rate in the cluster file to the ports' real rate (ibstat / ethtool)"}
		fs = append(fs, f)
	}
	if a.clusterBelow {
		fs = append(fs, CheckLinkBelowCeiling.Reporter("").New(check.Fail, "cluster", "the whole cluster runs at %.0f%% of what %s can carry (median %s): a cluster-wide cause (rate, MTU, PCIe, CPU governor, test size), not one node",
			100*a.medianShare, rep.Link, rep.FormatValue(rep.MedianValue)))
	}
	for _, d := range rep.Directions {
		if d.Above {
			causes := "a wrong rate or MTU for this pair in the cluster file, or a measurement artefact"
			if len(d.Warnings) > 0 {
				causes = "perftest's warning \"" + d.Warnings[0] + "\" (its timing is unreliable), or " + causes
			}
			f := CheckDirectionAboveCeiling.Reporter("").New(check.Warn, d.From+" → "+d.To, "suspect: %s is %.0f%% of what %s can carry (%.2f Gb/s), which no link does; likely causes: %s", rep.FormatValue(d.Gbps), 100*d.CeilingShare, d.Link, d.CeilingGbps, causes)
			f.Evidence = directionEvidence(d, rep, a.measuredBy())
			fs = append(fs, f)
		}
	}
	return fs
}

// goodNodeFindings pass each measured node with nothing against it.
func (a *analysis) goodNodeFindings() []check.Finding {
	rep := a.rep
	r := CheckNode.Reporter("")
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
		r.On(n.Name).Pass("both sides", "%s", msg)
	}
	return r.Findings()
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

// retestInsideNoise says whether a bandwidth retest that is below the
// threshold is still inside the direction's noise, counted over both
// measurements' samples: a path measured at 60% and then at 88% of its
// peers (a loaded machine's veth) has shown a spread wider than the
// retest's shortfall, so the retest confirms nothing. A broken path
// reproduces (0.02 Gb/s, then 0.02 Gb/s), and no noise hides a retest
// below half its peers.
func (a *analysis) retestInsideNoise(d Direction, r Record) (noise float64, inside bool) {
	rep := a.rep
	if rep.Latency || rep.MedianValue <= 0 {
		return 0, false
	}
	share := r.Gbps / rep.MedianValue
	if share < beyondNoise {
		return 0, false
	}
	s := append(slices.Clone(d.Record.SamplesGbps), r.SamplesGbps...)
	if len(d.Record.SamplesGbps) == 0 || len(r.SamplesGbps) == 0 {
		s = []float64{d.Record.Gbps, r.Gbps}
	}
	noise = math.Max(d.Noise, (slices.Max(s)-slices.Min(s))/math.Max(Median(s), 1e-9))
	return noise, 1-share <= noise
}

package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/schedule"
)

// MaxFollowUps bounds the rounds the localiser may add after the cover
// rounds: on the ibsim fat trees every single fault was pinned within 2.
const MaxFollowUps = 3

// Cover is what `bench --schedule cover` planned, measured and concluded.
type Cover struct {
	Source        string `json:"source"`
	CAs           int    `json:"ca_ports"`
	InitialRounds int    `json:"initial_rounds"`
	FollowUps     int    `json:"follow_up_rounds"`
	// State is the localiser's: clean, confirmed, named, ambiguous,
	// inconsistent (docs/schedule.md).
	State      string `json:"state"`
	Confidence string `json:"confidence,omitempty"` // high, medium, low
	What       string `json:"what"`
	Sure       string `json:"how_sure"`
	// Fault is what is named, when something is.
	Fault *Fault `json:"fault,omitempty"`
	// Links is every directed link with how many measured directions
	// crossed it slow and fast: the coverage the report draws.
	Links []CoverLink `json:"links"`
}

// Fault is a named cable or node.
type Fault struct {
	Kind string `json:"kind"` // link (between two switches) or node (a host's HCA or its cable)
	// Node is the cluster node, for a node fault.
	Node string `json:"node,omitempty"`
	// Ends are the cable's two ports, by GUID, port number and name.
	Ends []schedule.PortRef `json:"ends"`
	// Slow and Fast are measured directions whose routes crossed it.
	Slow []string `json:"slow_pairs"`
	Fast []string `json:"fast_pairs"`
	// PHY is each end's own physical-layer facts, from the host
	// snapshots given (--hosts); an end without any is listed bare ("no
	// PHY evidence"). The finding carries the same as evidence lines.
	PHY []phycheck.EndPHY `json:"phy,omitempty"`
}

// CoverLink is one directed link and the measurements that crossed it.
type CoverLink struct {
	schedule.LinkRef
	// FromCA and ToCA say which ends are host (CA) ports.
	FromCA bool `json:"from_ca,omitempty"`
	ToCA   bool `json:"to_ca,omitempty"`
	Slow   int  `json:"slow"`
	Fast   int  `json:"fast"`
	Named  bool `json:"named,omitempty"`
}

// coverPlan is the fabric's routes and the map between its CA ports and
// the cluster's nodes.
type coverPlan struct {
	f      *route.Fabric
	p      *route.Paths
	src    string
	caNode []int // CA index → cluster node index
	nodeCA map[int]int
	rounds [][]Pair
	// before and after are fabric scans around the run when the fabric
	// is read live: the named cable's counters corroborate it.
	before, after *fabric.Snapshot
	scanErr       error
	// hosts are the nodes' snapshots, for the named cable's PHY facts.
	hosts []*host.Snapshot
}

// newCoverPlan computes the cover rounds over the fabric read from src
// and maps every CA to the cluster node named by the host part of its
// description (rdma-core sets it to "<hostname> <device>"), as 'bench
// schedule --hostnames' does.
func newCoverPlan(f *route.Fabric, src string, c *cluster.Cluster) (*coverPlan, error) {
	idx := c.Index()
	cp := &coverPlan{f: f, p: f.Paths(), src: src, caNode: make([]int, len(f.CAs)), nodeCA: map[int]int{}}
	var missing []string
	for i, ca := range f.CAs {
		h, _, _ := strings.Cut(strings.TrimSpace(ca.Name), " ")
		n, ok := idx[h]
		if !ok {
			missing = append(missing, fmt.Sprintf("%q (host %s)", ca.Name, h))
			continue
		}
		if other, dup := cp.nodeCA[n]; dup {
			return nil, fmt.Errorf("--schedule cover: node %s has several CA ports in the fabric (%q, %q): which one a test uses cannot be told", h, f.CAs[other].Name, ca.Name)
		}
		cp.caNode[i], cp.nodeCA[n] = n, i
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 5 {
			more = fmt.Sprintf(" and %d more", len(missing)-5)
			missing = missing[:5]
		}
		return nil, fmt.Errorf("--schedule cover: the fabric's CA ports %s%s are no node of the cluster file (a CA is matched by the first word of its description)", strings.Join(missing, ", "), more)
	}
	for _, r := range schedule.CoverRounds(cp.p).Rounds {
		cp.rounds = append(cp.rounds, cp.pairs(r))
	}
	return cp, nil
}

func (cp *coverPlan) pairs(r []schedule.IPair) []Pair {
	out := make([]Pair, 0, len(r))
	for _, p := range r {
		a, b := cp.caNode[p.A], cp.caNode[p.B]
		out = append(out, Pair{min(a, b), max(a, b)})
	}
	return out
}

// measured is every measured direction of the run (not retests) between
// two hosts of the fabric, with its CAs and whether it was slow: below the
// threshold share of the run's median (the verdict bench uses for retests).
type measured struct {
	rec      Record
	src, dst int
	slow     bool
}

func (cp *coverPlan) measured(c *cluster.Cluster, recs []Record, rep *Report) []measured {
	idx := c.Index()
	var out []measured
	for _, r := range recs {
		if r.Retest || r.Failed() || r.Engine != rep.Engine || r.Test != rep.Test {
			continue
		}
		s, ok1 := cp.nodeCA[idx[r.From]]
		d, ok2 := cp.nodeCA[idx[r.To]]
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, measured{r, s, d, retestBad(r, rep, c.Thresholds, rep.Latency)})
	}
	return out
}

// locator turns the records so far into the localiser's observations.
func (cp *coverPlan) locator(c *cluster.Cluster, recs []Record, rep *Report) *schedule.Locator {
	loc := schedule.NewLocator(cp.p)
	for _, m := range cp.measured(c, recs, rep) {
		loc.Observe(schedule.Observation{Src: m.src, Dst: m.dst, Slow: m.slow, Round: m.rec.Round})
	}
	return loc
}

// judgeCover adds the localiser's verdict to the report: one finding that
// names the cable by both ends, or the node, with the pairs that crossed
// it slow and fast and how sure; the per-direction and per-node findings
// it explains are folded into it.
func (cp *coverPlan) judgeCover(c *cluster.Cluster, rep *Report, recs []Record) {
	loc := cp.locator(c, recs, rep)
	v := loc.Verdict()
	f := cp.f
	cv := &Cover{Source: cp.src, CAs: len(f.CAs), InitialRounds: len(cp.rounds), State: v.State, What: v.What, Sure: v.Sure}
	for _, r := range recs {
		if !r.Retest && r.Round > cv.InitialRounds {
			cv.FollowUps = max(cv.FollowUps, r.Round-cv.InitialRounds)
		}
	}
	// per directed link: measured directions crossing it, slow and fast
	slow, fast := make([]int, len(f.Links)), make([]int, len(f.Links))
	type dir struct {
		rec  Record
		path []int32
		slow bool
	}
	var dirs []dir
	for _, m := range cp.measured(c, recs, rep) {
		dd := dir{m.rec, cp.p.Path(m.src, m.dst), m.slow}
		dirs = append(dirs, dd)
		for _, l := range dd.path {
			if dd.slow {
				slow[l]++
			} else {
				fast[l]++
			}
		}
	}
	ref := func(k route.PortKey) schedule.PortRef {
		return schedule.PortRef{GUID: k.GUID, Port: k.Port, Name: f.PortName(k)}
	}
	isCA := map[route.PortKey]bool{}
	for _, ca := range f.CAs {
		isCA[ca.Key] = true
	}
	for l, link := range f.Links {
		cv.Links = append(cv.Links, CoverLink{LinkRef: schedule.LinkRef{From: ref(link.From), To: ref(link.To)}, FromCA: isCA[link.From], ToCA: isCA[link.To],
			Slow: slow[l], Fast: fast[l], Named: slices.Contains(v.Links, l)})
	}
	rep.Cover = cv
	if v.State == "clean" {
		rep.Findings = append(rep.Findings, CheckCover.Reporter("").New(check.Pass, "fabric", "%d cover round(s) crossed every link host traffic reaches; no measured direction was slow (%s)", cv.InitialRounds, v.Sure))
		return
	}
	cv.Confidence = map[string]string{"confirmed": "high", "named": "medium"}[v.State]
	if cv.Confidence == "" {
		cv.Confidence = "low"
	}
	fd := CheckCoverInconclusive.Reporter("").New(check.Fail, "fabric", "%s (%s after %d cover and %d follow-up round(s); confidence %s)", v.What, v.State, cv.InitialRounds, cv.FollowUps, cv.Confidence)
	fd.Fix = []string{"measure the slow pairs again; read the suspects' port counters: rdmalab fabric check"}
	fault := cp.fault(v)
	if fault != nil && (v.State == "confirmed" || v.State == "named") {
		cv.Fault = fault
		for _, d := range dirs {
			if !crossesAny(d.path, v.Links) {
				continue
			}
			pair := fmt.Sprintf("%s → %s %s (round %d)", d.rec.From, d.rec.To, rep.FormatValue(valueOf(d.rec, rep.Latency)), d.rec.Round)
			if d.slow {
				fault.Slow = append(fault.Slow, pair)
			} else {
				fault.Fast = append(fault.Fast, pair)
			}
		}
		// a second witness: the fabric's own counters, when it was read live
		var counterEv []check.Evidence
		sure := v.Sure
		switch {
		case cp.before != nil && cp.after != nil:
			var rose bool
			counterEv, rose = counterEvidence(cp.before, cp.after, fault.Ends)
			if rose {
				cv.Confidence = "high"
				sure += "; its error counters rose during the run"
			}
		case cp.scanErr != nil:
			counterEv = []check.Evidence{{What: "counters", Value: "unknown: " + cp.scanErr.Error(), Source: "fabric scan"}}
		}
		ends := fault.Ends[0].Name + " (" + fault.Ends[0].GUID.String() + ") ↔ " + fault.Ends[1].Name + " (" + fault.Ends[1].GUID.String() + ")"
		if fault.Kind == "node" {
			fd = CheckCoverNode.Reporter(fault.Node).New(check.Fail, "node", "%s is slow with every partner whatever the route: its HCA, or its cable %s; %s (confidence %s)", fault.Node, ends, sure, cv.Confidence)
			fd.Fix = []string{"rdmalab doctor on " + fault.Node + " (port rate, PCIe link, error counters)", "reseat or replace the cable " + ends}
		} else {
			fd = CheckCoverLink.Reporter("").New(check.Fail, fault.Ends[0].Name+" ↔ "+fault.Ends[1].Name, "the cable %s is slow: %s (confidence %s)", ends, sure, cv.Confidence)
			fd.Fix = []string{"reseat or replace the cable " + ends + ", then read both ports' counters: rdmalab fabric check"}
		}
		for _, e := range fault.Ends {
			fd.Evidence = append(fd.Evidence, check.Evidence{What: "end", Value: fmt.Sprintf("%s: GUID %s port %d", e.Name, e.GUID, e.Port), Source: cp.src})
		}
		fd.Evidence = append(fd.Evidence, counterEv...)
		// a third witness: each end's own physical layer, or "no PHY evidence"
		var phyEnds []phycheck.End
		for _, e := range fault.Ends {
			phyEnds = append(phyEnds, phycheck.EndOf(cp.hosts, e.GUID, e.Port, e.Name))
		}
		fault.PHY = phycheck.Cable(phyEnds, phycheck.HostFacts(cp.hosts))
		fd.Evidence = append(fd.Evidence, phycheck.Evidence(fault.PHY)...)
		for _, s := range fault.Slow[:min(len(fault.Slow), 8)] {
			fd.Evidence = append(fd.Evidence, check.Evidence{What: "crossed it slow", Value: s, Source: "measured; route from the forwarding tables"})
		}
		for _, s := range fault.Fast[:min(len(fault.Fast), 8)] {
			fd.Evidence = append(fd.Evidence, check.Evidence{What: "crossed it at speed", Value: s, Source: "measured; route from the forwarding tables"})
		}
		rep.Findings = foldExplained(rep.Findings, dirs, v.Links, func(d dir) ([]int32, bool, string, string) { return d.path, d.slow, d.rec.From, d.rec.To })
	} else {
		for _, l := range v.Links {
			fd.Evidence = append(fd.Evidence, check.Evidence{What: "suspect link", Value: f.LinkName(l), Source: "pair measurements and forwarding tables"})
		}
	}
	fd.Evidence = append(fd.Evidence, check.Evidence{What: "how sure", Value: v.Sure + "; confidence " + cv.Confidence})
	rep.Findings = append(rep.Findings, fd)
}

// fault names the verdict's links: a node when they are one CA's own
// cable (either or both directions), else the cable between two switches.
func (cp *coverPlan) fault(v schedule.Verdict) *Fault {
	if len(v.Links) == 0 || len(v.Links) > 2 {
		return nil
	}
	f := cp.f
	link := f.Links[v.Links[0]]
	if len(v.Links) == 2 && f.Reverse(v.Links[0]) != v.Links[1] {
		return nil
	}
	ref := func(k route.PortKey) schedule.PortRef {
		return schedule.PortRef{GUID: k.GUID, Port: k.Port, Name: f.PortName(k)}
	}
	ft := &Fault{Kind: "link", Ends: []schedule.PortRef{ref(link.From), ref(link.To)}, Slow: []string{}, Fast: []string{}}
	if ft.Ends[1].Name < ft.Ends[0].Name { // one order whichever direction was seen first
		ft.Ends[0], ft.Ends[1] = ft.Ends[1], ft.Ends[0]
	}
	if f.HostLink(v.Links[0]) {
		ft.Kind = "node"
		for i, ca := range f.CAs {
			if ca.Key == link.From || ca.Key == link.To {
				ft.Node = cp.nodeName(i)
				ft.Ends = []schedule.PortRef{ref(link.From), ref(link.To)} // the host end first
				if ca.Key == link.To {
					ft.Ends[0], ft.Ends[1] = ft.Ends[1], ft.Ends[0]
				}
			}
		}
	}
	return ft
}

func (cp *coverPlan) nodeName(ca int) string {
	h, _, _ := strings.Cut(strings.TrimSpace(cp.f.CAs[ca].Name), " ")
	return h
}

func crossesAny(path []int32, links []int) bool {
	for _, l := range path {
		if slices.Contains(links, int(l)) {
			return true
		}
	}
	return false
}

// foldExplained drops the slow-direction and node-side findings whose bad
// directions all crossed the named fault: the cover finding says it once,
// with them as its evidence.
func foldExplained[D any](fs []check.Finding, dirs []D, links []int, get func(D) ([]int32, bool, string, string)) []check.Finding {
	explained := map[string]bool{}  // "from → to" crossing the fault
	unexplained := map[string]int{} // node|side → slow directions elsewhere
	for _, d := range dirs {
		path, slow, from, to := get(d)
		if !slow {
			continue
		}
		if crossesAny(path, links) {
			explained[from+" → "+to] = true
			continue
		}
		unexplained[from+"|"+Send]++
		unexplained[to+"|"+Receive]++
	}
	out := fs[:0]
	for _, f := range fs {
		switch {
		case f.Check == CheckDirectionSlow.ID && explained[f.Subject]:
			continue
		case f.Check == CheckNodeSend.ID && unexplained[f.Host+"|"+Send] == 0,
			f.Check == CheckNodeReceive.ID && unexplained[f.Host+"|"+Receive] == 0:
			continue
		}
		out = append(out, f)
	}
	return out
}

// The checks of --schedule cover.
var (
	CheckCover = check.Entry{ID: "bench.cover", Title: "The cover rounds found nothing slow",
		Why:         "rounds planned from the real routes put traffic on every link host traffic reaches; none was slow",
		Source:      "the fabric's cabling and forwarding tables; the measured directions",
		Needs:       "the cabling and every switch's forwarding table, and every CA port mapped to a cluster node",
		UnknownWhen: "never: links no host route crosses are listed by 'bench schedule' as uncoverable, not judged"}
	CheckCoverLink = check.Entry{ID: "bench.cover.link", Title: "A cable between two switches is slow",
		Why:    "one cable explains every slow direction (their routes all cross it) and no direction that crossed it was at speed",
		Source: "measured directions below the threshold share of the run's median, joined with their routes", Fixes: []string{"reseat or replace the named cable", "read both ports' counters (rdmalab fabric check)"},
		Needs:       "slow directions whose routes cross the cable, and fast directions clearing the other links on those routes",
		UnknownWhen: "several cables explain the measurements equally (bench.cover.inconclusive)"}
	CheckCoverNode = check.Entry{ID: "bench.cover.node", Title: "A node is slow whatever the route",
		Why:    "the node's own cable (its HCA, or the cable to its leaf) explains every slow direction, with partners on different routes",
		Source: "measured directions and their routes; retests against known-good partners", Fixes: []string{"rdmalab doctor on the node", "reseat or replace its cable"},
		Needs:       "slow directions to or from the node over routes that share nothing else",
		UnknownWhen: "the node's directions were not measured"}
	CheckCoverInconclusive = check.Entry{ID: "bench.cover.inconclusive", Title: "No single cable or node explains the slow directions",
		Why:    "several suspects stand that no host pair's route tells apart, or more than one fault (or noise) is present",
		Source: "the localiser's standing hypotheses", Fixes: []string{"measure the slow pairs again", "read the suspects' counters (rdmalab fabric check)"},
		Needs: "slow directions", UnknownWhen: "never"}
)

// CoverCatalog describes the findings of --schedule cover.
var CoverCatalog = []check.Entry{
	CheckCover,
	CheckCoverLink,
	CheckCoverNode,
	CheckCoverInconclusive,
}

// portCounters are a port's counters as the fabric scan read them, found
// by the key the routes use (a switch's GUID and port, or a CA port's own
// GUID and port). Absent from the scan: nil, false.
func portCounters(s *fabric.Snapshot, e schedule.PortRef) (map[string]uint64, bool) {
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Num == e.Port && (p.NodeGUID == e.GUID || p.PortGUID == e.GUID) {
			return p.Counters, true
		}
	}
	return nil, false
}

// counterEvidence is the named cable's two ends' error and discard counter
// deltas between the scans before and after the run (ibqueryerrors lists
// only what is non-zero: absent is zero). rose is true when any rose.
func counterEvidence(before, after *fabric.Snapshot, ends []schedule.PortRef) (ev []check.Evidence, rose bool) {
	if why := cmpOr(before.CounterError, after.CounterError); why != "" { // e.g. no SM to answer ibqueryerrors' SA query
		return []check.Evidence{{What: "counters", Value: "unknown: " + why, Source: "ibqueryerrors before and after the run"}}, false
	}
	for _, e := range ends {
		a, okA := portCounters(after, e)
		b, okB := portCounters(before, e)
		if !okA || !okB {
			ev = append(ev, check.Evidence{What: "counters of " + e.Name, Value: "not in both fabric scans: unknown", Source: "ibqueryerrors before and after the run"})
			continue
		}
		var deltas []string
		for _, name := range slices.Sorted(maps.Keys(a)) {
			if a[name] > b[name] {
				deltas = append(deltas, fmt.Sprintf("%s +%d", name, a[name]-b[name]))
			}
		}
		v := "no error or discard counter rose"
		if len(deltas) > 0 {
			v, rose = strings.Join(deltas, ", "), true
		}
		ev = append(ev, check.Evidence{What: "counters of " + e.Name + " over the run", Value: v, Source: "ibqueryerrors before and after the run"})
	}
	return ev, rose
}

package schedule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/route"
)

// Observation is one direction of one pair, measured in a round: slow
// (below threshold) or not.
type Observation struct {
	Src, Dst int // CA indices
	Slow     bool
	Round    int
}

// Hypothesis is one fault that could explain the observations: one
// direction of a cable (Links has one link) or a whole cable, both
// directions (two links; for a host cable this is also "the host's HCA").
type Hypothesis struct {
	Links []int `json:"links"`
}

// Locator names the degraded link from per-pair verdicts, assuming one
// fault at a time: a hypothesis stands while every slow measurement
// crossed it and no fast one did. It proposes the next rounds: pairs that
// split the standing hypotheses, then one that confirms the survivor.
type Locator struct {
	P   *route.Paths
	obs []Observation
}

// NewLocator starts with no observations.
func NewLocator(p *route.Paths) *Locator { return &Locator{P: p} }

// Reset forgets the observations (the path index is kept).
func (l *Locator) Reset() { l.obs = l.obs[:0] }

// Observe adds measurements.
func (l *Locator) Observe(o ...Observation) { l.obs = append(l.obs, o...) }

// crosses reports whether src→dst's path crosses any of links.
func (l *Locator) crosses(src, dst int, links []int) bool {
	for _, h := range l.P.Path(src, dst) {
		if slices.Contains(links, int(h)) {
			return true
		}
	}
	return false
}

// Standing returns the hypotheses every observation agrees with. With no
// slow observation there are none (nothing is degraded that traffic saw).
func (l *Locator) Standing() []Hypothesis {
	first := -1
	for i, o := range l.obs {
		if o.Slow {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	var out []Hypothesis
	for _, link := range l.P.Path(l.obs[first].Src, l.obs[first].Dst) {
		for _, h := range []Hypothesis{{[]int{int(link)}}, {[]int{int(link), l.P.F.Reverse(int(link))}}} {
			if l.consistent(h) {
				out = append(out, h)
			}
		}
	}
	return out
}

func (l *Locator) consistent(h Hypothesis) bool {
	for _, o := range l.obs {
		if l.crosses(o.Src, o.Dst, h.Links) != o.Slow {
			return false
		}
	}
	return true
}

// confirmed: slow measurements of two different pairs in two different
// rounds crossed the hypothesis.
func (l *Locator) confirmed(h Hypothesis) (slowSeen, rounds int) {
	pairs := map[[2]int]bool{}
	rs := map[int]bool{}
	for _, o := range l.obs {
		if o.Slow && l.crosses(o.Src, o.Dst, h.Links) {
			a, b := min(o.Src, o.Dst), max(o.Src, o.Dst)
			pairs[[2]int{a, b}] = true
			rs[o.Round] = true
		}
	}
	return len(pairs), len(rs)
}

// isConfirmed: seen slow in two rounds, by two different pairs, or by
// every pair whose route crosses it when only one does.
func (l *Locator) isConfirmed(h Hypothesis) bool {
	seen, rounds := l.confirmed(h)
	return rounds >= 2 && (seen >= 2 || seen == len(l.candidates(h.Links)))
}

// NextRound proposes the next round: pairs that split the standing
// hypotheses, or, when one stands unconfirmed, a pair that crosses it
// again. Nil means there is nothing more to learn: clean, confirmed,
// inconsistent, or hypotheses no host traffic can tell apart.
func (l *Locator) NextRound() []IPair {
	hs := l.Standing()
	switch {
	case len(hs) == 0:
		return nil
	case len(hs) == 1:
		if l.isConfirmed(hs[0]) {
			return nil
		}
		return l.confirmRound(hs[0])
	}
	round, splits := l.splitRound(hs)
	if !splits {
		return nil // no host pair's route tells them apart
	}
	return round
}

// measured is the set of unordered pairs already measured.
func (l *Locator) measured() map[[2]int]bool {
	m := map[[2]int]bool{}
	for _, o := range l.obs {
		m[[2]int{min(o.Src, o.Dst), max(o.Src, o.Dst)}] = true
	}
	return m
}

// candidates are the unordered pairs whose paths cross any of links.
func (l *Locator) candidates(links []int) [][2]int {
	seen := map[[2]int]bool{}
	var out [][2]int
	for _, link := range links {
		l.P.EachCrossing(link, func(s, d int) {
			k := [2]int{min(s, d), max(s, d)}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		})
	}
	slices.SortFunc(out, func(a, b [2]int) int { return cmpPair(a, b) })
	return out
}

func cmpPair(a, b [2]int) int {
	if a[0] != b[0] {
		return a[0] - b[0]
	}
	return a[1] - b[1]
}

func (l *Locator) confirmRound(h Hypothesis) []IPair {
	done := l.measured()
	cands := l.candidates(h.Links)
	for _, c := range cands {
		if !done[c] {
			return []IPair{{c[0], c[1]}}
		}
	}
	if len(cands) > 0 { // every crossing pair measured once: measure one again
		return []IPair{{cands[0][0], cands[0][1]}}
	}
	return nil
}

// splitRound greedily picks disjoint pairs whose two directions' verdicts
// split the hypotheses into the smallest classes, preferring rounds in
// which every hypothesis is crossed by some measurement (so the survivor
// is seen slow again, which confirms it in the same round). splits is
// false when no pair separates any two hypotheses: then no round can,
// since a round's verdicts are its pairs' verdicts.
func (l *Locator) splitRound(hs []Hypothesis) (round []IPair, splits bool) {
	var all []int
	for _, h := range hs {
		all = append(all, h.Links...)
	}
	cands := l.candidates(all)
	done := l.measured()
	class := make([]int, len(hs)) // class id per hypothesis
	hit := make([]bool, len(hs))  // crossed by some pair of this round
	score := func(class []int, hit []bool) int {
		size := map[int]int{}
		for _, c := range class {
			size[c]++
		}
		s := 0
		for _, n := range size {
			s += n * n
		}
		unhit := 0
		for _, h := range hit {
			if !h {
				unhit++
			}
		}
		return s*(len(hs)+1) + unhit
	}
	used := map[int]bool{}
	best := score(class, hit)
	for {
		bestI, bestClass, bestHit := -1, []int(nil), []bool(nil)
		for i, c := range cands {
			if used[c[0]] || used[c[1]] {
				continue
			}
			nc, nh := make([]int, len(hs)), slices.Clone(hit)
			for j, h := range hs {
				fw, bw := l.crosses(c[0], c[1], h.Links), l.crosses(c[1], c[0], h.Links)
				bits := 0
				if fw {
					bits |= 1
				}
				if bw {
					bits |= 2
				}
				nc[j] = class[j]*4 + bits
				nh[j] = nh[j] || fw || bw
			}
			s := score(nc, nh)
			// a pair not measured before wins a tie
			if s < best || (s == best && bestI >= 0 && done[cands[bestI]] && !done[c]) {
				best, bestI, bestClass, bestHit = s, i, nc, nh
			}
		}
		if bestI < 0 {
			break
		}
		c := cands[bestI]
		used[c[0]], used[c[1]] = true, true
		round = append(round, IPair{c[0], c[1]})
		class, hit = renumber(bestClass), bestHit
	}
	return round, slices.Max(class) > 0
}

// renumber keeps class ids small so they do not overflow after many pairs.
func renumber(class []int) []int {
	ids := map[int]int{}
	out := make([]int, len(class))
	for i, c := range class {
		if _, ok := ids[c]; !ok {
			ids[c] = len(ids)
		}
		out[i] = ids[c]
	}
	return out
}

// Verdict is what the measurements so far say.
type Verdict struct {
	// State: clean (no slow measurement), confirmed (one fault, seen slow
	// by two pairs in two rounds, or by the only pair whose route crosses
	// it in two rounds; every other candidate cleared), named
	// (one fault stands, not yet confirmed), ambiguous (several stand that
	// no host traffic can tell apart), inconsistent (no single fault
	// explains the measurements: several faults, or a flaky measurement).
	State string `json:"state"`
	// Links are the named fault's links (confirmed, named), or the
	// suspects (ambiguous: the standing hypotheses' links; inconsistent:
	// links on slow paths and on no fast path).
	Links []int  `json:"links,omitempty"`
	What  string `json:"what"`
	Sure  string `json:"how_sure"`
}

// Verdict judges the observations so far.
func (l *Locator) Verdict() Verdict {
	f := l.P.F
	hs := l.Standing()
	slow := 0
	for _, o := range l.obs {
		if o.Slow {
			slow++
		}
	}
	switch {
	case slow == 0:
		return Verdict{State: "clean", What: "no measurement was slow",
			Sure: fmt.Sprintf("%d measurements, all at speed; links they did not cross are not judged", len(l.obs))}
	case len(hs) == 1:
		h := hs[0]
		seen, rounds := l.confirmed(h)
		v := Verdict{State: "named", Links: h.Links, What: l.describe(h)}
		cleared := l.clearedCount(h)
		v.Sure = fmt.Sprintf("seen slow by %d pair(s) in %d round(s); the %d other link(s) on those paths carried fast traffic; assumes one fault", seen, rounds, cleared)
		if l.isConfirmed(h) {
			v.State = "confirmed"
		}
		return v
	case len(hs) > 1:
		var links []int
		var names []string
		for _, h := range hs {
			links = append(links, h.Links...)
			names = append(names, l.describe(h))
		}
		slices.Sort(links)
		sure := fmt.Sprintf("%d candidates agree with every measurement; more rounds can split them", len(hs))
		if _, splits := l.splitRound(hs); !splits {
			sure = fmt.Sprintf("%d candidates agree with every measurement, and every host pair's route that crosses one crosses the others: traffic cannot tell them apart; check each (rdmalab fabric check reads their counters)", len(hs))
		}
		return Verdict{State: "ambiguous", Links: slices.Compact(links), What: "one of: " + strings.Join(names, "; "), Sure: sure}
	}
	// no single fault explains it: report slow-path links no fast path crossed
	fast := map[int32]bool{}
	for _, o := range l.obs {
		if !o.Slow {
			for _, h := range l.P.Path(o.Src, o.Dst) {
				fast[h] = true
			}
		}
	}
	set := map[int]bool{}
	for _, o := range l.obs {
		if o.Slow {
			for _, h := range l.P.Path(o.Src, o.Dst) {
				if !fast[h] {
					set[int(h)] = true
				}
			}
		}
	}
	var links []int
	for h := range set {
		links = append(links, h)
	}
	slices.Sort(links)
	var names []string
	for _, h := range links {
		names = append(names, f.LinkName(h))
	}
	return Verdict{State: "inconsistent", Links: links, What: "suspects: " + strings.Join(names, "; "),
		Sure: "no single link explains every slow and fast measurement: more than one fault, or a flaky measurement; re-measure the slow pairs"}
}

// clearedCount is how many other links on the slow paths crossing h were
// seen carrying fast traffic.
func (l *Locator) clearedCount(h Hypothesis) int {
	others := map[int32]bool{}
	for _, o := range l.obs {
		if o.Slow {
			for _, x := range l.P.Path(o.Src, o.Dst) {
				if !slices.Contains(h.Links, int(x)) {
					others[x] = true
				}
			}
		}
	}
	return len(others)
}

// describe names a hypothesis the way a person fixing it needs: which
// ports, and for a host cable that the HCA is as likely as the cable.
func (l *Locator) describe(h Hypothesis) string {
	f := l.P.F
	link := f.Links[h.Links[0]]
	if len(h.Links) == 1 {
		d := "the direction " + f.LinkName(h.Links[0])
		if i, ok := caByKey(f, link.From); ok {
			d += fmt.Sprintf(" (%s's HCA sending, or that direction of its cable)", f.CAs[i].Name)
		} else if i, ok := caByKey(f, link.To); ok {
			d += fmt.Sprintf(" (%s's HCA receiving, or that direction of its cable)", f.CAs[i].Name)
		}
		return d
	}
	ends := f.PortName(link.From) + " ↔ " + f.PortName(link.To)
	if !f.HostLink(h.Links[0]) {
		return "the cable " + ends + " (both directions)"
	}
	host, sw := link.From, link.To
	hi, ok := caByKey(f, host)
	if !ok {
		host, sw = link.To, link.From
		hi, _ = caByKey(f, host)
	}
	return fmt.Sprintf("%s: its HCA, or its cable to %s (both directions)", f.CAs[hi].Name, f.PortName(sw))
}

func caByKey(f *route.Fabric, k route.PortKey) (int, bool) {
	for i, c := range f.CAs {
		if c.Key == k {
			return i, true
		}
	}
	return 0, false
}

// ObserveByName adds one measured direction by node (CA) name, as a
// benchmark runner knows it.
func (l *Locator) ObserveByName(src, dst string, slow bool, round int) error {
	s, ok := l.P.F.CAIndex(src)
	if !ok {
		return fmt.Errorf("node %q is not a CA of the fabric", src)
	}
	d, ok := l.P.F.CAIndex(dst)
	if !ok {
		return fmt.Errorf("node %q is not a CA of the fabric", dst)
	}
	l.Observe(Observation{s, d, slow, round})
	return nil
}

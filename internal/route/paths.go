package route

import (
	"fmt"
	"sync"
)

// Paths holds the route of every ordered pair of CAs without storing a
// path per pair: a packet's route from its first switch on depends only on
// that switch and the destination's LID, so a path is the source's own
// cable followed by the suffix kept once per (entry switch, destination).
// A 4,096-CA fat tree with 128 leaves keeps 128 × 4,096 suffixes of about
// three hops (a few MB) instead of 16.7 million paths (hundreds of MB).
type Paths struct {
	F *Fabric
	N int // number of CAs

	first   []int32   // CA → the link leaving it
	entry   []int32   // CA → index of the switch it is cabled to in entries (-1: none)
	direct  []int32   // CA → the CA it is cabled to straight (-1: none)
	members [][]int32 // entry switch → the CAs cabled to it
	entrySw []int32   // entry switch → switch index
	// the suffix of (entry e, destination d) is hops[off[e*N+d]:off[e*N+d+1]];
	// fail[e*N+d] ≥ 0 indexes reasons when there is none.
	off     []int32
	hops    []int32
	fail    []int32
	reasons []string

	// Unrouted lists the pairs no path was found for, and why.
	Unrouted []Unrouted
	// Coverable is, per link, whether any pair's path crosses it.
	Coverable []bool

	once    sync.Once
	byLink  [][]int32 // link → suffix ids (e*N+d) crossing it
	leaving []int32   // link → CA it leaves (-1: none)
}

// Unrouted is a pair the forwarding tables do not deliver.
type Unrouted struct {
	Src, Dst int // CA indices
	Reason   string
}

// Paths follows the forwarding tables from every entry switch to every CA.
func (f *Fabric) Paths() *Paths {
	n := len(f.CAs)
	p := &Paths{F: f, N: n, first: make([]int32, n), entry: make([]int32, n), direct: make([]int32, n),
		Coverable: make([]bool, len(f.Links))}
	entryOf := map[int32]int32{} // switch index → entry index
	caOfPort := make(map[int32]int32, n)
	for i, port := range f.caPort {
		caOfPort[port] = int32(i)
	}
	for s := range n {
		port := f.caPort[s]
		p.first[s] = f.linkOf[port]
		p.entry[s], p.direct[s] = -1, -1
		in := f.ports[port].remote
		si := f.swOf[in]
		if si < 0 {
			if d, ok := caOfPort[in]; ok {
				p.direct[s] = d
			}
			continue
		}
		e, ok := entryOf[si]
		if !ok {
			e = int32(len(p.entrySw))
			entryOf[si] = e
			p.entrySw = append(p.entrySw, si)
			p.members = append(p.members, nil)
		}
		p.entry[s] = e
		p.members[e] = append(p.members[e], int32(s))
	}
	ne := len(p.entrySw)
	p.off = make([]int32, ne*n+1)
	p.fail = make([]int32, ne*n)
	p.hops = make([]int32, 0, ne*n*3)
	reasonIdx := map[string]int32{}
	maxHops := len(f.swPortsD) + 1
	for e, si := range p.entrySw {
		for d := range n {
			i := e*n + d
			p.off[i] = int32(len(p.hops))
			p.fail[i] = -1
			start := len(p.hops)
			if reason := f.walkFrom(int(si), d, maxHops, &p.hops); reason != "" {
				p.hops = p.hops[:start]
				r, ok := reasonIdx[reason]
				if !ok {
					r = int32(len(p.reasons))
					reasonIdx[reason] = r
					p.reasons = append(p.reasons, reason)
				}
				p.fail[i] = r
			}
		}
	}
	p.off[ne*n] = int32(len(p.hops))
	for s := range n {
		routed := false
		for d := range n {
			if s == d {
				continue
			}
			if why := p.why(s, d); why != "" {
				p.Unrouted = append(p.Unrouted, Unrouted{s, d, why})
				continue
			}
			routed = true
		}
		if routed {
			p.Coverable[p.first[s]] = true
		}
	}
	for e, ms := range p.members {
		for d := range n {
			i := e*n + d
			if p.fail[i] >= 0 || len(ms) == 1 && int(ms[0]) == d {
				continue // no pair uses this suffix
			}
			for _, l := range p.hops[p.off[i]:p.off[i+1]] {
				p.Coverable[l] = true
			}
		}
	}
	return p
}

// why says why s → d has no path ("" when it has one).
func (p *Paths) why(s, d int) string {
	e := p.entry[s]
	if e < 0 {
		if int(p.direct[s]) == d {
			return ""
		}
		return fmt.Sprintf("%s is cabled to no switch", p.F.CAs[s].Name)
	}
	if r := p.fail[int(e)*p.N+d]; r >= 0 {
		return p.reasons[r]
	}
	return ""
}

// walkFrom appends the links from switch si to CA d, or says why there is
// no path. The table is read by destination LID only, so where the packet
// came from does not matter.
func (f *Fabric) walkFrom(si, d, maxHops int, hops *[]int32) string {
	dst := f.caPort[d]
	lid := f.CAs[d].LID
	if lid <= 0 {
		return fmt.Sprintf("%s has no LID", f.CAs[d].Name)
	}
	for range maxHops {
		name := f.ports[firstPort(f.swPortsD[si])].node
		t := f.lftD[si]
		if t == nil {
			return fmt.Sprintf("no forwarding table for %s", name)
		}
		if lid >= len(t) || t[lid] < 0 {
			return fmt.Sprintf("%s has no entry for LID %d", name, lid)
		}
		out := int(t[lid])
		sw := f.swPortsD[si]
		if out == 0 || out >= len(sw) || sw[out] < 0 {
			return fmt.Sprintf("%s forwards LID %d to port %d, which has no cable", name, lid, out)
		}
		at := sw[out]
		*hops = append(*hops, f.linkOf[at])
		in := f.ports[at].remote
		if in == dst {
			return ""
		}
		if si = int(f.swOf[in]); si < 0 {
			return fmt.Sprintf("delivered to %s instead", f.ports[in].node)
		}
	}
	return fmt.Sprintf("loop: more than %d hops", maxHops+1)
}

// Routed reports whether src → dst has a path.
func (p *Paths) Routed(src, dst int) bool { return src != dst && p.why(src, dst) == "" }

// AppendPath appends the links from CA src to CA dst to buf (nothing when
// unrouted or src == dst): the allocation-free form of Path.
func (p *Paths) AppendPath(buf []int32, src, dst int) []int32 {
	if !p.Routed(src, dst) {
		return buf
	}
	buf = append(buf, p.first[src])
	if e := p.entry[src]; e >= 0 {
		i := int(e)*p.N + dst
		buf = append(buf, p.hops[p.off[i]:p.off[i+1]]...)
	}
	return buf
}

// Hops is src → dst's path without copying it: its first link (the
// source's own cable), then the rest (ok is false when unrouted or src ==
// dst). The scheduler reads millions of paths this way.
func (p *Paths) Hops(src, dst int) (first int32, rest []int32, ok bool) {
	if src == dst {
		return 0, nil, false
	}
	e := p.entry[src]
	if e < 0 {
		return p.first[src], nil, int(p.direct[src]) == dst
	}
	i := int(e)*p.N + dst
	if p.fail[i] >= 0 {
		return 0, nil, false
	}
	return p.first[src], p.hops[p.off[i]:p.off[i+1]], true
}

// Path is the links from CA src to CA dst (nil when unrouted or src == dst).
func (p *Paths) Path(src, dst int) []int32 { return p.AppendPath(nil, src, dst) }

// Uncoverable lists the links no pair's path crosses: host traffic can
// never show whether they are healthy.
func (p *Paths) Uncoverable() []int {
	var out []int
	for l, ok := range p.Coverable {
		if !ok {
			out = append(out, l)
		}
	}
	return out
}

// EachCrossing calls fn for every routed ordered pair whose path crosses
// link l (a pair may be given once per way it is found, so at most twice).
func (p *Paths) EachCrossing(l int, fn func(src, dst int)) {
	p.once.Do(p.index)
	if s := p.leaving[l]; s >= 0 {
		for d := range p.N {
			if p.Routed(int(s), d) {
				fn(int(s), d)
			}
		}
		return // a CA's own cable is the first hop of its paths only
	}
	for _, id := range p.byLink[l] {
		e, d := int(id)/p.N, int(id)%p.N
		for _, s := range p.members[e] {
			if int(s) != d && p.Routed(int(s), d) {
				fn(int(s), d)
			}
		}
	}
}

func (p *Paths) index() {
	p.byLink = make([][]int32, len(p.F.Links))
	p.leaving = make([]int32, len(p.F.Links))
	for l := range p.leaving {
		p.leaving[l] = -1
	}
	for s, l := range p.first {
		p.leaving[l] = int32(s)
	}
	for i := range len(p.fail) {
		for _, l := range p.hops[p.off[i]:p.off[i+1]] {
			p.byLink[l] = append(p.byLink[l], int32(i))
		}
	}
}

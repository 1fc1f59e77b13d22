package route

import (
	"fmt"
)

// Paths holds the route of every ordered pair of CAs, as link indices
// into Fabric.Links, in one flat array (a 1,024-CA fabric has a million
// pairs).
type Paths struct {
	F *Fabric
	N int // number of CAs
	// off[src*N+dst] .. off[src*N+dst+1] is the pair's slice of hops.
	off  []int32
	hops []int32
	// Unrouted lists the pairs no path was found for, and why.
	Unrouted []Unrouted
	// Coverable is, per link, whether any pair's path crosses it.
	Coverable []bool
}

// Unrouted is a pair the forwarding tables do not deliver.
type Unrouted struct {
	Src, Dst int // CA indices
	Reason   string
}

// Paths follows the forwarding tables from every CA to every other.
func (f *Fabric) Paths() *Paths {
	n := len(f.CAs)
	p := &Paths{F: f, N: n, off: make([]int32, n*n+1), Coverable: make([]bool, len(f.Links))}
	p.hops = make([]int32, 0, n*n*4)
	maxHops := len(f.swPortsD) + 2
	for s := range n {
		for d := range n {
			p.off[s*n+d] = int32(len(p.hops))
			if s == d {
				continue
			}
			start := len(p.hops)
			if reason := f.walk(s, d, maxHops, &p.hops); reason != "" {
				p.hops = p.hops[:start]
				p.Unrouted = append(p.Unrouted, Unrouted{s, d, reason})
			}
		}
	}
	p.off[n*n] = int32(len(p.hops))
	for _, l := range p.hops {
		p.Coverable[l] = true
	}
	return p
}

// walk appends the links from CA s to CA d, or says why there is no path.
func (f *Fabric) walk(s, d, maxHops int, hops *[]int32) string {
	src, dst := f.caPort[s], f.caPort[d]
	lid := f.CAs[d].LID
	if lid <= 0 {
		return fmt.Sprintf("%s has no LID", f.CAs[d].Name)
	}
	at := src
	for range maxHops {
		*hops = append(*hops, f.linkOf[at])
		in := f.ports[at].remote
		if in == dst {
			return ""
		}
		r := f.ports[in]
		si := f.swOf[in]
		if si < 0 {
			return fmt.Sprintf("delivered to %s instead", r.node)
		}
		t := f.lftD[si]
		if t == nil {
			return fmt.Sprintf("no forwarding table for %s", r.node)
		}
		if lid >= len(t) || t[lid] < 0 {
			return fmt.Sprintf("%s has no entry for LID %d", r.node, lid)
		}
		out := int(t[lid])
		sw := f.swPortsD[si]
		if out == 0 || out >= len(sw) || sw[out] < 0 {
			return fmt.Sprintf("%s forwards LID %d to port %d, which has no cable", r.node, lid, out)
		}
		at = sw[out]
	}
	return fmt.Sprintf("loop: more than %d hops", maxHops)
}

// Path is the links from CA src to CA dst (nil when unrouted or src == dst).
func (p *Paths) Path(src, dst int) []int32 {
	i := src*p.N + dst
	return p.hops[p.off[i]:p.off[i+1]]
}

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

// Index lists, per link, the pairs (src*N+dst) whose paths cross it.
func (p *Paths) Index() [][]int32 {
	idx := make([][]int32, len(p.F.Links))
	for i := range p.N * p.N {
		for _, l := range p.hops[p.off[i]:p.off[i+1]] {
			idx[l] = append(idx[l], int32(i))
		}
	}
	return idx
}

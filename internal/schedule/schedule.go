// Package schedule decides which pairs of hosts to measure, round by
// round, so that every link host traffic can reach carries traffic in as
// few rounds as possible (a cover schedule computed from the real routes),
// compares that with the oblivious circle method, localises a degraded
// link from slow and fast pair verdicts, and reads and writes the round
// files other tools use (SuperBench's `i,j;k,l`, ClusterKit's
// `<round> <node1> <node2>`).
package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/route"
)

// Pair is two nodes measured against each other, both directions.
type Pair struct {
	A string `json:"a"`
	B string `json:"b"`
}

// Schedule is rounds of pairs by node name: what a benchmark runner
// consumes. In a round each node is in at most one pair. Nodes is the host
// order (SuperBench's indices refer to it).
type Schedule struct {
	Nodes  []string `json:"nodes"`
	Rounds [][]Pair `json:"rounds"`
}

// IPair is a pair by CA index into route.Fabric.CAs.
type IPair struct{ A, B int }

// Cover is a cover schedule and what it achieves.
type Cover struct {
	Rounds [][]IPair
	// RoundLinks are, per round, the links its pairs cross (both
	// directions of every pair), sorted.
	RoundLinks [][]int
	// Coverable is how many directed links some pair's path crosses;
	// Covered how many of them the rounds cross (equal unless a bug).
	Coverable, Covered int
	Elapsed            time.Duration
}

// CoverRounds computes a cover schedule: rounds of disjoint pairs that,
// measured in both directions, together cross every coverable link. Each
// round is built greedily, the pair crossing the most links not yet
// crossed first (exact lazy greedy over a bucket queue: a pair's gain
// only falls), until no pair with free nodes adds a link.
func CoverRounds(p *route.Paths) *Cover {
	start := time.Now()
	n := p.N
	covered := make([]bool, len(p.Coverable))
	remaining := 0
	for _, c := range p.Coverable {
		if c {
			remaining++
		}
	}
	c := &Cover{Coverable: remaining}
	var buf []int32
	count := func(a, b int) int {
		first, rest, ok := p.Hops(a, b)
		if !ok {
			return 0
		}
		g := 0
		if !covered[first] {
			g++
		}
		for _, l := range rest {
			if !covered[l] {
				g++
			}
		}
		return g
	}
	gain := func(a, b int) int { return count(a, b) + count(b, a) }
	used := make([]int, n) // round number+1 a node was last used in
	gains := make([]uint16, 0, n*(n-1)/2)
	for round := 1; remaining > 0; round++ {
		// buckets by gain; a pair is a single int a*n+b, a < b. Gains are
		// counted first so that every bucket is allocated once, exactly.
		gains = gains[:0]
		var sizes []int
		for a := range n {
			for b := a + 1; b < n; b++ {
				g := gain(a, b)
				for len(sizes) <= g {
					sizes = append(sizes, 0)
				}
				sizes[g]++
				gains = append(gains, uint16(min(g, 1<<16-1)))
			}
		}
		buckets := make([][]int32, len(sizes))
		for g := 1; g < len(sizes); g++ {
			buckets[g] = make([]int32, 0, sizes[g])
		}
		k := 0
		for a := range n {
			for b := a + 1; b < n; b++ {
				if g := gains[k]; g > 0 {
					buckets[g] = append(buckets[g], int32(a*n+b))
				}
				k++
			}
		}
		var pairs []IPair
		for g := len(buckets) - 1; g > 0; g-- {
			for len(buckets[g]) > 0 {
				last := len(buckets[g]) - 1
				ab := int(buckets[g][last])
				buckets[g] = buckets[g][:last]
				a, b := ab/n, ab%n
				if used[a] == round || used[b] == round {
					continue
				}
				if now := gain(a, b); now < g {
					if now > 0 {
						buckets[now] = append(buckets[now], int32(ab))
					}
					continue
				}
				used[a], used[b] = round, round
				pairs = append(pairs, IPair{a, b})
				for _, l := range p.AppendPath(p.AppendPath(buf[:0], a, b), b, a) {
					if !covered[l] {
						covered[l] = true
						remaining--
					}
				}
			}
		}
		if len(pairs) == 0 {
			break // cannot happen while a coverable link is left; never loop
		}
		slices.SortFunc(pairs, func(x, y IPair) int { return x.A - y.A })
		c.Rounds = append(c.Rounds, pairs)
	}
	for _, r := range c.Rounds {
		c.RoundLinks = append(c.RoundLinks, RoundLinks(p, r))
	}
	c.Covered = c.Coverable - remaining
	c.Elapsed = time.Since(start)
	return c
}

// RoundLinks are the links a round's pairs cross, both directions, sorted.
func RoundLinks(p *route.Paths, round []IPair) []int {
	seen := map[int32]bool{}
	var out []int
	for _, pr := range round {
		for _, path := range [][]int32{p.Path(pr.A, pr.B), p.Path(pr.B, pr.A)} {
			for _, l := range path {
				if !seen[l] {
					seen[l] = true
					out = append(out, int(l))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Circle is the circle method over n nodes in the given order (indices):
// one node stays, the others rotate; n even gives n−1 rounds of n/2
// disjoint pairs, n odd n rounds with one node resting in each. This is
// what ClusterKit FULL and SuperBench pair-wise run.
func Circle(order []int) [][]IPair {
	var rounds [][]IPair
	eachCircleRound(order, func(r []IPair) bool {
		rounds = append(rounds, slices.Clone(r))
		return true
	})
	return rounds
}

// CircleRounds is how many rounds the circle method takes over n nodes.
func CircleRounds(n int) int {
	if n < 2 {
		return 0
	}
	return n - 1 + n%2
}

// eachCircleRound gives the circle method's rounds one at a time (the
// slice is reused) until fn returns false: all of them at 4,096 nodes
// would be 8 million pairs.
func eachCircleRound(order []int, fn func([]IPair) bool) {
	n := len(order)
	round := make([]IPair, 0, n/2)
	for r := range CircleRounds(n) {
		round = round[:0]
		CircleRound(n, r, func(a, b int) { round = append(round, IPair{order[a], order[b]}) })
		if !fn(round) {
			return
		}
	}
}

// CircleRoundsToCover counts the circle method's rounds, in this host
// order, until every coverable link has carried traffic.
func CircleRoundsToCover(p *route.Paths, order []int) int {
	covered := make([]bool, len(p.Coverable))
	remaining := 0
	for _, c := range p.Coverable {
		if c {
			remaining++
		}
	}
	if remaining == 0 {
		return 0
	}
	rounds, done := 0, -1 // -1 is unreachable: all pairs cross every coverable link
	var buf []int32
	eachCircleRound(order, func(round []IPair) bool {
		rounds++
		for _, pr := range round {
			for _, l := range p.AppendPath(p.AppendPath(buf[:0], pr.A, pr.B), pr.B, pr.A) {
				if !covered[l] {
					covered[l] = true
					remaining--
				}
			}
		}
		if remaining == 0 {
			done = rounds
			return false
		}
		return true
	})
	return done
}

// Named turns index rounds into a Schedule by CA name.
func Named(f *route.Fabric, rounds [][]IPair) *Schedule {
	s := &Schedule{Nodes: make([]string, len(f.CAs)), Rounds: make([][]Pair, len(rounds))}
	for i, c := range f.CAs {
		s.Nodes[i] = c.Name
	}
	for i, r := range rounds {
		s.Rounds[i] = make([]Pair, len(r))
		for j, pr := range r {
			s.Rounds[i][j] = Pair{f.CAs[pr.A].Name, f.CAs[pr.B].Name}
		}
	}
	return s
}

// ByHost renames every node to its host: the first word of the CA's node
// description, which rdma-core sets to "<hostname> <device>" (and ibsim
// examples to "<host> HCA-1"), so a round file names the cluster file's
// nodes. A host with several CAs in the schedule cannot be named by host
// alone, and is refused.
func (s *Schedule) ByHost() (*Schedule, error) {
	host := map[string]string{}
	owner := map[string]string{}
	out := &Schedule{}
	for _, n := range s.Nodes {
		h, _, _ := strings.Cut(strings.TrimSpace(n), " ")
		if h == "" {
			return nil, fmt.Errorf("node %q has no host name to go by", n)
		}
		if o, dup := owner[h]; dup {
			return nil, fmt.Errorf("host %s has several CAs (%q, %q): a round file by host name cannot say which; use the CA names", h, o, n)
		}
		host[n], owner[h] = h, n
		out.Nodes = append(out.Nodes, h)
	}
	for _, round := range s.Rounds {
		var r []Pair
		for _, p := range round {
			r = append(r, Pair{A: host[p.A], B: host[p.B]})
		}
		out.Rounds = append(out.Rounds, r)
	}
	return out, nil
}

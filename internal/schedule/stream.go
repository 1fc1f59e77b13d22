package schedule

// Rounds given one at a time: a schedule over thousands of nodes is never
// held whole (the circle method over 20,000 nodes is 200 million pairs),
// only the round being measured.

// CircleRound calls fn for every pair of round r (from 0) of the circle
// method over n nodes, in the order eachCircleRound gives them. Closed
// form: position 0 stays, position k ≥ 1 holds node ((k−1−r) mod (m−1))+1
// with m = n rounded up to even (node n is the bye). O(1) memory.
func CircleRound(n, r int, fn func(a, b int)) {
	if n < 2 {
		return
	}
	m := n + n%2
	at := func(k int) int {
		if k == 0 {
			return 0
		}
		return ((k-1-r)%(m-1)+(m-1))%(m-1) + 1
	}
	for i := range m / 2 {
		a, b := at(i), at(m-1-i)
		if a >= n || b >= n {
			continue
		}
		fn(a, b)
	}
}

// Matchings is the fast default schedule without a fabric: K rounds, each
// a perfect matching of the nodes (one rests when n is odd), no pair met
// twice. They are the first K rounds of the circle method over the nodes
// in an order shuffled with a fixed seed, so partners are drawn from the
// whole cluster (not the neighbours in the cluster file, often one rack)
// and a rerun plans the same pairs.
type Matchings struct {
	K     int
	order []int32
}

// MatchingSeed fixes the shuffle: the same cluster file, the same pairs.
const MatchingSeed = 0x7264_6d61_6c61_62 // "rdmalab"

// NewMatchings plans k matchings over n nodes (k is capped at the circle
// method's rounds: more would repeat pairs). O(n) memory.
func NewMatchings(n, k int) *Matchings {
	m := &Matchings{K: min(k, CircleRounds(n)), order: make([]int32, n)}
	for i := range m.order {
		m.order[i] = int32(i)
	}
	// Fisher–Yates with a splitmix64 stream: stable across Go releases.
	s := uint64(MatchingSeed)
	next := func() uint64 {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for i := n - 1; i > 0; i-- {
		j := int(next() % uint64(i+1))
		m.order[i], m.order[j] = m.order[j], m.order[i]
	}
	return m
}

// Round calls fn for every pair of round r (from 0), by node index.
func (m *Matchings) Round(r int, fn func(a, b int)) {
	CircleRound(len(m.order), r, func(a, b int) { fn(int(m.order[a]), int(m.order[b])) })
}

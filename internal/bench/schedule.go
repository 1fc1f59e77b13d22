package bench

// Pair is two nodes, by index into the cluster's node list, A < B.
type Pair struct{ A, B int }

// Rounds schedules every pair of n nodes once with the circle method: one
// node stays, the others rotate; n even gives n−1 rounds of n/2 disjoint
// pairs, n odd gives n rounds with one node resting in each.
func Rounds(n int) [][]Pair {
	if n < 2 {
		return nil
	}
	m := n
	if m%2 == 1 {
		m++ // a bye
	}
	ring := make([]int, m)
	for i := range ring {
		ring[i] = i
	}
	var rounds [][]Pair
	for range m - 1 {
		var round []Pair
		for i := range m / 2 {
			a, b := ring[i], ring[m-1-i]
			if a >= n || b >= n {
				continue
			}
			if a > b {
				a, b = b, a
			}
			round = append(round, Pair{a, b})
		}
		rounds = append(rounds, round)
		// rotate all but the first
		last := ring[m-1]
		copy(ring[2:], ring[1:m-1])
		ring[1] = last
	}
	return rounds
}

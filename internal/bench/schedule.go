package bench

import "github.com/rdmalab/rdmalab/internal/schedule"

// Pair is two nodes, by index into the cluster's node list, A < B.
type Pair struct{ A, B int }

// Rounds schedules every pair of n nodes once with the circle method
// (schedule.Circle in node order): n even gives n−1 rounds of n/2
// disjoint pairs, n odd gives n rounds with one node resting in each.
func Rounds(n int) [][]Pair {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	var rounds [][]Pair
	for _, round := range schedule.Circle(order) {
		out := make([]Pair, len(round))
		for i, p := range round {
			out[i] = Pair{min(p.A, p.B), max(p.A, p.B)}
		}
		rounds = append(rounds, out)
	}
	return rounds
}

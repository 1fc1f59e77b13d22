package bench

import (
	"fmt"

	"github.com/rdmalab/rdmalab/internal/schedule"
)

// Pair is two nodes, by index into the cluster's node list, A < B.
type Pair struct{ A, B int }

// Plan is a schedule given one round at a time, so the orchestrator holds
// the pairs of one round, never the whole schedule: O(nodes + pairs of a
// round) whatever the cluster's size.
type Plan interface {
	// Name is the schedule as --schedule spells it.
	Name() string
	// Len is how many rounds it has.
	Len() int
	// Round appends the pairs of round i (from 0) to buf.
	Round(i int, buf []Pair) []Pair
	// Why says, for the person starting the run, how many rounds and why.
	Why() string
}

// CircleMax is the largest cluster the default schedule measures every
// pair of (the circle method): 15 rounds. Beyond it the default is
// MatchingRounds perfect matchings.
const CircleMax = 16

// MatchingRounds is how many matchings the default schedule runs beyond
// CircleMax nodes: three partners per node, so a node slow with every
// partner has at least two bad directions of three on its bad side (what
// names a suspect) while each of its partners has one of three.
const MatchingRounds = 3

// DefaultSchedule is the schedule bench runs when none is asked for.
func DefaultSchedule(nodes int) string {
	if nodes <= CircleMax {
		return "circle"
	}
	return "matching"
}

type circlePlan struct{ n int }

// CirclePlan is every pair of n nodes once, by the circle method in node
// order: n even gives n−1 rounds of n/2 disjoint pairs, n odd gives n
// rounds with one node resting in each.
func CirclePlan(n int) Plan { return circlePlan{n} }

func (p circlePlan) Name() string { return "circle" }
func (p circlePlan) Len() int     { return schedule.CircleRounds(p.n) }
func (p circlePlan) Round(i int, buf []Pair) []Pair {
	schedule.CircleRound(p.n, i, func(a, b int) { buf = append(buf, Pair{min(a, b), max(a, b)}) })
	return buf
}
func (p circlePlan) Why() string {
	return fmt.Sprintf("circle: %d round(s) of %d pair(s): every pair of the %d nodes, both ways (N−1 rounds, N odd: N)", p.Len(), p.n/2, p.n)
}

type matchingPlan struct {
	n int
	m *schedule.Matchings
}

// MatchingPlan is k perfect matchings of n nodes (schedule.Matchings):
// every node's link carries traffic both ways with k different partners
// drawn from the whole cluster, in k rounds whatever n.
func MatchingPlan(n, k int) Plan { return matchingPlan{n, schedule.NewMatchings(n, k)} }

func (p matchingPlan) Name() string { return "matching" }
func (p matchingPlan) Len() int     { return p.m.K }
func (p matchingPlan) Round(i int, buf []Pair) []Pair {
	p.m.Round(i, func(a, b int) { buf = append(buf, Pair{min(a, b), max(a, b)}) })
	return buf
}
func (p matchingPlan) Why() string {
	return fmt.Sprintf("matching: %d round(s) of %d pair(s): every node meets %d partners from the whole cluster, both ways (all pairs would take %d rounds); then each suspect side is retested against 2 known-good partners, one direction a round (up to 4 rounds for a node slow both ways)",
		p.Len(), p.n/2, p.Len(), schedule.CircleRounds(p.n))
}

// FixedPlan is a plan of rounds given in full (a round file, the cover
// rounds), named and explained.
func FixedPlan(name, why string, rounds [][]Pair) Plan {
	return fixedPlan{name: name, why: why, rounds: rounds}
}

type fixedPlan struct {
	name, why string
	rounds    [][]Pair
}

func (p fixedPlan) Name() string                   { return p.name }
func (p fixedPlan) Len() int                       { return len(p.rounds) }
func (p fixedPlan) Round(i int, buf []Pair) []Pair { return append(buf, p.rounds[i]...) }
func (p fixedPlan) Why() string                    { return p.why }

// PlanFor is the plan of a schedule name over n nodes ("" is the default).
func PlanFor(name string, n int) Plan {
	if name == "" {
		name = DefaultSchedule(n)
	}
	if name == "matching" {
		return MatchingPlan(n, MatchingRounds)
	}
	return CirclePlan(n)
}

// RoundsUsed is what a run took: the schedule's rounds that measured
// something (with the localiser's follow-ups), and the retest rounds.
type RoundsUsed struct {
	Schedule string `json:"schedule"`
	Measured int    `json:"measured"`
	Retest   int    `json:"retest"`
}

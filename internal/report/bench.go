package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/rdmalab/rdmalab/internal/bench"
)

// Bench renders a bench run: worst pairs first, a score per node, the
// suspects the retests named, and the pair matrix.
func Bench(w io.Writer, nodes []string, results []bench.Result) {
	var first, retests []bench.Result
	for _, r := range results {
		if r.Retest {
			retests = append(retests, r)
		} else {
			first = append(first, r)
		}
	}
	counts := map[string]int{}
	for _, r := range first {
		counts[cmp.Or(r.Verdict, map[bool]string{true: "error", false: "measured"}[r.Error != ""])]++
	}
	fmt.Fprintf(w, "%d pair(s): %d healthy · %d degraded · %d broken · %d error(s)\n\n", len(first), counts[bench.Healthy], counts[bench.Degraded], counts[bench.Broken], counts["error"])

	worst := slices.Clone(first)
	slices.SortStableFunc(worst, func(a, b bench.Result) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Ratio, b.Ratio), cmp.Compare(a.Gbps, b.Gbps))
	})
	t := newTable(w, "Pairs, worst first")
	t.AppendHeader(table.Row{"Server", "Client", "Result"})
	for _, r := range worst {
		what := r.Judgment
		if r.Error != "" {
			what = "✗ " + r.Error
		}
		t.AppendRow(table.Row{r.A, r.B, what})
	}
	t.Render()
	fmt.Fprintln(w)

	score := map[string][]float64{}
	for _, r := range first {
		v := r.Ratio
		if r.Error != "" {
			v = 0
		}
		score[r.A] = append(score[r.A], v)
		score[r.B] = append(score[r.B], v)
	}
	t = newTable(w, "Nodes (mean share of the link's ceiling over their pairs)")
	t.AppendHeader(table.Row{"Node", "Score", "Pairs"})
	for _, n := range nodes {
		s := score[n]
		sum := 0.0
		for _, v := range s {
			sum += v
		}
		mean := "-"
		if len(s) > 0 {
			mean = fmt.Sprintf("%.0f%%", 100*sum/float64(len(s)))
		}
		t.AppendRow(table.Row{n, mean, len(s)})
	}
	t.Render()
	if len(retests) > 0 {
		fmt.Fprintln(w)
		for _, r := range retests {
			if r.Error != "" || r.Verdict != bench.Healthy {
				fmt.Fprintf(w, "✗ suspect %s: against known-good %s it is still %s\n", r.B, r.A, cmp.Or(r.Verdict, "failing: "+r.Error))
			} else {
				fmt.Fprintf(w, "✓ %s is fine against known-good %s: its bad pair is the other node or the link between them\n", r.B, r.A)
			}
		}
	}
}

func rank(r bench.Result) int {
	switch {
	case r.Error != "":
		return 0
	case r.Verdict == bench.Broken:
		return 1
	case r.Verdict == bench.Degraded:
		return 2
	}
	return 3
}

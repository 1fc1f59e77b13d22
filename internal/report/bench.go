package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
)

// Bench renders a judged bench run: what it was judged against, each
// node's two sides, the directions that need attention worst first, then
// the findings with their evidence and fixes.
func Bench(w io.Writer, rep *bench.Report) {
	against := "the peers' median of each link class (no rate declared)"
	if rep.RateDeclared {
		against = "what " + rep.Link + " can carry and the peers' median"
	}
	if rep.Latency {
		against = "the peers' median p50 latency"
	}
	fmt.Fprintf(w, "%s %s: %d direction(s), cluster median %s, judged against %s\n\n", rep.Engine, rep.Test, len(rep.Directions), rep.FormatValue(rep.MedianValue), against)
	if cv := rep.Cover; cv != nil {
		what := cv.What
		if f := cv.Fault; f != nil && f.Kind == "node" {
			what = fmt.Sprintf("node %s (its HCA, or its cable %s ↔ %s)", f.Node, f.Ends[0].Name, f.Ends[1].Name)
		} else if f != nil {
			what = fmt.Sprintf("the cable %s ↔ %s", f.Ends[0].Name, f.Ends[1].Name)
		}
		fmt.Fprintf(w, "Cover: %d round(s) planned from the routes (%s), %d follow-up round(s); %s: %s", cv.InitialRounds, cv.Source, cv.FollowUps, cv.State, what)
		if cv.Confidence != "" {
			fmt.Fprintf(w, " (confidence %s)", cv.Confidence)
		}
		fmt.Fprint(w, "\n\n")
	}

	t := newTable(w, "Nodes")
	if rep.Latency {
		t.AppendHeader(table.Row{"Node", "Sending p50", "Receiving p50", "Bad send", "Bad receive", "Note"})
	} else {
		t.AppendHeader(table.Row{"Node", "Sends", "Receives", "Score", "Bad send", "Bad receive", "Note"})
	}
	for _, n := range rep.Nodes {
		note := n.Out
		if n.Failed > 0 && note == "" {
			note = fmt.Sprintf("%d direction(s) failed", n.Failed)
		}
		bad := func(b, total int) string { return fmt.Sprintf("%d/%d", b, total) }
		if rep.Latency {
			t.AppendRow(table.Row{n.Name, value(rep, n.SendValue, n.SendTotal), value(rep, n.RecvValue, n.RecvTotal), bad(n.SendBad, n.SendTotal), bad(n.RecvBad, n.RecvTotal), note})
			continue
		}
		score := "-"
		if rep.MedianValue > 0 && n.SendTotal > 0 && n.RecvTotal > 0 {
			score = fmt.Sprintf("%.0f%%", 100*min(n.SendValue, n.RecvValue)/rep.MedianValue)
		}
		t.AppendRow(table.Row{n.Name, value(rep, n.SendValue, n.SendTotal), value(rep, n.RecvValue, n.RecvTotal), score, bad(n.SendBad, n.SendTotal), bad(n.RecvBad, n.RecvTotal), note})
	}
	t.Render()
	if !rep.Latency {
		fmt.Fprintln(w, "Score: the worse side's median over the cluster median.")
	}
	fmt.Fprintln(w)

	var attention []bench.Direction
	for _, d := range rep.Directions {
		if d.NotMeasured != "" && (rep.Out[d.From] != "" || rep.Out[d.To] != "") {
			continue // the node's own finding says it once
		}
		if d.Bad || d.Failed() || d.Above {
			attention = append(attention, d)
		}
	}
	slices.SortStableFunc(attention, func(a, b bench.Direction) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Share, b.Share))
	})
	if len(attention) == 0 {
		fmt.Fprintf(w, "All %d directions within the thresholds.\n", len(rep.Directions))
	} else {
		t = newTable(w, "Directions needing attention, worst first")
		t.AppendHeader(table.Row{"Sender → receiver", "Result", "Why"})
		for _, d := range attention {
			res := rep.FormatValue(valueOf(rep, d))
			why := d.Why
			switch {
			case d.NotMeasured != "":
				res, why = "not measured", d.NotMeasured
			case d.Failed():
				res, why = "failed", d.Error
			case d.Above:
				why = fmt.Sprintf("above the ceiling (%.0f%% of %.2f Gb/s): suspect", 100*d.CeilingShare, d.CeilingGbps)
			}
			t.AppendRow(table.Row{d.From + " → " + d.To, res, why})
		}
		t.Render()
	}
	fmt.Fprintln(w)
	check.Sort(rep.Findings)
	Findings(w, rep.Findings, false)
}

func value(rep *bench.Report, v float64, n int) string {
	if n == 0 {
		return "-"
	}
	return rep.FormatValue(v)
}

func valueOf(rep *bench.Report, d bench.Direction) float64 {
	if rep.Latency {
		return d.P50Us
	}
	return d.Gbps
}

func rank(d bench.Direction) int {
	switch {
	case d.Failed():
		return 0
	case d.Bad:
		return 1
	}
	return 2
}

// Package htmlreport renders a report.ClusterView as one self-contained
// HTML page: no scripts, fonts, styles or images from anywhere else (inline
// CSS and SVG only), readable without JavaScript, every input value escaped
// by html/template (node names are user data), colours from a
// colour-blind-safe palette and always next to the number or word they
// encode.
package htmlreport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/report"
)

//go:embed report.html.tmpl
var pageText string

//go:embed report.css
var css string

// Options are the page's own settings.
type Options struct {
	Title string // the page title; default "rdmalab cluster report"
}

// Write renders the view as one HTML document.
func Write(w io.Writer, v *report.ClusterView, o Options) error {
	if o.Title == "" {
		o.Title = "rdmalab cluster report"
	}
	d := page{Title: o.Title, CSS: template.CSS(css), V: v}
	for _, b := range v.Benches {
		d.Benches = append(d.Benches, newBenchPage(b))
	}
	return pageTmpl.Execute(w, d)
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct":     func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"gbps":    func(f float64) string { return fmt.Sprintf("%.2f Gb/s", f) },
	"us":      func(f float64) string { return fmt.Sprintf("%.1f µs", f) },
	"upper":   strings.ToUpper,
	"outcome": func(o check.Outcome) string { return string(o) },
	"level":   levelClass,
	"plural":  func(n int, one, many string) string { return map[bool]string{true: one, false: many}[n == 1] },
	"outcomes": func() []check.Outcome {
		return report.Outcomes
	},
	"count": func(c report.Counts, o check.Outcome) int { return c.Of(o) },
	"state": func(s report.VerdictState) string { return strings.ReplaceAll(string(s), " ", "-") },
}).Parse(pageText))

type page struct {
	Title   string
	CSS     template.CSS
	V       *report.ClusterView
	Benches []benchPage
}

// benchPage is a BenchView with its drawings laid out.
type benchPage struct {
	report.BenchView
	Heats  []heatmap // bandwidth: one; latency: typical (p50) and p99.9
	Sweeps []sweepPlot
}

// Okabe–Ito outcome colours live in report.css; the heatmaps use viridis,
// which stays ordered in lightness for every kind of colour vision.
var viridis = []struct {
	at      float64
	r, g, b float64
}{{0, 68, 1, 84}, {0.25, 59, 82, 139}, {0.5, 33, 145, 140}, {0.75, 94, 201, 98}, {1, 253, 231, 37}}

// ramp returns the viridis colour at x in [0,1] and the ink (text colour)
// readable on it.
func ramp(x float64) (fill, ink string) {
	x = math.Max(0, math.Min(1, x))
	for i := 1; i < len(viridis); i++ {
		a, b := viridis[i-1], viridis[i]
		if x <= b.at {
			t := (x - a.at) / (b.at - a.at)
			r, g, bl := a.r+t*(b.r-a.r), a.g+t*(b.g-a.g), a.b+t*(b.b-a.b)
			ink = "#fff"
			if 0.2126*r+0.7152*g+0.0722*bl > 140 {
				ink = "#000"
			}
			return fmt.Sprintf("#%02x%02x%02x", int(r), int(g), int(bl)), ink
		}
	}
	return "#fde725", "#000"
}

type heatmap struct {
	Title         string
	Aria          string
	Legend        []legendStop
	LegendNote    string
	Width, Height int
	RowLabels     []label
	ColLabels     []label
	Cells         []heatCell
}

type label struct {
	X, Y int
	Text string
}

type heatCell struct {
	X, Y, Size int
	Fill, Ink  string
	Text       string // the number in the cell
	Title      string // on hover
	Class      string
	TX, TY     int
}

type legendStop struct {
	Fill, Ink, Text string
}

const (
	cellPx   = 56
	labelPx  = 120
	headerPx = 100
)

func newBenchPage(b report.BenchView) benchPage {
	p := benchPage{BenchView: b}
	for _, s := range b.Sweeps {
		p.Sweeps = append(p.Sweeps, newSweepPlot(s))
	}
	if len(b.Nodes) < 2 {
		return p
	}
	if !b.Latency {
		title := "Bandwidth heatmap: % of what each link can carry"
		if b.RelativeOnly {
			title = "Bandwidth heatmap: % of the best pair (no link ceiling was given)"
		}
		h := newHeatmap(b, title, "bandwidth", func(c report.PairCell) (float64, string, string) {
			return shareScale(c.Share), fmt.Sprintf("%.0f", 100*c.Share), fmt.Sprintf("%s ↔ %s: %s", c.A, c.B, c.Text)
		})
		for _, x := range []float64{1, 0.95, 0.9, 0.8, 0.6, 0.4, 0} {
			f, ink := ramp(shareScale(x))
			h.Legend = append(h.Legend, legendStop{f, ink, fmt.Sprintf("%.0f%%", 100*x)})
		}
		h.LegendNote = "the scale bends at bench's default thresholds: healthy ≥ 95%, degraded ≥ 80%"
		p.Heats = append(p.Heats, h)
		return p
	}
	for _, m := range []struct {
		name, aria string
		of         func(report.PairCell) float64
	}{
		{"Latency heatmap, typical (p50) in µs, lower is better", "typical latency", func(c report.PairCell) float64 { return c.P50Us }},
		{"Latency heatmap, p99.9 in µs, lower is better", "p99.9 latency", func(c report.PairCell) float64 { return c.P999Us }},
	} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range b.Pairs {
			if c.Measured && c.Verdict != "error" {
				lo, hi = math.Min(lo, m.of(c)), math.Max(hi, m.of(c))
			}
		}
		scale := func(us float64) float64 {
			if hi <= lo {
				return 1
			}
			return 1 - (us-lo)/(hi-lo)
		}
		h := newHeatmap(b, m.name, m.aria, func(c report.PairCell) (float64, string, string) {
			return scale(m.of(c)), fmt.Sprintf("%.0f", m.of(c)),
				fmt.Sprintf("%s ↔ %s: p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs", c.A, c.B, c.P50Us, c.P99Us, c.P999Us)
		})
		if !math.IsInf(lo, 1) {
			for _, x := range []float64{1, 0.75, 0.5, 0.25, 0} {
				f, ink := ramp(x)
				h.Legend = append(h.Legend, legendStop{f, ink, fmt.Sprintf("%.0f µs", lo+(1-x)*(hi-lo))})
			}
		}
		p.Heats = append(p.Heats, h)
	}
	return p
}

// newHeatmap lays out one cell per pair: rows are nodes 0..n-2, columns
// nodes 1..n-1, the upper triangle. value gives a measured cell's position
// on the colour ramp, its number and its hover text.
func newHeatmap(b report.BenchView, title, aria string, value func(report.PairCell) (float64, string, string)) heatmap {
	n := len(b.Nodes)
	h := heatmap{Title: title, Aria: aria, Width: labelPx + (n-1)*cellPx + 4, Height: headerPx + (n-1)*cellPx + 4}
	for i := 0; i < n-1; i++ {
		h.RowLabels = append(h.RowLabels, label{X: labelPx - 6, Y: headerPx + i*cellPx + cellPx/2 + 4, Text: b.Nodes[i]})
	}
	for j := 1; j < n; j++ {
		h.ColLabels = append(h.ColLabels, label{X: labelPx + (j-1)*cellPx + cellPx/2, Y: headerPx - 8, Text: b.Nodes[j]})
	}
	for _, c := range b.Pairs {
		x, y := labelPx+(c.Col-1)*cellPx, headerPx+c.Row*cellPx
		hc := heatCell{X: x, Y: y, Size: cellPx - 2, TX: x + (cellPx-2)/2, TY: y + (cellPx-2)/2 + 4, Class: "cell " + c.Verdict}
		switch {
		case !c.Measured:
			hc.Fill, hc.Ink, hc.Text = "#e8e8e8", "#000", "–"
			hc.Title = fmt.Sprintf("%s ↔ %s: not measured", c.A, c.B)
		case c.Verdict == "error":
			hc.Fill, hc.Ink, hc.Text = "#000", "#fff", "✗"
			hc.Title = fmt.Sprintf("%s ↔ %s: failed: %s", c.A, c.B, c.Text)
		default:
			var at float64
			at, hc.Text, hc.Title = value(c)
			hc.Fill, hc.Ink = ramp(at)
		}
		h.Cells = append(h.Cells, hc)
	}
	return h
}

// shareScale bends the colour scale at bench's default thresholds, so the
// colours split where the verdicts do: below 80% (broken) the dark half of
// viridis, 80–95% (degraded) the greens, 95% and up (healthy) the yellows.
func shareScale(share float64) float64 {
	d, h := bench.DefaultThresholds.Degraded, bench.DefaultThresholds.Healthy
	switch {
	case share < d:
		return math.Max(0, share) / d * 0.5
	case share < h:
		return 0.5 + (share-d)/(h-d)*0.35
	}
	return 0.85 + math.Min(share-h, 0.05)/0.05*0.15
}

// levelClass colours a GPU↔NIC path level from near (PIX) to far (SYS).
func levelClass(l string) string {
	switch l {
	case "PIX", "PXB", "PHB", "NODE", "SYS":
		return "lvl-" + strings.ToLower(l)
	}
	return "lvl-unknown"
}

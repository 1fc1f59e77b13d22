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
	"sync"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

//go:embed report.html.tmpl
var pageText string

//go:embed report.css
var css string

// Options are the page's own settings.
type Options struct {
	Title string // the page title; default "rdmalab cluster report"
}

// Write renders the view as one HTML document. html/template escapes
// markup; the page goes out through userfile.ControlWriter, the one place
// the HTML renderer escapes what markup escaping leaves (ESC, CR and other
// control characters of hostnames, device names and node descriptions,
// shown as \x1b, \r). A newline in a name is whitespace in HTML: it
// cannot start a row.
func Write(w io.Writer, v *report.ClusterView, o Options) error {
	w = userfile.ControlWriter(w)
	if o.Title == "" {
		o.Title = "rdmalab cluster report"
	}
	d := page{Title: o.Title, CSS: template.CSS(css), V: v}
	for _, b := range v.Benches {
		d.Benches = append(d.Benches, newBenchPage(b))
	}
	return pageTmpl().Execute(w, d)
}

// pageTmpl is parsed on first use: parsing it costs every other command
// of rdmalab start-up time.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"upper":   strings.ToUpper,
		"said":    report.Said,
		"outcome": func(o check.Outcome) string { return string(o) },
		"level":   levelClass,
		"plural":  func(n int, one, many string) string { return map[bool]string{true: one, false: many}[n == 1] },
		"outcomes": func() []check.Outcome {
			return report.Outcomes
		},
		"count":      func(c report.Counts, o check.Outcome) int { return c.Of(o) },
		"cellStates": func() []string { return report.CellStates },
		"stateBadge": func(s string) string { return stateBadge[s] },
		"state":      func(s report.VerdictState) string { return strings.ReplaceAll(string(s), " ", "-") },
		"pct":        func(v float64) string { return fmt.Sprintf("%+.0f%%", 100*v) },
		"hundred":    func(v float64) float64 { return 100 * v },
		"changeBadge": func(v string) string {
			return map[string]string{compare.Worse: "fail", compare.Better: "pass", compare.NoChange: "pass"}[v]
		},
	}).Parse(pageText))
})

type page struct {
	Title   string
	CSS     template.CSS
	V       *report.ClusterView
	Benches []benchPage
}

// benchPage is a BenchView with its drawings and tables laid out.
type benchPage struct {
	report.BenchView
	Heats []heatmap // bandwidth: one; latency: p50 and p99.9
	Rows  []dirRow  // every direction, for the table
	Sides []sideRow

	// Fabric is --schedule cover's links drawing (nil without a cover).
	Fabric *fabricDrawing
	// PHY is the named cable's ends with their own physical layer.
	PHY []phyEnd
}

// dirRow is one direction as the accessible table prints it.
type dirRow struct {
	From, To, Value, P99, P999, Share, Ceiling, State, Badge, Why string
	Samples                                                       int
}

// sideRow is one node's two sides.
type sideRow struct {
	Name, Send, Recv, BadSend, BadRecv, Note string
	SendBad, RecvBad                         bool
	Failed                                   int
}

// The heatmaps' colours are the verdict's, from the Okabe–Ito palette
// the outcome badges use (report.css), safe for every kind of colour
// vision and read the usual way: bluish green good, yellow noisy (measure
// again), orange degraded, vermillion broken or bad, reddish purple a
// measurement above the ceiling (no measurement), black failed, grey not
// measured. A cell is coloured by its state, never by its share alone, so
// colour and verdict cannot disagree; the number and share are printed in
// it. Unjudged numbers (p99.9) use a single-hue blue ramp, light to dark.
const (
	fillGood     = "#009E73"
	fillNoisy    = "#F0E442"
	fillDegraded = "#E69F00"
	fillBad      = "#D55E00"
	fillAbove    = "#CC79A7"
)

// stateFill is a judged cell's colour and ink.
func stateFill(b report.BenchView, c report.DirCell) (fill, ink string) {
	switch c.State {
	case report.CellGood:
		return fillGood, "#000"
	case report.CellNoisy:
		return fillNoisy, "#000"
	case report.CellAbove:
		return fillAbove, "#000"
	case report.CellBad:
		if b.RateDeclared && c.CeilingGbps > 0 && c.CeilingShare >= cluster.DefaultThresholds.Degraded {
			return fillDegraded, "#000"
		}
		return fillBad, "#000"
	}
	return "#e8e8e8", "#000"
}

// blues is the unjudged ramp (ColorBrewer Blues, light to dark).
var blues = []struct {
	at      float64
	r, g, b float64
}{{0, 239, 243, 255}, {0.5, 107, 174, 214}, {1, 8, 48, 107}}

// ramp returns the blue at x in [0,1] and the ink readable on it.
func ramp(x float64) (fill, ink string) {
	x = math.Max(0, math.Min(1, x))
	for i := 1; i < len(blues); i++ {
		a, b := blues[i-1], blues[i]
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
	return "#08306b", "#fff"
}

type heatmap struct {
	Title         string
	Aria          string
	Legend        []legendStop
	LegendNote    string
	Width, Height int
	RowLabels     []label
	ColLabels     []label
	Diagonal      []heatCell
	Cells         []heatCell
	CornerX       int
	CornerY       int
}

type label struct {
	X, Y int
	Text string
}

type heatCell struct {
	X, Y, Size int
	Fill, Ink  string
	Text       string // the number in the cell
	Sub        string // a second, smaller line: the share
	Title      string // on hover
	Class      string
	TX, TY     int
}

type legendStop struct {
	Fill, Ink, Text string
}

const (
	cellPx   = 64
	labelPx  = 120
	headerPx = 72
)

// stateClass and stateBadge: a cell state as a CSS class and an outcome badge.
var stateClass = map[string]string{report.CellGood: "good", report.CellBad: "bad", report.CellNoisy: "noisy", report.CellAbove: "above", report.CellFailed: "failed",
	report.CellTimedOut: "timedout", report.CellNotMeasured: "notmeasured", report.CellMissing: "missing"}
var stateBadge = map[string]string{report.CellGood: "pass", report.CellBad: "fail", report.CellNoisy: "warn", report.CellAbove: "unknown", report.CellFailed: "fail",
	report.CellTimedOut: "fail", report.CellNotMeasured: "unknown", report.CellMissing: "unknown"}

func newBenchPage(b report.BenchView) benchPage {
	p := benchPage{BenchView: b}
	p.Fabric = newFabricDrawing(b.Cover)
	p.PHY = newPHYEnds(b.Cover)
	if p.Fabric != nil && len(p.PHY) > 0 {
		for i := range p.Fabric.Cables {
			if p.Fabric.Cables[i].Class == "named" {
				p.Fabric.Cables[i].Title += "; PHY: " + phyTitle(p.PHY)
			}
		}
	}
	value := func(v float64) string {
		if b.Latency {
			return fmt.Sprintf("p50 %.2f µs", v)
		}
		return fmt.Sprintf("%.2f Gb/s", v)
	}
	for _, c := range b.Cells {
		r := dirRow{From: c.From, To: c.To, State: c.State, Badge: stateBadge[c.State], Why: c.Text, Samples: c.Samples, Value: "–", Share: "–", Ceiling: "–", P99: "–", P999: "–"}
		if !c.Failed() {
			r.Value = value(cellValue(b, c))
			if b.Latency {
				r.P99, r.P999 = fmt.Sprintf("%.2f µs", c.P99Us), fmt.Sprintf("%.2f µs", c.P999Us)
				if c.Share > 0 {
					r.Share = fmt.Sprintf("%.2f× %s", c.Share, c.ShareOf)
				}
			} else if c.Share > 0 {
				r.Share = fmt.Sprintf("%.0f%% of the %s", math.Floor(100*c.Share), c.ShareOf)
			}
			if c.CeilingGbps > 0 {
				r.Ceiling = fmt.Sprintf("%.2f Gb/s", c.CeilingGbps)
			}
		}
		p.Rows = append(p.Rows, r)
	}
	for _, n := range b.Summaries {
		side := func(v float64, total int) string {
			if total == 0 {
				return "–"
			}
			return value(v)
		}
		r := sideRow{Name: n.Name, Send: side(n.SendValue, n.SendTotal), Recv: side(n.RecvValue, n.RecvTotal),
			BadSend: fmt.Sprintf("%d/%d", n.SendBad, n.SendTotal), BadRecv: fmt.Sprintf("%d/%d", n.RecvBad, n.RecvTotal),
			SendBad: n.SendBad > 0, RecvBad: n.RecvBad > 0, Failed: n.Failed, Note: n.Out}
		for _, s := range b.Suspects {
			if s.Node == n.Name {
				r.Note = strings.TrimPrefix(r.Note+"; suspect: its "+s.Side+" side", "; ")
			}
		}
		p.Sides = append(p.Sides, r)
	}
	if len(b.Nodes) < 2 {
		return p
	}
	if !b.Latency {
		h := newHeatmap(b, "Bandwidth, sender → receiver: Gb/s, and % of what the link can carry", "bandwidth", func(c report.DirCell) (string, string, string, string, string) {
			fill, ink := stateFill(b, c)
			return fill, ink, fmt.Sprintf("%.2f", c.Gbps), fmt.Sprintf("%.0f%%", math.Floor(100*c.Share)),
				fmt.Sprintf("%s → %s: %.2f Gb/s, %.0f%% of the %s", c.From, c.To, c.Gbps, math.Floor(100*c.Share), c.ShareOf)
		})
		h.Legend = bandwidthLegend(b.RateDeclared)
		if !b.RateDeclared {
			h.Title = "Bandwidth, sender → receiver: Gb/s, and % of the peers' median (no link rate declared)"
		}
		p.Heats = append(p.Heats, h)
		return p
	}
	// p99.9 is not judged: its colour is its ratio to the median p99.9.
	var p999 []float64
	for _, c := range b.Cells {
		if !c.Failed() && c.P999Us > 0 {
			p999 = append(p999, c.P999Us)
		}
	}
	med999 := bench.Median(p999)
	t := cluster.DefaultThresholds
	for _, m := range []struct {
		name, aria string
		judged     bool
		of         func(report.DirCell) (float64, float64)
	}{
		{"Latency p50, sender → receiver: µs, and × the peers' median (lower is better)", "p50 latency", true,
			func(c report.DirCell) (float64, float64) { return c.P50Us, c.Share }},
		{"Latency p99.9, sender → receiver: µs, and × the median p99.9 (lower is better)", "p99.9 latency", false,
			func(c report.DirCell) (float64, float64) {
				if med999 <= 0 {
					return c.P999Us, 0
				}
				return c.P999Us, c.P999Us / med999
			}},
	} {
		h := newHeatmap(b, m.name, m.aria, func(c report.DirCell) (string, string, string, string, string) {
			us, ratio := m.of(c)
			sub := ""
			if ratio > 0 {
				sub = fmt.Sprintf("%.1f×", ratio)
			}
			fill, ink := stateFill(b, c)
			if !m.judged {
				fill, ink = ramp(latencyScale(ratio))
			}
			return fill, ink, fmt.Sprintf("%.2f", us), sub,
				fmt.Sprintf("%s → %s: p50 %.2f µs, p99 %.2f µs, p99.9 %.2f µs", c.From, c.To, c.P50Us, c.P99Us, c.P999Us)
		})
		if m.judged {
			h.Legend = []legendStop{
				{fillGood, "#000", fmt.Sprintf("good: p50 ≤ %.1f× the peers' median", t.Latency)},
				{fillNoisy, "#000", "noisy: above it inside the run's own noise, measure again"},
				{fillBad, "#000", fmt.Sprintf("bad: p50 > %.1f× the peers' median", t.Latency)},
			}
		} else {
			for _, x := range []float64{1, 1.5, 2, 3, 4} {
				f, ink := ramp(latencyScale(x))
				h.Legend = append(h.Legend, legendStop{f, ink, fmt.Sprintf("%.1f×", x)})
			}
			h.LegendNote = "p99.9 is shown, not judged: its shade is its ratio to the median p99.9, darker is slower"
		}
		p.Heats = append(p.Heats, h)
	}
	return p
}

// bandwidthLegend names each colour with the thresholds that give it,
// from the one threshold table (cluster.DefaultThresholds).
func bandwidthLegend(rateDeclared bool) []legendStop {
	t := cluster.DefaultThresholds
	if !rateDeclared {
		return []legendStop{
			{fillGood, "#000", fmt.Sprintf("good: ≥ %.0f%% of the peers' median", 100*t.Bandwidth)},
			{fillNoisy, "#000", "noisy: short inside the run's own noise, measure again"},
			{fillBad, "#000", fmt.Sprintf("bad: < %.0f%% of the peers' median", 100*t.Bandwidth)},
		}
	}
	return []legendStop{
		{fillGood, "#000", fmt.Sprintf("good: ≥ %.0f%% of the link", 100*t.Healthy)},
		{fillNoisy, "#000", "noisy: short inside the run's own noise, measure again"},
		{fillDegraded, "#000", fmt.Sprintf("degraded: %.0f–%.0f%%", 100*t.Degraded, 100*t.Healthy)},
		{fillBad, "#000", fmt.Sprintf("broken: < %.0f%% (or bad against the peers)", 100*t.Degraded)},
		{fillAbove, "#000", fmt.Sprintf("above %.0f%% of the link: a measurement error, never good", 100*t.AboveCeiling)},
	}
}

func cellValue(b report.BenchView, c report.DirCell) float64 {
	if b.Latency {
		return c.P50Us
	}
	return c.Gbps
}

// newHeatmap lays out the directed matrix: row i sends, column j
// receives, the diagonal empty. value gives a measured cell's position on
// the colour ramp, its number, its share and its hover text.
func newHeatmap(b report.BenchView, title, aria string, value func(report.DirCell) (fill, ink, text, sub, title string)) heatmap {
	n := len(b.Nodes)
	h := heatmap{Title: title, Aria: aria, Width: labelPx + n*cellPx + 4, Height: headerPx + n*cellPx + 4, CornerX: labelPx - 6, CornerY: headerPx - 8}
	for i := 0; i < n; i++ {
		h.RowLabels = append(h.RowLabels, label{X: labelPx - 6, Y: headerPx + i*cellPx + cellPx/2 + 4, Text: b.Nodes[i]})
		h.ColLabels = append(h.ColLabels, label{X: labelPx + i*cellPx + cellPx/2, Y: headerPx - 8, Text: b.Nodes[i]})
		h.Diagonal = append(h.Diagonal, heatCell{X: labelPx + i*cellPx, Y: headerPx + i*cellPx, Size: cellPx - 2})
	}
	for _, c := range b.Cells {
		x, y := labelPx+c.Col*cellPx, headerPx+c.Row*cellPx
		hc := heatCell{X: x, Y: y, Size: cellPx - 2, TX: x + (cellPx-2)/2, TY: y + (cellPx-2)/2 + 4, Class: "cell " + stateClass[c.State]}
		why := ""
		if c.Text != "" {
			why = ": " + c.Text
		}
		switch c.State {
		case report.CellMissing, report.CellNotMeasured:
			hc.Fill, hc.Ink, hc.Text = "#e8e8e8", "#000", "–"
			hc.Title = fmt.Sprintf("%s → %s: %s%s", c.From, c.To, c.State, why)
		case report.CellFailed, report.CellTimedOut:
			hc.Fill, hc.Ink, hc.Text, hc.Sub = "#000", "#fff", "✗", c.State
			hc.Title = fmt.Sprintf("%s → %s: %s%s", c.From, c.To, c.State, why)
		default:
			hc.Fill, hc.Ink, hc.Text, hc.Sub, hc.Title = value(c)
			hc.Title += " (" + c.State + why + ")"
		}
		if hc.Sub != "" {
			hc.TY -= 6
		}
		h.Cells = append(h.Cells, hc)
	}
	return h
}

// latencyScale: a ratio to the median on the blue ramp, at or below 1
// the lightest, 4× and more the darkest.
func latencyScale(ratio float64) float64 {
	return math.Max(0, math.Min(1, (ratio-1)/3))
}

// levelClass colours a GPU↔NIC path level from near (PIX) to far (SYS).
func levelClass(l string) string {
	switch l {
	case "PIX", "PXB", "PHB", "NODE", "SYS":
		return "lvl-" + strings.ToLower(l)
	}
	return "lvl-unknown"
}

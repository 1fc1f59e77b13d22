package htmlreport

import (
	"fmt"
	"math"

	"github.com/rdmalab/rdmalab/internal/report"
)

// sweepPlot is a message-size sweep laid out as an SVG line plot: size on
// a log2 axis, Gb/s on a linear one, the link's ceiling as a dashed line.
type sweepPlot struct {
	report.Sweep
	Width, Height int
	Path          string // polyline points
	Dots          []dot
	XTicks        []tick
	YTicks        []tick
	CeilingY      int
	HasCeiling    bool
	Left, Bottom  int
	Right, Top    int
}

type dot struct {
	X, Y  int
	Title string
}

type tick struct {
	At   int
	Text string
}

func newSweepPlot(s report.Sweep) sweepPlot {
	p := sweepPlot{Sweep: s, Width: 640, Height: 300, Left: 56, Right: 620, Top: 16, Bottom: 260}
	top := s.CeilingGbps
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range s.Points {
		top = math.Max(top, pt.Gbps)
		if pt.Bytes > 0 {
			lo, hi = math.Min(lo, math.Log2(float64(pt.Bytes))), math.Max(hi, math.Log2(float64(pt.Bytes)))
		}
	}
	top = niceCeil(top * 1.08)
	if hi <= lo {
		hi = lo + 1
	}
	x := func(b int64) int {
		return p.Left + int(math.Round((math.Log2(float64(b))-lo)/(hi-lo)*float64(p.Right-p.Left)))
	}
	y := func(g float64) int {
		return p.Bottom - int(math.Round(g/top*float64(p.Bottom-p.Top)))
	}
	for _, pt := range s.Points {
		if pt.Bytes <= 0 {
			continue
		}
		px, py := x(pt.Bytes), y(pt.Gbps)
		p.Path += fmt.Sprintf("%d,%d ", px, py)
		p.Dots = append(p.Dots, dot{px, py, fmt.Sprintf("%s: %.2f Gb/s", sizeText(pt.Bytes), pt.Gbps)})
	}
	for e := math.Ceil(lo); e <= hi; e += 2 {
		p.XTicks = append(p.XTicks, tick{x(int64(math.Exp2(e))), sizeText(int64(math.Exp2(e)))})
	}
	for i := 0; i <= 4; i++ {
		g := top * float64(i) / 4
		p.YTicks = append(p.YTicks, tick{y(g), fmt.Sprintf("%g", math.Round(g*10)/10)})
	}
	if s.CeilingGbps > 0 {
		p.HasCeiling, p.CeilingY = true, y(s.CeilingGbps)
	}
	return p
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// sizeText prints a message size the way perftest users say it: 64, 4K, 8M.
func sizeText(b int64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dM", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return fmt.Sprint(b)
}

package htmlreport

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// hostileHost is an example host renamed to markup: node names are user data.
const hostileName = `evil<script>alert("x")</script>&"node'`

func hostileHost(t *testing.T, dir string) string {
	t.Helper()
	in, err := judge.Load([]string{"example:r730-qdr"})
	if err != nil {
		t.Fatal(err)
	}
	s := in.Hosts[0]
	s.Hostname = hostileName
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "hostile.json")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func render(t *testing.T, inputs ...string) (string, *report.ClusterView) {
	t.Helper()
	in, err := judge.Load(inputs)
	if err != nil {
		t.Fatal(err)
	}
	v := report.NewClusterView(in)
	var buf bytes.Buffer
	if err := Write(&buf, v, Options{}); err != nil {
		t.Fatal(err)
	}
	return buf.String(), v
}

var external = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(https?:|//|file:|ftp:)`),
	regexp.MustCompile(`(?i)@import`),
	regexp.MustCompile(`(?i)url\(\s*["']?\s*[^#"'\s)]`), // url(#id) points inside the page
	regexp.MustCompile(`(?i)<script|<link|<iframe|<object|<embed|<img`),
}

func artefacts(t *testing.T) string {
	if d := os.Getenv("RDMALAB_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "htmlreport")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// The report from the seed examples, the recorded fabric and a recorded
// bench run (bandwidth and latency, documents and results logs):
// self-contained, one heatmap cell per direction, user data escaped, and
// it renders in a real browser at desktop and phone widths to a page that
// is not blank.
func TestReportFromExamplesAndRecordedBench(t *testing.T) {
	dir := t.TempDir()
	page, v := render(t, "example:seed000-epyc", "example:r730-qdr", "example:hgx-h200", "example:qdr-lab",
		"../testdata/bench-tcp-loopback", hostileHost(t, dir))

	for _, re := range external {
		if m := re.FindString(page); m != "" {
			t.Errorf("external reference or active content in the page: %q", m)
		}
	}
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "evil&lt;script&gt;") {
		t.Error("a host name with markup was not escaped")
	}
	if strings.Contains(page, "ZgotmplZ") {
		t.Error("html/template refused a value (ZgotmplZ): a colour or URL in the wrong context")
	}
	if v.Verdict.State != report.NotReady || !strings.Contains(page, "Not ready") {
		t.Errorf("verdict %q: the examples have failing checks", v.Verdict.State)
	}

	// A heatmap per bandwidth test, two per latency test (p50, p99.9);
	// each has one cell per direction between its nodes, none on the
	// diagonal.
	maps := strings.Split(page, `<svg class="heatmap"`)[1:]
	if len(maps) != 3 || len(v.Benches) != 2 {
		t.Fatalf("%d heatmaps for %d bench views, want 3 (tcp bw; tcp lat p50 and p99.9)", len(maps), len(v.Benches))
	}
	for i, b := range []report.BenchView{v.Benches[0], v.Benches[1], v.Benches[1]} {
		n := len(b.Nodes)
		svg := maps[i][:strings.Index(maps[i], "</svg>")]
		cells := strings.Count(svg, `<g class="cell `)
		if want := n * (n - 1); cells != want || len(b.Cells) != want {
			t.Errorf("%s %s: %d cells, %d directions for %d nodes, want %d", b.Engine, b.Test, cells, len(b.Cells), n, want)
		}
		if strings.Count(svg, "<title>") != cells {
			t.Errorf("%s %s: every cell needs its value on hover", b.Engine, b.Test)
		}
		for _, c := range b.Cells {
			if c.Row == c.Col {
				t.Errorf("%s %s: a cell on the diagonal: %+v", b.Engine, b.Test, c)
			}
		}
	}
	bw := v.Benches[0]
	if bw.Test != "bw" || len(bw.Nodes) != 6 || bw.Counts[report.CellMissing] != 0 || !bw.RateDeclared || len(bw.Suspects) == 0 || len(bw.Suspects[0].Retests) == 0 {
		t.Errorf("tcp bw view: test %q, %d nodes, %v, rate declared %v, suspects %+v", bw.Test, len(bw.Nodes), bw.Counts, bw.RateDeclared, bw.Suspects)
	}
	if !strings.Contains(page, "of what the link can carry") || !strings.Contains(page, "sender ↓ receiver →") {
		t.Error("the bandwidth heatmap does not say what its colour and axes are")
	}
	if !v.Benches[1].Latency || !strings.Contains(page, "Latency p50") || !strings.Contains(page, "Latency p99.9") {
		t.Error("the latency results give no latency heatmaps")
	}
	// The results logs beside their documents are the same runs: not
	// judged twice.
	if len(v.Skipped) != 2 || strings.Contains(strings.Join(v.Derived, " "), "bench") {
		t.Errorf("skipped %q, derived %q: want the two logs named as the documents' runs", v.Skipped, v.Derived)
	}
	// Every direction is also in a table (readable without colour or hover).
	for _, b := range v.Benches {
		for _, c := range b.Cells {
			if !strings.Contains(page, fmt.Sprintf("<tr><td>%s</td><td>%s</td>", c.From, c.To)) {
				t.Errorf("direction %s → %s is not in the accessible table", c.From, c.To)
			}
		}
	}

	out := artefacts(t)
	file := filepath.Join(out, "report.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	chromium := testhost.RequireTool(t, "chromium-headless-shell")
	for _, size := range []struct {
		name string
		w, h int
	}{{"desktop", 1280, 2000}, {"narrow", 390, 2000}} {
		t.Run(size.name, func(t *testing.T) {
			png := filepath.Join(out, "report-"+size.name+".png")
			Screenshot(t, chromium, file, png, size.w, size.h)
			img := decode(t, png)
			if b := img.Bounds(); b.Dx() != size.w || b.Dy() != size.h {
				t.Errorf("screenshot is %v, want %dx%d", b, size.w, size.h)
			}
			inked, colours := pixelStats(img)
			t.Logf("%s: %.1f%% of pixels not background, %d distinct colours (%s)", size.name, 100*inked, colours, png)
			if inked < 0.03 || colours < 50 {
				t.Errorf("the page looks blank: %.2f%% inked, %d colours", 100*inked, colours)
			}
		})
	}
}

// The heatmap itself in a browser: a page with only a results log (judged
// here against the peers) paints its good cells the verdict's bluish
// green and its bad ones vermillion (Okabe–Ito: bad reads as bad for every
// kind of colour vision), with the legend's own threshold.
func TestHeatmapRenders(t *testing.T) {
	chromium := testhost.RequireTool(t, "chromium-headless-shell")
	page, v := render(t, "../testdata/bench-tcp-loopback/bw.jsonl")
	out := artefacts(t)
	file := filepath.Join(out, "heatmap.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(out, "heatmap.png")
	Screenshot(t, chromium, file, png, 1000, 1400)
	img := decode(t, png)
	near := func(hex string) int {
		var want [3]uint32
		fmt.Sscanf(hex, "#%02x%02x%02x", &want[0], &want[1], &want[2])
		n := 0
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				d := 0
				for i, c := range []uint32{r >> 8, g >> 8, bl >> 8} {
					d += int(max(c, want[i]) - min(c, want[i]))
				}
				if d < 24 {
					n++
				}
			}
		}
		return n
	}
	if !strings.Contains(page, "(no link rate declared)") || !strings.Contains(page, "good: ≥ 90% of the peers&#39; median") {
		t.Error("a results log judged here does not say its colours are the verdict against the peers' median, with the threshold")
	}
	counts := v.Benches[0].Counts
	if g := near(fillGood); counts[report.CellGood] == 0 || g < counts[report.CellGood]*30*30 {
		t.Errorf("%d good-green pixels for %d good cells: the heatmap cells did not paint", g, counts[report.CellGood])
	}
	if r := near(fillBad); r < counts[report.CellBad]*30*30 {
		t.Errorf("%d vermillion pixels for %d bad cells", r, counts[report.CellBad])
	}
}

// Screenshot runs headless Chromium on a local file, with a fresh profile
// and no network features, bounded in time.
func Screenshot(t *testing.T, chromium, file, png string, w, h int) {
	t.Helper()
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+profile,
		fmt.Sprintf("--window-size=%d,%d", w, h), "--screenshot="+png, "file://"+file)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium (%v): %v\n%s", ctx.Err(), err, out)
	}
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// pixelStats returns the share of pixels that are not the page's white
// and the number of distinct colours.
func pixelStats(img image.Image) (inked float64, colours int) {
	seen := map[uint32]bool{}
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 245 || g < 245 || bl < 245 {
				n++
			}
			seen[r<<16|g<<8|bl] = true
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy()), len(seen)
}

var update = flag.Bool("update", false, "rewrite golden files")

// The page for the recorded fabric and bench run, byte for byte: any change
// to the page shows up in review.
func TestGolden(t *testing.T) {
	page, _ := render(t, "example:qdr-lab", "../testdata/bench-tcp-loopback")
	p := filepath.Join("testdata", "qdr-lab-bench.html")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report/htmlreport -update)", err)
	}
	if page != string(want) {
		t.Errorf("the page differs from %s; if intended, run go test ./internal/report/htmlreport -update", p)
	}
}

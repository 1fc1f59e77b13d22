package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/resultslog"
)

// A results log written as bench writes it comes back whole: no direction
// lost or invented, names intact whatever they hold; a last line cut short
// (an interrupted run) is the only thing dropped.
func FuzzBenchLog(f *testing.F) {
	f.Add("node01", "node02", uint8(3), 7.5, uint8(0))
	f.Add("a\nb", `"quoted"`, uint8(1), 0.0, uint8(5))
	f.Add("<x>", "ü", uint8(20), 1e9, uint8(200))
	f.Fuzz(func(t *testing.T, a, b string, n uint8, gbps float64, cut uint8) {
		if a == "" || b == "" || a == b || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // JSON itself replaces invalid UTF-8; bench never measures a node against itself
		}
		head, err := json.Marshal(resultslog.Header{Format: bench.Results.Format, Version: bench.Results.Version, Cluster: "f", Nodes: 2})
		if err != nil {
			t.Fatal(err)
		}
		lines := []string{string(head)}
		for i := 0; i < int(n%50)+1; i++ {
			from, to := a, b
			if i%2 == 1 {
				from, to = b, a
			}
			l, err := json.Marshal(bench.Record{Round: i + 1, From: from, To: to, Engine: "tcp", Test: "bw", Gbps: gbps, SamplesGbps: []float64{gbps}})
			if err != nil {
				return // NaN or Inf: bench cannot write it either
			}
			lines = append(lines, string(l))
		}
		whole := strings.Join(lines, "\n") + "\n"
		extra := lines[1][:int(cut)%len(lines[1])]
		in := &Inputs{Judged: map[envelope.Kind]bool{}}
		if err := in.parse("r.jsonl", []byte(whole+extra)); err != nil {
			t.Fatalf("%d records: %v", len(lines)-1, err)
		}
		in.judge()
		if len(in.Bench) != 1 {
			t.Fatalf("%d bench runs, want 1", len(in.Bench))
		}
		// Later records of a direction replace earlier ones: both
		// directions when more than one record was written.
		want := min(len(lines)-1, 2)
		ds := in.Bench[0].Directions
		if len(ds) != want {
			t.Fatalf("%d directions, want %d", len(ds), want)
		}
		for _, d := range ds {
			if (d.From != a || d.To != b) && (d.From != b || d.To != a) {
				t.Fatalf("direction came back as %q → %q", d.From, d.To)
			}
		}
	})
}

// A table rendered at any width wide enough for its kept columns' minimum
// never draws a line wider than that, and never loses a row.
func FuzzTableFits(f *testing.F) {
	f.Add("Non-Volatile memory controller", "ibp158s0 mlx5_4", "400 Gb/sec (4X NDR)", uint8(60), uint8(3))
	f.Add("x", "", "a-very-long-token-without-any-space-at-all-0123456789", uint8(30), uint8(1))
	f.Fuzz(func(t *testing.T, c1, c2, c3 string, width, rows uint8) {
		for _, s := range []string{c1, c2, c3} {
			if strings.ContainsAny(s, "\x1b\t\r") || !isPrint(s) {
				return // control characters are not what tables hold
			}
		}
		w := int(width)
		if w < 2*(minColWidth+3)+1 { // the two columns that are never dropped
			return
		}
		var buf bytes.Buffer
		p := NewPrinter(&Terminal{Writer: &buf, Style: Style{Width: w}})
		tb := p.Table("A title that is long enough to need wrapping between its words", Col{Name: "Name"}, Col{Name: "Where"}, Col{Name: "Detail", Drop: 1})
		n := int(rows%8) + 1
		for i := 0; i < n; i++ {
			tb.Row(c1, c2, c3)
		}
		tb.Render()
		for _, l := range strings.Split(buf.String(), "\n") {
			if text.StringWidthWithoutEscSequences(l) > w {
				t.Fatalf("line of %d columns at width %d:\n%s", text.StringWidthWithoutEscSequences(l), w, buf.String())
			}
		}
		if got := strings.Count(buf.String(), "\n│ ") + strings.Count(buf.String(), "\n├"); got < n {
			t.Fatalf("%d row lines for %d rows:\n%s", got, n, buf.String())
		}
	})
}

func isPrint(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd || text.RuneWidth(r) != 1 {
			return false
		}
	}
	return true
}

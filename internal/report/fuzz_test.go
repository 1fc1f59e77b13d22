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
)

// Bench results written as bench writes them come back whole: no record
// lost or invented, names intact, whatever the names hold; a last line cut
// short is the only thing dropped.
func FuzzBenchLines(f *testing.F) {
	f.Add("node01", "node02", uint8(3), 7.5, uint8(0))
	f.Add("a\nb", `"quoted"`, uint8(1), 0.0, uint8(5))
	f.Add("<x>", "ü", uint8(20), 1e9, uint8(200))
	f.Fuzz(func(t *testing.T, a, b string, n uint8, gbps float64, cut uint8) {
		if a == "" || b == "" || n == 0 || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // JSON itself replaces invalid UTF-8
		}
		var lines []string
		for i := 0; i < int(n%50)+1; i++ {
			l, err := json.Marshal(bench.Result{Round: i, A: a, B: b, Engine: "tcp", Test: "bw", Gbps: gbps})
			if err != nil {
				return // NaN or Inf: bench cannot write it either
			}
			lines = append(lines, string(l))
		}
		whole := strings.Join(lines, "\n") + "\n"
		// An interrupted run leaves part of one more line.
		extra := lines[0][:int(cut)%len(lines[0])]
		in := &Inputs{Judged: map[envelope.Kind]bool{}}
		if err := in.parse("r.jsonl", []byte(whole+extra)); err != nil {
			t.Fatalf("%d records: %v", len(lines), err)
		}
		if len(in.Bench) != len(lines) {
			t.Fatalf("%d records read, %d written", len(in.Bench), len(lines))
		}
		for i, r := range in.Bench {
			if r.A != a || r.B != b || r.Round != i {
				t.Fatalf("record %d came back as %q %q round %d", i, r.A, r.B, r.Round)
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

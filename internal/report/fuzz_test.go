package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jedib0t/go-pretty/v6/text"
)

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

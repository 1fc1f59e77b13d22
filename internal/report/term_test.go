package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/plan"
)

// renders are the terminal renderers this package owns, on example hosts.
func renders(t *testing.T) map[string]func(io.Writer) {
	load := func(name string) *host.Snapshot {
		s, err := examples.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hgx, seed := load("hgx-h200"), load("seed000-epyc")
	p, err := plan.Make(hgx, plan.Request{VMs: 8, MemoryBytes: 64 << 30})
	if err != nil {
		t.Fatal(err)
	}
	doctor := hostcheck.Run(seed, hostcheck.Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 100}, Source: "--expect-rate"}})
	return map[string]func(io.Writer){
		"inventory-hgx-h200":  func(w io.Writer) { Inventory(w, hgx) },
		"doctor-seed000-epyc": func(w io.Writer) { Findings(w, doctor, false) },
		"plan-hgx-h200-8":     func(w io.Writer) { Plan(w, p) },
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Golden files at 60, 100 and 200 columns, plain and coloured; every line
// fits the width (escape sequences do not count).
func TestTerminalWidthsGolden(t *testing.T) {
	for name, render := range renders(t) {
		for _, width := range []int{60, 100, 200} {
			for _, color := range []bool{false, true} {
				suffix := "plain"
				if color {
					suffix = "color"
				}
				t.Run(fmt.Sprintf("%s/%d/%s", name, width, suffix), func(t *testing.T) {
					var buf bytes.Buffer
					render(&Terminal{Writer: &buf, Style: Style{Width: width, Color: color}})
					golden(t, fmt.Sprintf("term/%s-%d-%s.txt", name, width, suffix), buf.Bytes())
					for i, l := range strings.Split(buf.String(), "\n") {
						if w := text.StringWidthWithoutEscSequences(l); w > width {
							t.Errorf("line %d is %d columns wide, more than %d:\n%s", i+1, w, width, l)
						}
					}
					if has := ansi.MatchString(buf.String()); has != color {
						t.Errorf("colour escapes present = %v, want %v", has, color)
					}
				})
			}
		}
	}
}

// TERM=dumb: nothing outside ASCII that rdmalab itself draws.
func TestASCII(t *testing.T) {
	for name, render := range renders(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			render(&Terminal{Writer: &buf, Style: Style{Width: 100, ASCII: true}})
			for i, l := range strings.Split(buf.String(), "\n") {
				for _, r := range l {
					if r >= utf8.RuneSelf {
						t.Fatalf("line %d has %q:\n%s", i+1, r, l)
					}
				}
			}
			golden(t, "term/"+name+"-100-ascii.txt", buf.Bytes())
		})
	}
}

// Quiet keeps the summary and the failures.
func TestQuiet(t *testing.T) {
	for name, render := range renders(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			render(&Terminal{Writer: &buf, Style: Style{Width: 100, Quiet: true}})
			golden(t, "term/"+name+"-quiet.txt", buf.Bytes())
		})
	}
}

func TestDetectStyle(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name string
		req  StyleRequest
		env  func(string) string
		want Style
	}{
		{"pipe: no colour, no width", StyleRequest{}, env(), Style{}},
		{"pipe with COLUMNS", StyleRequest{}, env("COLUMNS", "80"), Style{Width: 80}},
		{"always even with NO_COLOR", StyleRequest{Color: ColorAlways}, env("NO_COLOR", "1"), Style{Color: true}},
		{"dumb terminal", StyleRequest{Color: ColorAuto}, env("TERM", "dumb"), Style{ASCII: true}},
		{"asked", StyleRequest{ASCII: true, Width: 60, Quiet: true}, env(), Style{ASCII: true, Width: 60, Quiet: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DetectStyle(&bytes.Buffer{}, c.req, c.env)
			if err != nil || got != c.want {
				t.Errorf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	if _, err := DetectStyle(&bytes.Buffer{}, StyleRequest{Color: "sometimes"}, env()); err == nil || !strings.Contains(err.Error(), "--color") {
		t.Errorf("bad --color: %v", err)
	}
}

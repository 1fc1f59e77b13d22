package report

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"golang.org/x/sys/unix"
)

// Style is how terminal output looks. The CLI fills it once from --color,
// --ascii, --width, --quiet and the environment (DetectStyle); renderers read
// it from the writer they are given (StyleOf), so JSON output, which never
// looks at it, is untouched.
type Style struct {
	Color bool // ANSI colour for outcomes and titles
	ASCII bool // no box drawing or symbols outside ASCII
	Width int  // columns to fit; 0 means no limit (a pipe or a file)
	Quiet bool // summary and failures only
}

// Terminal is a writer that carries the Style its renderers use.
type Terminal struct {
	io.Writer
	Style Style
}

// StyleOf returns the Style a writer carries; a plain writer gets the
// default: no colour, Unicode, no width limit, everything.
func StyleOf(w io.Writer) Style {
	if t, ok := w.(*Terminal); ok {
		return t.Style
	}
	return Style{}
}

// ColorMode is --color: never, auto or always.
type ColorMode string

// Colour modes.
const (
	ColorNever  ColorMode = "never"
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
)

// StyleRequest is what the user asked for; zero values mean "decide from
// the environment".
type StyleRequest struct {
	Color ColorMode
	ASCII bool
	Width int
	Quiet bool
}

// DetectStyle decides the Style for output going to w: colour only on a
// terminal unless asked (NO_COLOR, any value, turns auto off), ASCII when
// TERM=dumb or asked, the terminal's width (or $COLUMNS) unless --width.
func DetectStyle(w io.Writer, r StyleRequest, getenv func(string) string) (Style, error) {
	cols, tty := terminalWidth(w)
	st := Style{ASCII: r.ASCII || getenv("TERM") == "dumb", Quiet: r.Quiet}
	switch r.Color {
	case ColorAlways:
		st.Color = true
	case ColorNever:
	case ColorAuto, "":
		st.Color = tty && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	default:
		return Style{}, fmt.Errorf("--color %q: want never, auto or always", r.Color)
	}
	switch {
	case r.Width < 0:
		return Style{}, fmt.Errorf("--width %d: want a number of columns (0 means no limit)", r.Width)
	case r.Width > 0:
		st.Width = r.Width
	case tty:
		st.Width = cols
	default:
		if c, err := strconv.Atoi(getenv("COLUMNS")); err == nil && c > 0 {
			st.Width = c
		}
	}
	return st, nil
}

// terminalWidth reports whether w is a terminal and how wide it is.
func terminalWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	return int(ws.Col), true
}

// asciiFor replaces the symbols rdmalab prints with ASCII for TERM=dumb.
var asciiFor = strings.NewReplacer(
	"·", "-", "↔", "<->", "→", "->", "⚠", "!", "✗", "x", "✓", "ok", "×", "x",
	"—", "-", "–", "-", "≥", ">=", "≤", "<=", "µ", "u", "…", "...", "≈", "~",
)

// ANSI SGR codes; written by hand so no library's global switch decides.
const (
	sgrBold    = "1"
	sgrRed     = "1;31"
	sgrYellow  = "33"
	sgrMagenta = "35"
	sgrGreen   = "32"
	sgrDim     = "2"
)

// Printer writes text in a Style. fabric.go and bench.go can adopt it
// (p := NewPrinter(w); p.Table(...)) without changing their signatures.
type Printer struct {
	w  io.Writer
	St Style
}

// NewPrinter prints to w in the Style w carries.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w, St: StyleOf(w)} }

// Text applies the ASCII rule to s.
func (p *Printer) Text(s string) string {
	if p.St.ASCII {
		return asciiFor.Replace(s)
	}
	return s
}

// Printf formats, applies the ASCII rule and writes.
func (p *Printer) Printf(format string, a ...any) {
	io.WriteString(p.w, p.Text(fmt.Sprintf(format, a...)))
}

// Wrapped writes s soft-wrapped to the width: the first line after first,
// the following ones after an indent as wide as rest.
func (p *Printer) Wrapped(first, rest, s string) {
	s = p.Text(s)
	avail := p.St.Width - max(text.StringWidthWithoutEscSequences(first), text.StringWidthWithoutEscSequences(rest))
	if p.St.Width == 0 || text.StringWidthWithoutEscSequences(s) <= avail {
		io.WriteString(p.w, first+s+"\n")
		return
	}
	lines := strings.Split(text.WrapSoft(s, max(avail, minColWidth)), "\n")
	for i, l := range lines {
		lead := first
		if i > 0 {
			lead = rest
		}
		io.WriteString(p.w, lead+strings.TrimRight(l, " ")+"\n")
	}
}

func (p *Printer) sgr(code, s string) string {
	if !p.St.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Bold is for titles.
func (p *Printer) Bold(s string) string { return p.sgr(sgrBold, s) }

// Dim is for notes.
func (p *Printer) Dim(s string) string { return p.sgr(sgrDim, s) }

// Outcome colours s as outcome o: fail red, warn yellow, unknown magenta,
// pass green. The words themselves always say the outcome too.
func (p *Printer) Outcome(o check.Outcome, s string) string {
	switch o {
	case check.Fail:
		return p.sgr(sgrRed, s)
	case check.Warn:
		return p.sgr(sgrYellow, s)
	case check.Unknown:
		return p.sgr(sgrMagenta, s)
	case check.Pass:
		return p.sgr(sgrGreen, s)
	}
	return s
}

// Title prints a table title on its own line, wrapped between words.
func (p *Printer) Title(s string) {
	p.Wrapped("", "", p.Bold(s))
}

// Col is a table column. Drop orders which columns go when the table is
// wider than the terminal: the highest Drop first; 0 never goes.
type Col struct {
	Name       string
	Drop       int
	AlignRight bool
}

// Table collects rows and renders them to fit the Style's width: it drops
// the least useful columns first, then wraps the widest ones between words,
// and says which columns it hid.
type Table struct {
	p     *Printer
	title string
	cols  []Col
	rows  [][]string
}

// Table starts a table with a title printed above it (never wrapped
// mid-word, unlike a title drawn inside the box). The title and the
// column names may carry names from data (a matrix's columns are devices):
// they are escaped as cells are.
func (p *Printer) Table(title string, cols ...Col) *Table {
	cols = slices.Clone(cols)
	for i := range cols {
		cols[i].Name = userfile.TermLine(cols[i].Name)
	}
	return &Table{p: p, title: userfile.TermLine(title), cols: cols}
}

// Row adds a row; cells are printed with %v, each escaped with
// userfile.TermLine, the one escaping of terminal text: a name holding a
// newline or an escape sequence stays one cell on one line, and the
// renderer's colours pass.
func (t *Table) Row(cells ...any) {
	row := make([]string, len(t.cols))
	for i := range row {
		if i >= len(cells) {
			continue
		}
		// A cell is one line whatever its data holds; Lines is a cell of
		// several lines the renderer meant, each escaped on its own.
		if ls, ok := cells[i].(Lines); ok {
			esc := make([]string, len(ls))
			for j, l := range ls {
				esc[j] = userfile.TermLine(l)
			}
			row[i] = t.p.Text(strings.Join(esc, "\n"))
			continue
		}
		row[i] = t.p.Text(userfile.TermLine(fmt.Sprint(cells[i])))
	}
	t.rows = append(t.rows, row)
}

// Lines is a table cell of several lines.
type Lines []string

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

func cellWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, text.StringWidthWithoutEscSequences(l))
	}
	return w
}

// wordWidth is the longest word of s: as narrow as s wraps without
// breaking a word.
func wordWidth(s string) int {
	w := 0
	for _, f := range strings.Fields(s) {
		w = max(w, text.StringWidthWithoutEscSequences(f))
	}
	return w
}

// minColWidth is as narrow as a column gets when even whole words do not fit.
const minColWidth = 4

// fit returns the visible columns and their widths: natural widths if the
// table fits; else the least useful columns dropped until the rest fit
// wrapped between words, then the widest narrowed (words broken only if
// nothing else helps).
func (t *Table) fit() (visible []int, widths []int) {
	natural := make([]int, len(t.cols))
	words := make([]int, len(t.cols))
	for i, c := range t.cols {
		name := t.p.Text(c.Name)
		natural[i], words[i] = text.StringWidthWithoutEscSequences(name), wordWidth(name)
		for _, r := range t.rows {
			natural[i] = max(natural[i], cellWidth(r[i]))
			words[i] = max(words[i], wordWidth(r[i]))
		}
	}
	for i := range t.cols {
		visible = append(visible, i)
	}
	total := func(w []int) int {
		n := 1
		for _, i := range visible {
			n += w[i] + 3
		}
		return n
	}
	limit := t.p.St.Width
	for limit > 0 && total(words) > limit {
		drop := -1
		for k, i := range visible {
			if t.cols[i].Drop > 0 && (drop < 0 || t.cols[i].Drop >= t.cols[visible[drop]].Drop) {
				drop = k
			}
		}
		if drop < 0 {
			break
		}
		visible = append(visible[:drop], visible[drop+1:]...)
	}
	for limit > 0 && total(natural) > limit {
		widest, floor := -1, 0
		for _, f := range []func(int) int{func(i int) int { return words[i] }, func(int) int { return minColWidth }} {
			for _, i := range visible {
				if natural[i] > f(i) && (widest < 0 || natural[i] > natural[widest]) {
					widest, floor = i, f(i)
				}
			}
			if widest >= 0 {
				break
			}
		}
		if widest < 0 || natural[widest] <= floor {
			break
		}
		natural[widest]--
	}
	for _, i := range visible {
		widths = append(widths, natural[i])
	}
	return visible, widths
}

// Render prints the title, the table and, if columns were hidden, a line
// naming them.
func (t *Table) Render() {
	p := t.p
	if t.title != "" {
		p.Title(t.title)
	}
	visible, widths := t.fit()
	tw := table.NewWriter()
	tw.SetOutputMirror(p.w)
	if p.St.ASCII {
		tw.SetStyle(table.StyleDefault)
	} else {
		tw.SetStyle(table.StyleLight)
	}
	tw.Style().Format.Header = text.FormatDefault
	hdr := table.Row{}
	var cfg []table.ColumnConfig
	for k, i := range visible {
		hdr = append(hdr, p.Text(t.cols[i].Name))
		c := table.ColumnConfig{Number: k + 1, WidthMax: widths[k], WidthMaxEnforcer: text.WrapSoft}
		if t.cols[i].AlignRight {
			c.Align = text.AlignRight
		}
		cfg = append(cfg, c)
	}
	tw.AppendHeader(hdr)
	tw.SetColumnConfigs(cfg)
	for _, r := range t.rows {
		row := table.Row{}
		for _, i := range visible {
			row = append(row, r[i])
		}
		tw.AppendRow(row)
	}
	tw.Render()
	if len(visible) < len(t.cols) {
		var hidden []string
		for i, c := range t.cols {
			if !slices.Contains(visible, i) {
				hidden = append(hidden, c.Name)
			}
		}
		p.Wrapped("  ", "  ", p.Dim(fmt.Sprintf("not shown at %d columns: %s (--width to widen)", p.St.Width, strings.Join(hidden, ", "))))
	}
	io.WriteString(p.w, "\n")
}

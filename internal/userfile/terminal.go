package userfile

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalWriter passes output to w with the control characters of user
// data escaped (a hostname or a device name from a snapshot holding ESC
// sequences that set the window title, move the cursor, hide text or clear
// the screen). Newline, tab and the SGR colour sequences rdmalab's own
// renderers write (bold, dim, red, green, yellow, magenta, reset) pass as
// they are; a carriage return, which no renderer writes, is escaped. It is
// the net under the renderers: a newline inside a name can only be told
// from a renderer's own by the renderer, which escapes names with Line.
func TerminalWriter(w io.Writer) io.Writer { return termWriter{w, true} }

// ControlWriter is TerminalWriter for a document (an HTML page), where no
// escape sequence is rdmalab's own: every control character but newline
// and tab is shown escaped (\x1b, \r, \u0085).
func ControlWriter(w io.Writer) io.Writer { return termWriter{w, false} }

type termWriter struct {
	w   io.Writer
	sgr bool // rdmalab's own colours pass
}

func (t termWriter) Write(p []byte) (int, error) {
	if clean(p) {
		return t.w.Write(p)
	}
	var b bytes.Buffer
	for i := 0; i < len(p); {
		if n := sgrLen(p[i:]); t.sgr && n > 0 {
			b.Write(p[i : i+n])
			i += n
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, p[i])
		case r != '\n' && r != '\t' && unicode.IsControl(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.Write(p[i : i+size])
		}
		i += size
	}
	if _, err := t.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clean reports output with no control character but newline and tab:
// the common case, written as it is.
func clean(p []byte) bool {
	for i, c := range p {
		switch {
		case c == '\n' || c == '\t':
		case c < 0x20 || c == 0x7f:
			return false
		case c == 0xc2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9f:
			return false // a C1 control (0x80–0x9f) in UTF-8
		}
	}
	return true
}

// ownSGR are the SGR parameter strings rdmalab's renderers write
// (internal/report's colours and the reset); any other (8, hidden text; 5,
// blink) comes from data and is escaped.
var ownSGR = map[string]bool{"0": true, "1": true, "2": true, "1;31": true, "31": true, "32": true, "33": true, "35": true}

// sgrLen is the length of one of rdmalab's own SGR sequences (ESC [ codes
// m) at the start of p, or 0.
func sgrLen(p []byte) int {
	if len(p) < 3 || p[0] != 0x1b || p[1] != '[' {
		return 0
	}
	for i := 2; i < len(p) && i < 32; i++ {
		switch c := p[i]; {
		case c == 'm':
			if !ownSGR[string(p[2:i])] {
				return 0
			}
			return i + 1
		case c == ';' || (c >= '0' && c <= '9'):
		default:
			return 0
		}
	}
	return 0
}

// Line is a name or a message from data (a hostname, a device or netdev
// name, a node description, a finding's text) fit for one line of an NHC
// line, a Slurm reason or a terminal: every control character, newline and
// carriage return included, shown escaped (\n, \r, \x1b, \u0085), invalid
// UTF-8 as \xNN; the rest as it is.
func Line(s string) string { return escapeLine(s, false) }

// TermLine is Line for a terminal renderer's own lines and cells, which
// may hold its colours: rdmalab's SGR sequences pass (one in data can only
// colour text, never hide it, move the cursor or start a line).
func TermLine(s string) string { return escapeLine(s, true) }

func escapeLine(s string, keepSGR bool) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && !(keepSGR && r == 0x1b)) {
			ok = false
			break
		}
	}
	if ok && (!keepSGR || !strings.Contains(s, "\x1b")) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if keepSGR {
			if n := sgrLen([]byte(s[i:min(len(s), i+32)])); n > 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

package userfile

import (
	"bytes"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// TerminalWriter passes output to w with the control characters of user
// data escaped (a hostname or a device name from a snapshot holding ESC
// sequences that set the window title, move the cursor or clear the
// screen). Newline, tab, carriage return and SGR colour sequences
// (ESC [ digits ; m), which rdmalab's own renderers write, pass as they are.
func TerminalWriter(w io.Writer) io.Writer { return termWriter{w} }

type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	if clean(p) {
		return t.w.Write(p)
	}
	var b bytes.Buffer
	for i := 0; i < len(p); {
		if n := sgrLen(p[i:]); n > 0 {
			b.Write(p[i : i+n])
			i += n
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, p[i])
		case r != '\n' && r != '\t' && r != '\r' && unicode.IsControl(r):
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

// clean reports output with no control character but newline, tab and
// carriage return: the common case, written as it is.
func clean(p []byte) bool {
	for i, c := range p {
		switch {
		case c == '\n' || c == '\t' || c == '\r':
		case c < 0x20 || c == 0x7f:
			return false
		case c == 0xc2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9f:
			return false // a C1 control (0x80–0x9f) in UTF-8
		}
	}
	return true
}

// sgrLen is the length of an SGR sequence (ESC [ 0-9; m) at the start of
// p, or 0.
func sgrLen(p []byte) int {
	if len(p) < 3 || p[0] != 0x1b || p[1] != '[' {
		return 0
	}
	for i := 2; i < len(p) && i < 32; i++ {
		switch c := p[i]; {
		case c == 'm':
			return i + 1
		case c == ';' || (c >= '0' && c <= '9'):
		default:
			return 0
		}
	}
	return 0
}

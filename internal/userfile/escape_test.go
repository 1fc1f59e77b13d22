package userfile

import (
	"bytes"
	"testing"
)

// Line leaves nothing that starts a line or drives a terminal; TermLine
// lets rdmalab's own colours through and nothing else; TerminalWriter, the
// net under the renderers, escapes CR and foreign SGR (hidden text) but
// keeps newlines, tabs and rdmalab's colours; ControlWriter keeps no SGR.
func TestEscapes(t *testing.T) {
	in := "a\x1b[8mb\r\nc\td\u0085e\xffé\x1b[1;31mred\x1b[0m"
	for _, c := range []struct{ name, got, want string }{
		{"Line", Line(in), `a\x1b[8mb\r\nc\td\u0085e\xffé\x1b[1;31mred\x1b[0m`},
		{"TermLine", TermLine(in), "a\\x1b[8mb\\r\\nc\\td\\u0085e\\xffé\x1b[1;31mred\x1b[0m"},
		{"plain", Line("mlx5_0 port 1"), "mlx5_0 port 1"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	var b bytes.Buffer
	TerminalWriter(&b).Write([]byte(in))
	if want := "a\\x1b[8mb\\x0d\nc\td\\u0085e\\xffé\x1b[1;31mred\x1b[0m"; b.String() != want {
		t.Errorf("TerminalWriter: %q, want %q", b.String(), want)
	}
	b.Reset()
	ControlWriter(&b).Write([]byte(in))
	if want := "a\\x1b[8mb\\x0d\nc\td\\u0085e\\xffé\\x1b[1;31mred\\x1b[0m"; b.String() != want {
		t.Errorf("ControlWriter: %q, want %q", b.String(), want)
	}
}

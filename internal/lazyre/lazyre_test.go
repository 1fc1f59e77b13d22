package lazyre

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestNewCompilesOnce(t *testing.T) {
	re := New(`^mlx5_(\d+)$`)
	if re() != re() {
		t.Error("compiled twice")
	}
	if m := re().FindStringSubmatch("mlx5_7"); len(m) != 2 || m[1] != "7" {
		t.Errorf("match = %q", m)
	}
}

// Every lazy pattern in the module compiles: a typo would otherwise only
// panic when its parser first runs.
func TestEveryPatternCompiles(t *testing.T) {
	call := regexp.MustCompile("lazyre\\.New\\((`[^`]*`|\"(?:[^\"\\\\]|\\\\.)*\")\\)")
	n := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			lit := m[1]
			var pat string
			if lit[0] == '`' {
				pat = lit[1 : len(lit)-1]
			} else {
				pat = unquote(t, lit)
			}
			if _, err := regexp.Compile(pat); err != nil {
				t.Errorf("%s: %s: %v", path, lit, err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Errorf("found only %d lazy patterns: the scan is broken", n)
	}
}

func unquote(t *testing.T, s string) string {
	t.Helper()
	u, err := strconv.Unquote(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return u
}

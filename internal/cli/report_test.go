package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cluster.html")
	stdout, stderr, code := run(t, "report", "--html", out, "--width", "100", "example:hgx-h200", "example:qdr-lab", "../report/testdata/bench-tcp-loopback")
	if code != ExitFindings || !strings.Contains(stdout, "NOT READY") || !strings.Contains(stderr, "wrote "+out) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(page), `<svg class="heatmap"`) || !strings.Contains(string(page), "hgx-h200-01") {
		t.Fatalf("page: %v (%d bytes)", err, len(page))
	}
	if _, err := os.Stat(out + ".partial"); err == nil {
		t.Error("the temporary file was left behind")
	}
	for _, line := range strings.Split(stdout, "\n") {
		if len([]rune(line)) > 100 {
			t.Errorf("line wider than --width 100: %q", line)
		}
	}
	// A missing input is exit 2 naming it.
	if _, stderr, code := run(t, "report", "nope.json"); code != ExitUsage || !strings.Contains(stderr, "nope.json") {
		t.Errorf("missing input: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, "report", "--color", "sometimes", "example:hgx-h200"); code != ExitUsage || !strings.Contains(stderr, "--color") {
		t.Errorf("bad --color: exit %d, %q", code, stderr)
	}
}

// The global output flags reach every renderer: --ascii has no box drawing,
// --color=always colours, --quiet keeps the summary.
func TestOutputFlags(t *testing.T) {
	plain, _, _ := run(t, "inventory", "--snapshot", "../../examples/hgx-h200.json", "--width", "60", "--ascii")
	if strings.ContainsAny(plain, "┌│·↔") || !strings.Contains(plain, "+--") {
		t.Errorf("--ascii output has box drawing or symbols:\n%s", plain)
	}
	for _, l := range strings.Split(plain, "\n") {
		if len(l) > 60 {
			t.Errorf("wider than 60: %q", l)
		}
	}
	colour, _, _ := run(t, "doctor", "--snapshot", "../../examples/seed000-epyc.json", "--color", "always")
	if !strings.Contains(colour, "\x1b[") {
		t.Error("--color always printed no colour")
	}
	never, _, _ := run(t, "doctor", "--snapshot", "../../examples/seed000-epyc.json")
	if strings.Contains(never, "\x1b[") {
		t.Error("colour on a pipe without --color always")
	}
	quiet, _, _ := run(t, "inventory", "--snapshot", "../../examples/hgx-h200.json", "--quiet")
	if strings.Contains(quiet, "GPU ↔ NIC") || !strings.Contains(quiet, "hgx-h200-01") {
		t.Errorf("--quiet:\n%s", quiet)
	}
	js, _, _ := run(t, "inventory", "--snapshot", "../../examples/hgx-h200.json", "--output", "json", "--ascii", "--color", "always")
	if strings.Contains(js, "\x1b[") || !strings.HasPrefix(js, "{") {
		t.Error("the output flags changed JSON output")
	}
}

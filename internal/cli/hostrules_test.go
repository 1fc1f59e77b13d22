package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// hrShared reads a real capture from ../shared/testdata.
func hrShared(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hrTemp writes text to a file named name in a test directory.
func hrTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// allMainDown is a real 8×CX-7 + 4×CX-6 Dx H100 host's ibstat with every
// MT4129 port set Down/Disabled: the host's main NICs are all down while
// its four other ports run (issue 34, item 11).
func allMainDown(t *testing.T) string {
	t.Helper()
	text := hrShared(t, "ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt")
	var out []string
	cx7 := false
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "CA type:") {
			cx7 = strings.Contains(l, "MT4129")
		}
		if cx7 {
			l = strings.Replace(l, "State: Active", "State: Down", 1)
			l = strings.Replace(l, "Physical state: LinkUp", "Physical state: Disabled", 1)
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func TestJudgeAllPortsOfMainModelDownFails(t *testing.T) {
	out, errOut, code := run(t, "judge", hrTemp(t, "ibstat.txt", allMainDown(t)))
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errOut)
	}
	for _, want := range []string{"mlx5_0 port 1", "all 8 ports of this host's MT4129 NICs are down"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The healthy twin: the same host as captured, every port up.
	out, errOut, code = run(t, "judge", filepath.Join(testhost.SharedTestdata(t), "ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt"))
	if code != ExitOK {
		t.Fatalf("healthy twin: exit %d\n%s%s", code, out, errOut)
	}
	// Spare storage ports down beside the running main NICs: unused, exit 0.
	out, errOut, code = run(t, "judge", filepath.Join(testhost.SharedTestdata(t), "ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.0.txt"))
	if code != ExitOK {
		t.Fatalf("spare ports: exit %d\n%s%s", code, out, errOut)
	}
}

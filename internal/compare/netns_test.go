package compare

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Seed 000's two-run experiment on four hosts with real sshd in network
// namespaces, every link shaped to 200 Mbit/s: one bench run, the same
// healthy cluster again (compares as no change), then a run with n2's
// sending shaped to 50 Mbit/s: compare names n2's send side and its three
// directions, and says no change for the other nine.
func TestCompareInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary over ssh (not under the race detector); scripts/test runs it without -short")
	}
	const n = 4
	c := testhost.StartNetCluster(t, "compare", n)
	for i := range n {
		c.Shape(i, "200mbit")
	}
	bin := testhost.Rdmalab(t)
	cluster := c.ClusterFile(bin, 24800, nil, "")
	bench := func(name string) string {
		t.Helper()
		results := filepath.Join(c.Dir, name+".jsonl")
		out, err := exec.Command(bin, "bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "1", "--samples", "3",
			"--timeout", "10s", "--results", results).CombinedOutput()
		if code := exitCode(err); code != 0 && code != 1 && code != 3 { // a verdict on noise
			t.Fatalf("bench %s: exit %d\n%s", name, code, out)
		}
		return results
	}
	compare := func(a, b string) (string, int, *Result) {
		out, err := exec.Command(bin, "compare", a, b).CombinedOutput()
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		r, rerr := Run(a, ab, b, bb)
		if rerr != nil {
			t.Fatal(rerr)
		}
		return string(out), exitCode(err), r
	}
	same := func(r *Result) int {
		n := 0
		for _, d := range r.Directions {
			if d.Verdict == NoChange {
				n++
			}
		}
		return n
	}
	first := bench("first")
	again := bench("again")
	if out, code, r := compare(first, again); code != 0 || same(r) != 12 || len(r.Directions) != 12 {
		t.Errorf("the same healthy cluster twice: exit %d, %d of %d no change\n%s", code, same(r), len(r.Directions), out)
	}
	c.ShapeDir(1, "50mbit", true, false)
	shaped := bench("shaped")
	out, code, r := compare(first, shaped)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	var fails []string
	for _, f := range r.Findings {
		if f.Outcome == check.Fail {
			fails = append(fails, strings.Join(strings.Fields(f.Check+" "+f.Host+" "+f.Subject), " "))
		}
	}
	want := []string{"compare.node n2 send side", "compare.direction n2 → n1", "compare.direction n2 → n3", "compare.direction n2 → n4"}
	if !slices.Equal(fails, want) || same(r) != 9 {
		t.Errorf("named %q, want %q\n%s", fails, want, out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

package nccl

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The follow-up the RAS finding offers, run as written: hosts n1…n6 with
// real sshd in network namespaces, every link shaped to 200 Mbit/s and
// n1's (the lagging rank's host, its cable the finding names) to 20
// Mbit/s both ways. The command pairs n1 with its four partners and them
// with each other (bench's tcp engine, 1 s samples: the only flags added);
// bench names n1 on both sides and no other node, so the cable the RAS
// path named is named by traffic.
func TestRASFollowUpNamesShapedCableInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary over ssh (not under the race detector); scripts/test runs it without -short")
	}
	c := testhost.StartNetCluster(t, "raspath", 6)
	for i := range c.NS {
		c.Shape(i, "200mbit")
	}
	c.Shape(0, "20mbit")
	bin := testhost.Rdmalab(t)
	cluster := c.ClusterFile(bin, 24600, nil, "")

	f, _ := rasOnIBSim(t, cluster)
	if !strings.Contains(f.Message, "cabled mlx5_3 port 1 ↔ leaf01 port 1") {
		t.Fatalf("the RAS path names no cable: %s", f.Message)
	}
	follow := evidence(f, "follow-up")
	if len(follow) != 1 || !strings.Contains(follow[0], "&& rdmalab bench --cluster "+cluster+" --rounds retest.rounds") {
		t.Fatalf("follow-up: %q", follow)
	}
	line := strings.Replace(follow[0], "&& rdmalab bench ", "&& "+bin+" bench ", 1) +
		" --engine tcp --seconds 1 --samples 1 --timeout 10s --results results.jsonl"
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = testhost.TempDir(t)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("%s\nexit %v, want 1 (a failure found)\n%s", line, err, out)
	}
	named := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		fl := strings.Fields(l)
		if len(fl) >= 2 && strings.HasPrefix(fl[0], "bench.node.") {
			named[fl[1]+" "+fl[0]] = true
		}
	}
	for k := range named {
		if !strings.HasPrefix(k, "n1 ") {
			t.Errorf("named %s", k)
		}
	}
	if !named["n1 bench.node.send"] || !named["n1 bench.node.receive"] {
		t.Errorf("the shaped host n1 is not named on both sides:\n%s", out)
	}
	t.Logf("the follow-up ran in %s:\n%s", time.Since(start).Round(time.Second), out)
}

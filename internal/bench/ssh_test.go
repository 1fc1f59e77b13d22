package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Five hosts with real sshd in network namespaces; bench --engine tcp over
// SSH with every link shaped to 1 Gbit/s: N rounds (N odd), every pair once,
// the results file complete; n3 shaped to 100 Mbit/s is named as the bad
// node; the pair n1 ↔ n2, blackholed, times out alone and the run
// finishes; the run is interrupted in round 3 and --resume measures only
// the rest.
func TestBenchOverSSHInNamespaces(t *testing.T) {
	c := testhost.StartNetCluster(t, "bench", 5)
	for i := range c.NS {
		c.Shape(i, "1gbit")
	}
	c.Shape(2, "100mbit")
	// n2 drops everything to n1: the n1 ↔ n2 pair hangs.
	testhost.IP(t, "-n", c.NS[1], "route", "add", "blackhole", c.Addrs[0]+"/32")

	bin := filepath.Join(c.Dir, "rdmalab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/rdmalab").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var nodes strings.Builder
	for i, a := range c.Addrs {
		fmt.Fprintf(&nodes, "  - {name: n%d, ssh: root@%s, data: %s}\n", i+1, a, a)
	}
	cluster := filepath.Join(c.Dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("nodes:\n"+nodes.String()+fmt.Sprintf(`link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher:
  type: ssh
  known_hosts: %s
  ssh_options: ["-F", "/dev/null", "-i", "%s"]
  rdmalab: %s
  base_port: 24400
`, c.KnownHosts(), c.KeyFile(), bin)), 0o644)
	results := filepath.Join(c.Dir, "results.jsonl")
	start := time.Now()
	args := []string{"bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "2", "--timeout", "15s", "--results", results}
	// Interrupt the run when round 3 starts, then resume it.
	interruptAt(t, "round 3/", bin, args...)
	before, err := ReadResults(results)
	if err != nil || len(before) < 4 || len(before) >= 10 {
		t.Fatalf("after the interrupt: %d results (%v), want rounds 1-2's and not all 10", len(before), err)
	}
	out, err := exec.Command(bin, append(args, "--resume")...).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %d (want 1: failures found): %v\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "already done") {
		t.Errorf("--resume measured everything again:\n%s", out)
	}
	all, err := ReadResults(results)
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]Result{}
	for _, r := range all {
		if r.Retest {
			continue
		}
		if _, twice := measured[r.A+"↔"+r.B]; twice {
			t.Errorf("pair %s ↔ %s measured twice", r.A, r.B)
		}
		measured[r.A+"↔"+r.B] = r
	}
	if len(measured) != 10 {
		t.Fatalf("%d pairs measured, want all 10:\n%s", len(measured), out)
	}
	for k, r := range measured {
		switch {
		case k == "n1↔n2":
			if !r.TimedOut {
				t.Errorf("the blackholed pair did not time out: %+v", r)
			}
		case strings.Contains(k, "n3"):
			if r.Verdict != Broken {
				t.Errorf("%s through the 100 Mbit/s node: %+v", k, r)
			}
		default:
			if r.Verdict != Healthy {
				t.Errorf("%s at 1 Gbit/s: %s", k, r.Judgment+r.Error)
			}
		}
	}
	if !strings.Contains(string(out), "✗ suspect n3") || !strings.Contains(string(out), "round 5/5") {
		t.Errorf("the report does not name n3 or ran the wrong number of rounds:\n%s", out)
	}
	t.Logf("5 hosts over ssh in %s", time.Since(start).Round(time.Second))
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

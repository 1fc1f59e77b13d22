package benchrun

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The default schedule over real sshd in network namespaces, beyond
// bench.CircleMax hosts: one host's link shaped to a quarter of the others' is
// named (both sides, confirmed against known-good partners) after 3
// matching rounds and the retests, far fewer rounds than N−1, and nobody
// else is. RDMALAB_NETNS_HOSTS sets the count (default 32;
// bench/netns-scale.sh runs more); the orchestrator's peak threads and RSS
// are logged.
func TestDefaultScheduleNamesSlowLinkInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary over ssh to many namespaces; scripts/test runs it without -short")
	}
	n := 32
	if v, err := strconv.Atoi(os.Getenv("RDMALAB_NETNS_HOSTS")); err == nil && v > bench.CircleMax {
		n = v
	}
	c := testhost.StartNetCluster(t, "bench-scale", n)
	for i := range n {
		c.Shape(i, "100mbit")
	}
	slow := n/2 + 1 // n(slow+1)
	c.Shape(slow, "25mbit")
	bin := testhost.Rdmalab(t)
	cluster := c.ClusterFile(bin, 25400, nil, "")
	results := filepath.Join(c.Dir, "results.jsonl")
	start := time.Now()
	cmd := exec.Command("/usr/bin/time", "-f", "rdmalab-time %M KB %e s", bin, "bench", "--cluster", cluster, "--engine", "tcp",
		"--seconds", "1", "--samples", "1", "--timeout", "20s", "--results", results)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// the orchestrator's threads, sampled while it runs
	peak := 0
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			// /usr/bin/time's child is rdmalab
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
			for _, k := range strings.Fields(string(kids)) {
				b, _ := os.ReadFile("/proc/" + k + "/status")
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "Threads:"); ok {
						if th, _ := strconv.Atoi(strings.TrimSpace(v)); th > peak {
							peak = th
						}
					}
				}
			}
		}
	}()
	var progress strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		progress.WriteString(sc.Text() + "\n")
	}
	err := cmd.Wait()
	close(stop)
	took := time.Since(start)
	all := stdout.String() + progress.String()
	if exitCode(err) != 1 {
		t.Fatalf("exit %d, want 1\n%s", exitCode(err), all)
	}
	if !strings.Contains(progress.String(), fmt.Sprintf("schedule matching: 3 round(s) of %d pair(s)", n/2)) {
		t.Errorf("the schedule was not said before round 1:\n%s", all)
	}
	slowName := fmt.Sprintf("n%d", slow+1)
	named := map[string]bool{}
	for _, l := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.HasPrefix(f[0], "bench.") && f[0] != "bench.node" && !strings.HasSuffix(f[0], ".noisy") {
			named[f[1]+" "+f[0]] = true
		}
	}
	want := map[string]bool{slowName + " bench.node.send": true, slowName + " bench.node.receive": true}
	for k := range named {
		if !want[k] {
			t.Errorf("named %s", k)
		}
	}
	for k := range want {
		if !named[k] {
			t.Errorf("did not name %s\n%s", k, all)
		}
	}
	mem := progress.String()[strings.LastIndex(progress.String(), "rdmalab-time"):]
	if r := strings.Count(progress.String(), "\nround "); r != bench.MatchingRounds {
		t.Errorf("%d rounds of the schedule, want %d", r, bench.MatchingRounds)
	}
	t.Logf("%d hosts over ssh, default schedule: %s, %d rounds of the schedule (N−1 = %d); peak threads %d; %s",
		n, took.Round(time.Second), strings.Count(progress.String(), "\nround "), n-1, peak, strings.TrimSpace(mem))
	assertNothingLeft(t, c)
}

package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

// threads is this process's OS thread count.
func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// Srun's probes and reaps of a whole cluster at once (a preflight, the
// reap after a round) wait on srun's output, not in wait4: 48 sruns
// running at the same moment hold no OS thread each. Over a real 64-node
// Slurm the orchestrator had 57 threads when they did (bench/slurm-scale.sh).
func TestSrunProbesAndReapsHoldNoThreadEach(t *testing.T) {
	dir := t.TempDir()
	// A stand-in srun: says it started, then stays until told to end,
	// printing what a reap prints.
	fake := fmt.Sprintf("#!/bin/sh\ntouch %[1]s/started.$$\nwhile [ ! -e %[1]s/end ]; do sleep 0.05; done\necho \"4242 rdmalab bench agent\"\n", dir)
	if err := os.WriteFile(filepath.Join(dir, "srun"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	const n = 48
	started := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "started.*"))
		return len(m)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				os.WriteFile(filepath.Join(dir, "end"), nil, 0o644)
				t.Fatalf("waited 60 s for %s", what)
			}
		}
	}
	before := threads(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, n)
	reaped := make([][]string, n)
	for i := range n {
		node := cluster.Node{Name: fmt.Sprintf("node%d", i+1)}
		wg.Go(func() {
			if i%2 == 0 {
				reaped[i], errs[i] = Srun{}.Reap(ctx, node, "run-1")
			} else {
				errs[i] = Srun{}.Probe(ctx, node, nil)
			}
		})
		// one at a time: threads that fork and exec hold are not the
		// question, those that wait are
		waitFor(fmt.Sprintf("srun %d to start", i+1), func() bool { return started() > i })
	}
	during := threads(t)
	os.WriteFile(filepath.Join(dir, "end"), nil, 0o644)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node%d: %v", i+1, err)
		}
	}
	if got := reaped[0]; len(got) != 1 || got[0] != "4242 rdmalab bench agent" {
		t.Errorf("reap read %q", got)
	}
	if during-before > n/4 {
		t.Errorf("%d sruns running: %d OS threads, %d before; want them to hold none each", n, during, before)
	}
}

// fakeSrun puts a stand-in srun first in PATH: it logs its arguments,
// runs the command once per node of --nodelist with SLURMD_NODENAME set,
// as srun's tasks (one after the other: the "nodes" share this machine's
// processes, and a reap on one would race one on another); a node with a file dead.NODE never answers (alone, its
// step cannot be created). It returns the log's path.
func fakeSrun(t *testing.T, dir string) string {
	t.Helper()
	calls := filepath.Join(dir, "calls")
	fake := fmt.Sprintf(`#!/bin/sh
echo "srun $*" | tr '\n' ' ' >>%[1]s; echo >>%[1]s
nodes=
while [ $# -gt 0 ]; do
  case "$1" in
    --nodelist=*) nodes=${1#--nodelist=} ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
for n in $(echo "$nodes" | tr , ' '); do
  if [ -e %[2]s/dead.$n ]; then
    [ "$n" = "$nodes" ] && { echo "srun: error: Unable to create step for job 1: Requested nodes are busy" >&2; exit 1; }
    continue
  fi
  SLURMD_NODENAME=$n "$@"
done
`, calls, dir)
	if err := os.WriteFile(filepath.Join(dir, "srun"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// calls is the fake srun's log, one line a call.
func calls(path string) []string {
	b, _ := os.ReadFile(path)
	return nonEmptyLines(string(b))
}

// A preflight's probes and a round's reaps through NewSrun (the launcher
// a cluster file's srun gives) go out as one srun step over all the nodes
// asked at once: every node's answer is its own (what it lacks, what of
// the run it killed), and a node that did not answer in the batch is asked
// alone, so its error names it as before.
func TestSrunFansOutProbesAndReaps(t *testing.T) {
	dir := t.TempDir()
	log := fakeSrun(t, dir)
	os.WriteFile(filepath.Join(dir, "dead.node7"), nil, 0o644)
	s := For(&cluster.Cluster{Launcher: cluster.Launch{Type: "srun"}}, Setup{})
	const n = 20
	nodes := make([]cluster.Node, n)
	for i := range nodes {
		nodes[i] = cluster.Node{Name: fmt.Sprintf("node%d", i+1)}
	}
	ctx := context.Background()

	unready := Preflight(ctx, s, nodes, func(cluster.Node) []string { return []string{"sh", "/no/such/rdmalab"} }, 30*time.Second)
	for _, nd := range nodes {
		why, out := unready[nd.Name]
		switch {
		case nd.Name == "node7":
			if !strings.Contains(why, "node7 unreachable") || !strings.Contains(why, "Unable to create step") {
				t.Errorf("node7 (never answers): %q", why)
			}
		case !out || why != nd.Name+" lacks /no/such/rdmalab":
			t.Errorf("%s: %q, want it to lack /no/such/rdmalab", nd.Name, why)
		}
	}
	// one step for the nineteen, node7 alone after
	if c := calls(log); len(c) != 2 || !strings.Contains(c[0], "--nodes=20 ") || !strings.Contains(c[1], "--nodelist=node7 ") {
		t.Errorf("srun called %d times:\n%s", len(c), strings.Join(c, "\n"))
	}

	// A process of the run is left: the batch's reap finds it, on one node.
	os.Remove(log)
	run := "test-fanout-" + strconv.Itoa(os.Getpid())
	p, err := Local{}.Start(ctx, Spec{Node: nodes[0], Run: run, Deadline: time.Minute, Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	var mu sync.Mutex
	var found []string
	var wg sync.WaitGroup
	for _, nd := range nodes {
		wg.Go(func() {
			left, err := s.Reap(ctx, nd, run)
			if (err != nil) != (nd.Name == "node7") {
				t.Errorf("reap %s: %v", nd.Name, err)
			}
			mu.Lock()
			found = append(found, left...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(found) != 2 || !strings.Contains(strings.Join(found, "\n"), "sleep 60") {
		t.Errorf("reaped %q, want the run's timeout and sleep", found)
	}
	if c := calls(log); len(c) != 2 {
		t.Errorf("srun called %d times for 20 reaps:\n%s", len(c), strings.Join(c, "\n"))
	}
}

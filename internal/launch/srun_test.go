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

package launch

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fanout gathers the probes and reaps that arrive together (a preflight's,
// a round's reap of every node that ran something) into one srun step
// over all their nodes: one step creation at slurmctld and Slurm's own tree
// fan-out to the slurmds, instead of one step, and one srun here, per
// node. Over a real 64-node Slurm those per-node steps were 4 in 10 of all
// the run's steps. A node whose answer did not come back whole is asked
// again on its own, so errors name it as before.
type fanout struct {
	mu      sync.Mutex
	pending map[string]*fanBatch // open batches, by the command they run
	// gather is how long a batch waits for more nodes after its first.
	gather time.Duration
}

type fanBatch struct {
	nodes []string
	seen  map[string]bool
	done  chan struct{}
	// after done: each node's lines and the exit status it reported
	// (absent: no answer came back from it)
	lines map[string][]string
	rc    map[string]int
}

// fanoutScript runs "$@" on the node and prints its output, each line led
// by the node's name (srun keeps the lines of its tasks whole), then the
// node's name, "rdmalab-end" and the exit status.
const fanoutScript = `n=$SLURMD_NODENAME; out=$("$@" 2>&1); rc=$?; printf '%s\n' "$out" | while IFS= read -r l; do [ -n "$l" ] && printf '%s %s\n' "$n" "$l"; done; printf '%s rdmalab-end %d\n' "$n" "$rc"`

// run runs argv on node as part of a batch of every node asking the same
// within the gather time, and returns the node's output lines and exit
// status; ok is false when no whole answer came back from the node.
func (f *fanout) run(ctx context.Context, s Srun, node string, argv []string) (lines []string, rc int, ok bool) {
	key := strings.Join(argv, "\x00")
	f.mu.Lock()
	if f.pending == nil {
		f.pending = map[string]*fanBatch{}
	}
	b := f.pending[key]
	first := b == nil
	if first {
		b = &fanBatch{seen: map[string]bool{}, done: make(chan struct{})}
		f.pending[key] = b
	}
	if !b.seen[node] {
		b.seen[node] = true
		b.nodes = append(b.nodes, node)
	}
	f.mu.Unlock()
	if first {
		select {
		case <-time.After(f.gather):
		case <-ctx.Done():
		}
		f.mu.Lock()
		delete(f.pending, key) // later arrivals open the next batch
		f.mu.Unlock()
		b.lines, b.rc = s.step(ctx, b.nodes, argv)
		close(b.done)
	} else {
		select {
		case <-b.done:
		case <-ctx.Done():
			return nil, 0, false
		}
	}
	rc, ok = b.rc[node]
	return b.lines[node], rc, ok
}

// step runs argv once on each of nodes in one srun step and sorts the
// output by node. A node that fails does not end the others
// (--kill-on-bad-exit=0).
func (s Srun) step(ctx context.Context, nodes []string, argv []string) (map[string][]string, map[string]int) {
	k := strconv.Itoa(len(nodes))
	args := append([]string{"--nodelist=" + strings.Join(nodes, ","), "--nodes=" + k, "--ntasks=" + k, "--ntasks-per-node=1",
		"--overlap", "--quiet", "--kill-on-bad-exit=0", "--export=ALL", "sh", "-c", fanoutScript, "fanout"}, argv...)
	cmd := s.srun(ctx, args)
	out, _ := output(ctx, cmd)
	in := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		in[n] = true
	}
	lines, rcs := map[string][]string{}, map[string]int{}
	for _, l := range strings.Split(string(out), "\n") {
		node, rest, _ := strings.Cut(l, " ")
		if !in[node] {
			continue // srun's own words, or a line torn by a kill
		}
		if _, done := rcs[node]; done {
			continue
		}
		if v, ok := strings.CutPrefix(rest, "rdmalab-end "); ok {
			if rc, err := strconv.Atoi(v); err == nil {
				rcs[node] = rc
			}
			continue
		}
		lines[node] = append(lines[node], rest)
	}
	return lines, rcs
}

package launch

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

func TestShellJoinQuotes(t *testing.T) {
	if got := shellJoin([]string{"ib_write_bw", "-d", "mlx5_0", "it's; rm -rf /"}); got != `'ib_write_bw' '-d' 'mlx5_0' 'it'\''s; rm -rf /'` {
		t.Errorf("%s", got)
	}
}

// A local process that forks a child and hangs: Kill ends the whole group,
// Reap finds nothing of the run afterwards, and a run's leftover is found.
func TestLocalKillsTheGroupAndReaps(t *testing.T) {
	n := cluster.Node{Name: "here"}
	run := "test-" + strings.ReplaceAll(t.Name(), "/", "-")
	p, err := Local{}.Start(context.Background(), Spec{Node: n, Run: run, Deadline: time.Minute, Argv: []string{"sh", "-c", "sleep 60 & echo started; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	io.ReadFull(p.Stdout(), buf)
	start := time.Now()
	p.Kill()
	io.Copy(io.Discard, p.Stdout())
	p.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("kill took %s: the child held the pipe", d)
	}
	if left, err := (Local{}).Reap(context.Background(), n, run); err != nil || len(left) != 0 {
		t.Errorf("left behind after Kill: %v %v", left, err)
	}
	// A leftover is found and killed.
	q, _ := Local{}.Start(context.Background(), Spec{Node: n, Run: run, Deadline: time.Minute, Argv: []string{"sleep", "60"}})
	time.Sleep(100 * time.Millisecond)
	left, err := (Local{}).Reap(context.Background(), n, run)
	if err != nil || len(left) == 0 {
		t.Errorf("a running process of the run was not found: %v %v", left, err)
	}
	q.Wait()
	// The node-side deadline ends a process nobody kills.
	r, _ := Local{}.Start(context.Background(), Spec{Node: n, Run: run, Deadline: time.Second, Argv: []string{"sleep", "60"}})
	start = time.Now()
	r.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the deadline did not bound the process: %s", d)
	}
}

func TestLocalProbeNamesWhatIsMissing(t *testing.T) {
	err := Local{}.Probe(context.Background(), cluster.Node{Name: "n1"}, []string{"sh", "no-such-binary-xyz", "/no/such/path"})
	var m *MissingError
	if e, ok := err.(*MissingError); !ok || len(e.What) != 2 {
		t.Fatalf("%v", err)
	} else {
		m = e
	}
	if m.Error() != "n1 lacks no-such-binary-xyz, /no/such/path" {
		t.Error(m)
	}
}

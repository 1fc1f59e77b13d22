package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// The run's name holds this test process's PID: Reap finds a run's
	// processes by name across the machine, and another `go test` of this
	// package running at once (a loaded CI machine) must not be seen.
	run := fmt.Sprintf("test-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid())
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

// mpirun's rsh agent is the ssh of SSH (its options, known_hosts, control
// connection), every rank carries the run identity and a deadline on its
// node; what mpirun cannot take is refused by node.
func TestMPIRunCommand(t *testing.T) {
	c, err := cluster.Parse([]byte(`nodes:
  - {name: n1, ssh: root@10.0.0.1, data: 10.0.0.1}
  - {name: n2, ssh: root@10.0.0.2, data: 10.0.0.2}
launcher: {known_hosts: /k/known_hosts, ssh_options: ["-i", "/k/id"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := &SSH{Options: c.Launcher.Options, KnownHosts: c.Launcher.KnownHosts, ControlDir: "/run/c"}
	m, err := NewMPIRun(c, s, []string{"--mca", "btl", "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd, err := m.Command(context.Background(), Job{Nodes: c.Nodes, RanksPerNode: 2, Env: []string{"NCCL_DEBUG=INFO"}, Argv: []string{"all_reduce_perf", "-g", "1"},
		Run: "r1", Deadline: 65 * time.Second, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, " ")
	agent := "ssh " + strings.Join(s.base(22), " ") + " -l root"
	for _, want := range []string{"-np 4 -npernode 2", "--mca plm_rsh_agent " + agent, "--mca btl tcp", "-x NCCL_DEBUG=INFO -x RDMALAB_RUN=r1 timeout -k 3 65 all_reduce_perf -g 1"} {
		if !strings.Contains(args, want) {
			t.Errorf("%q lacks %q", args, want)
		}
	}
	for _, want := range []string{"ControlPath=/run/c/%C", "UserKnownHostsFile=/k/known_hosts", "-i /k/id", "BatchMode=yes"} {
		if !strings.Contains(agent, want) {
			t.Errorf("agent %q lacks %q", agent, want)
		}
	}
	if hf, _ := os.ReadFile(filepath.Join(dir, "hostfile-2")); string(hf) != "10.0.0.1 slots=2\n10.0.0.2 slots=2\n" {
		t.Errorf("hostfile %q", hf)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"  - {name: n1, ssh: root@a, data: 10.0.0.1}\n  - {name: n2, ssh: root@b, ssh_port: 2222, data: 10.0.0.2}\n", "node n2: ssh port 2222 differs from 22"},
		{"  - {name: n1, ssh: root@a, data: 10.0.0.1}\n  - {name: n2, ssh: admin@b, data: 10.0.0.2}\n", `node n2: ssh user "admin" differs from "root"`},
	} {
		c, err := cluster.Parse([]byte("nodes:\n" + bad.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewMPIRun(c, &SSH{ControlDir: "/run/c"}, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v, want %q", err, bad.want)
		}
	}
	if _, err := NewMPIRun(c, &SSH{Options: []string{"-o", "ProxyCommand=ssh jump nc %h %p"}, ControlDir: "/run/c"}, nil); err == nil || !strings.Contains(err.Error(), "has a space") {
		t.Errorf("a space in an ssh option: %v", err)
	}
}

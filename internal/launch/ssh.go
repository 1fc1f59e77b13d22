package launch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// SSH runs commands through the system ssh, so the user's whole
// ~/.ssh/config applies: batch mode (never a password prompt), strict host
// key checking, one control connection per node reused by every command
// of the run (the kill and the reap go over it too).
type SSH struct {
	Options    []string
	KnownHosts string
	// ControlDir holds the control sockets (short path: sockets have a
	// length limit).
	ControlDir string
	// ConnectTimeout bounds reaching a node.
	ConnectTimeout time.Duration

	mu    sync.Mutex
	nodes map[string]cluster.Node // every node a control connection was opened to
}

// base is the one ssh option list of rdmalab, for its own sessions and
// for mpirun's rsh agent alike: batch mode (never a password prompt),
// strict host keys, a connect timeout, the control connection of each
// node, keep-alives, the port, the cluster's known_hosts and options. The
// nodes are remembered for Close.
func (s *SSH) base(port int, nodes ...cluster.Node) []string {
	ct := s.ConnectTimeout
	if ct <= 0 {
		ct = 10 * time.Second
	}
	args := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", fmt.Sprintf("ConnectTimeout=%d", deadlineSeconds(ct)),
		"-o", "ControlMaster=auto", "-o", fmt.Sprintf("ControlPersist=%d", int(ControlPersist.Seconds())), "-o", "ControlPath=" + filepath.Join(s.ControlDir, "%C"),
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-p", strconv.Itoa(port)}
	if s.KnownHosts != "" {
		args = append(args, "-o", "UserKnownHostsFile="+s.KnownHosts)
	}
	s.mu.Lock()
	if s.nodes == nil {
		s.nodes = map[string]cluster.Node{}
	}
	for _, n := range nodes {
		s.nodes[n.Name] = n
	}
	s.mu.Unlock()
	return append(args, s.Options...)
}

func (s *SSH) command(ctx context.Context, n cluster.Node, remote string) *exec.Cmd {
	args := append(s.base(n.SSHPort, n), "--", n.SSH, remote)
	cmd := exec.CommandContext(ctx, "ssh", args...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

var pidLineRE = lazyre.New(`^rdmalab-pid (\d+)$`)

// Start implements Launcher. The remote shell is the session leader sshd
// made (its pid is its process group), says its pid on stderr, carries
// the run identity and execs the command under timeout(1).
func (s *SSH) Start(ctx context.Context, sp Spec) (Process, error) {
	remote := fmt.Sprintf("%s=%s; export %s; echo rdmalab-pid $$ >&2; exec timeout -k 2 %d %s",
		EnvRun, shellJoin([]string{sp.Run}), EnvRun, deadlineSeconds(sp.Deadline), shellJoin(sp.Argv))
	cmd := s.command(context.WithoutCancel(ctx), sp.Node, remote)
	cmd.Stdin = sp.Stdin
	p := &sshProc{s: s, node: sp.Node, cmd: cmd, pid: make(chan int, 1)}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ssh to %s: %w", sp.Node.Name, err)
	}
	p.stderrDone = make(chan struct{})
	go p.readStderr(errPipe)
	stop := context.AfterFunc(ctx, p.Kill)
	p.stopKill = stop
	return p, nil
}

type sshProc struct {
	s          *SSH
	node       cluster.Node
	cmd        *exec.Cmd
	out        io.Reader
	stderr     syncBuffer
	stderrDone chan struct{}
	pid        chan int
	stopKill   func() bool
	exited     atomic.Bool // after Wait, the pid may belong to someone else
	killed     atomic.Bool

	killOnce sync.Once
}

func (p *sshProc) readStderr(r io.Reader) {
	defer close(p.stderrDone)
	sc := bufio.NewScanner(r)
	said := false
	for sc.Scan() {
		if m := pidLineRE().FindStringSubmatch(sc.Text()); m != nil && !said {
			pid, _ := strconv.Atoi(m[1])
			p.pid <- pid
			said = true
			continue
		}
		p.stderr.Write([]byte(sc.Text() + "\n"))
	}
	if !said {
		close(p.pid)
	}
}

func (p *sshProc) Stdout() io.Reader { return p.out }

func (p *sshProc) Wait() error {
	<-p.stderrDone
	err := p.cmd.Wait()
	p.exited.Store(true)
	p.stopKill()
	if err == nil {
		return nil
	}
	if p.killed.Load() {
		// ssh exits 255 when its remote command dies of a signal: ours.
		return fmt.Errorf("on %s: killed", p.node.Name)
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 255 {
		return &UnreachableError{Node: p.node.Name, Reason: Tail(p.stderr.String() + " ssh exited 255")}
	}
	return fmt.Errorf("on %s: %v: %s", p.node.Name, err, Tail(p.stderr.String()+" "))
}

// Kill kills the remote process group over the control connection, then
// the local ssh. Without the first, the far end would live on: sshd does
// not signal a command without a terminal when its client goes away.
func (p *sshProc) Kill() {
	if p.exited.Load() {
		return
	}
	p.killOnce.Do(func() {
		p.killed.Store(true)
		select {
		case pid, ok := <-p.pid:
			if ok {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, _ = output(ctx, p.s.command(ctx, p.node, fmt.Sprintf("kill -KILL -- -%d 2>/dev/null; true", pid)))
				cancel()
			}
		default: // not started there yet: its own deadline ends it
		}
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	})
}

// probeScript checks every needed path (or command) and names the missing.
const probeScript = `m=; for x in "$@"; do case "$x" in /*) test -e "$x" ;; *) command -v "$x" >/dev/null 2>&1 ;; esac || m="$m $x"; done; if [ -n "$m" ]; then echo "missing:$m"; exit 3; fi`

// Probe implements Launcher; it also opens the node's control connection.
func (s *SSH) Probe(ctx context.Context, n cluster.Node, need []string) error {
	remote := "timeout -k 1 10 sh -c " + shellJoin([]string{probeScript}) + " probe " + shellJoin(need)
	if len(need) == 0 {
		remote = "true"
	}
	out, err := output(ctx, s.command(ctx, n, remote))
	if err == nil {
		return nil
	}
	text := string(out)
	if ee, ok := err.(*exec.ExitError); ok {
		switch ee.ExitCode() {
		case 3:
			_, m, _ := strings.Cut(text, "missing:")
			return &MissingError{Node: n.Name, What: strings.Fields(m)}
		case 255:
			return &UnreachableError{Node: n.Name, Reason: sshReason(text)}
		}
	}
	if ctx.Err() != nil {
		return &UnreachableError{Node: n.Name, Reason: "no answer within the probe timeout"}
	}
	return fmt.Errorf("probe %s: %v: %s", n.Name, err, Tail(text+" "))
}

// sshReason says in plain words why ssh could not get in.
func sshReason(text string) string {
	switch {
	case strings.Contains(text, "REMOTE HOST IDENTIFICATION HAS CHANGED"), strings.Contains(text, "Host key verification failed"):
		return "its host key is not the one in known_hosts (Host key verification failed)"
	case strings.Contains(text, "Connection refused"):
		return "connection refused (sshd not running?)"
	case strings.Contains(text, "timed out"):
		return "connection timed out"
	case strings.Contains(text, "Permission denied"):
		return "permission denied (key not accepted)"
	}
	return Tail(text + " ssh exited 255")
}

// reapScript finds the processes whose environment carries the run id
// (one grep over every environ file), prints them and kills them.
const reapScript = `for e in $(grep -lazx "$1=$2" /proc/[0-9]*/environ 2>/dev/null); do p=${e#/proc/}; p=${p%/environ}; [ "$p" = $$ ] && continue; echo "$p $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; kill -KILL "$p" 2>/dev/null; done; true`

// Reap implements Launcher.
func (s *SSH) Reap(ctx context.Context, n cluster.Node, run string) ([]string, error) {
	// Bounded on the node too: a reap must never become a leftover itself.
	out, err := output(ctx, s.command(ctx, n, "timeout -k 1 10 sh -c "+shellJoin([]string{reapScript})+" reap "+shellJoin([]string{EnvRun, run})))
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 255 {
			return nil, &UnreachableError{Node: n.Name, Reason: sshReason(string(out))}
		}
		return nil, fmt.Errorf("reap on %s: %v: %s", n.Name, err, Tail(string(out)+" "))
	}
	return nonEmptyLines(string(out)), nil
}

// Close implements Launcher: it ends the control connections.
func (s *SSH) Close() error {
	s.mu.Lock()
	nodes := make([]cluster.Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		nodes = append(nodes, n)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			args := []string{"-o", "ControlPath=" + filepath.Join(s.ControlDir, "%C"), "-p", strconv.Itoa(n.SSHPort)}
			args = append(args, s.Options...)
			_ = exec.CommandContext(ctx, "ssh", append(args, "-O", "exit", "--", n.SSH)...).Run()
		})
	}
	wg.Wait()
	return nil
}

// output is CombinedOutput that waits on the pipe, not the process: the
// output is read to its end (the runtime's poller, no OS thread) and the
// process waited for only then, briefly. CombinedOutput waits in wait4
// first, one OS thread per ssh for as long as it runs: thousands of
// nodes' probes and reaps were thousands of threads.
func output(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, err
	}
	// As WaitDelay does for exec's own pipes: once the command is killed,
	// a descendant still holding the pipe does not hold the caller.
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Now().Add(cmd.WaitDelay)) })
	defer stop()
	out, _ := io.ReadAll(r)
	return out, cmd.Wait()
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

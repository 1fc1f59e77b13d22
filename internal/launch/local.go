package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/procgroup"
)

// Local runs commands on this machine (nodes are addresses here: loopback,
// or namespaces reached by other means). Each process leads its own
// process group, which a kill ends whole.
type Local struct{}

// Start implements Launcher.
func (Local) Start(ctx context.Context, sp Spec) (Process, error) {
	argv := append([]string{"timeout", "-k", "2", strconv.Itoa(deadlineSeconds(sp.Deadline))}, sp.Argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), EnvRun+"="+sp.Run)
	cmd.Stdin = sp.Stdin
	procgroup.Lead(cmd)
	cmd.WaitDelay = 2 * time.Second
	p := &groupProc{cmd: cmd, node: sp.Node.Name, kill: func(pid int) { _ = procgroup.Stop(pid, 0) }}
	if err := p.start(ctx); err != nil {
		return nil, fmt.Errorf("start %s for %s: %w", sp.Argv[0], sp.Node.Name, err)
	}
	return p, nil
}

// groupProc is a local process leading its own process group (the
// command itself for Local, srun for Srun): kill ends the group its way,
// failed turns an exit error and stderr into the error Wait returns.
type groupProc struct {
	cmd    *exec.Cmd
	node   string
	out    io.Reader
	stderr syncBuffer
	stop   func() bool
	once   sync.Once
	kill   func(pid int)
	failed func(err error, stderr string) error
}

func (p *groupProc) start(ctx context.Context) error {
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p.out = out
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.stop = context.AfterFunc(ctx, p.Kill)
	return nil
}

func (p *groupProc) Stdout() io.Reader { return p.out }

func (p *groupProc) Wait() error {
	err := p.cmd.Wait()
	p.stop()
	if err == nil {
		return nil
	}
	if p.failed != nil {
		return p.failed(err, p.stderr.String())
	}
	return fmt.Errorf("on %s: %v: %s", p.node, err, Tail(p.stderr.String()+" "))
}

func (p *groupProc) Kill() {
	p.once.Do(func() {
		if p.cmd.Process != nil {
			p.kill(p.cmd.Process.Pid)
		}
	})
}

// Probe implements Launcher: the needed paths or commands exist here.
func (Local) Probe(_ context.Context, n cluster.Node, need []string) error {
	var missing []string
	for _, x := range need {
		var err error
		if filepath.IsAbs(x) {
			_, err = os.Stat(x)
		} else {
			_, err = exec.LookPath(x)
		}
		if err != nil {
			missing = append(missing, x)
		}
	}
	if len(missing) > 0 {
		return &MissingError{Node: n.Name, What: missing}
	}
	return nil
}

// Reap implements Launcher by the run id in /proc/*/environ.
func (Local) Reap(_ context.Context, _ cluster.Node, run string) ([]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var found []string
	want := EnvRun + "=" + run
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				found = append(found, e.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
	return found, nil
}

// Close implements Launcher.
func (Local) Close() error { return nil }

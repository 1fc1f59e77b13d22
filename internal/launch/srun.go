package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/procgroup"
)

// Srun runs each process as a one-task job step of the current Slurm
// allocation, pinned to its node with --nodelist. --overlap lets a
// round's server and client steps share the allocation's nodes. The run
// identity travels in the step's environment, and timeout(1) on the node
// bounds the step should srun itself be killed before it can cancel it.
type Srun struct {
	// Env is added to srun's environment (SLURM_CONF in tests).
	Env []string
}

func (s Srun) command(ctx context.Context, n cluster.Node, extraEnv string, argv ...string) *exec.Cmd {
	export := "ALL"
	if extraEnv != "" {
		export += "," + extraEnv
	}
	args := append([]string{"--nodelist=" + n.Name, "--nodes=1", "--ntasks=1", "--overlap", "--quiet",
		"--kill-on-bad-exit=1", "--export=" + export}, argv...)
	cmd := exec.CommandContext(ctx, "srun", args...)
	cmd.Env = append(os.Environ(), s.Env...)
	procgroup.Lead(cmd)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Start implements Launcher.
func (s Srun) Start(ctx context.Context, sp Spec) (Process, error) {
	argv := append([]string{"timeout", "-k", "2", strconv.Itoa(deadlineSeconds(sp.Deadline))}, sp.Argv...)
	cmd := s.command(context.WithoutCancel(ctx), sp.Node, EnvRun+"="+sp.Run, argv...)
	node := sp.Node.Name
	p := &groupProc{cmd: cmd, node: node,
		// SIGTERM makes srun signal the step's tasks and cancel the step;
		// the group is killed outright if srun lingers.
		kill: func(pid int) { _ = procgroup.Stop(pid, 2*time.Second) },
		failed: func(err error, stderr string) error {
			if strings.Contains(stderr, "Invalid node name") || strings.Contains(stderr, "Unable to allocate") || strings.Contains(stderr, "Unable to create step") {
				return &UnreachableError{Node: node, Reason: Tail(stderr)}
			}
			return fmt.Errorf("on %s: %v: %s", node, err, Tail(stderr+" "))
		}}
	if err := p.start(ctx); err != nil {
		return nil, fmt.Errorf("start srun on %s: %w", node, err)
	}
	return p, nil
}

// Probe implements Launcher: a step on the node checks what it needs.
func (s Srun) Probe(ctx context.Context, n cluster.Node, need []string) error {
	argv := []string{"true"}
	if len(need) > 0 {
		argv = append([]string{"timeout", "-k", "1", "10", "sh", "-c", probeScript, "probe"}, need...)
	}
	out, err := s.command(ctx, n, "", argv...).CombinedOutput()
	if err == nil {
		return nil
	}
	text := string(out)
	if _, m, ok := strings.Cut(text, "missing:"); ok {
		return &MissingError{Node: n.Name, What: strings.Fields(m)}
	}
	if ctx.Err() != nil {
		return &UnreachableError{Node: n.Name, Reason: "no step started within the probe timeout"}
	}
	return &UnreachableError{Node: n.Name, Reason: Tail(text + " srun: " + err.Error())}
}

// Reap implements Launcher with a step on the node that kills what
// carries the run's identity.
func (s Srun) Reap(ctx context.Context, n cluster.Node, run string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := s.command(ctx, n, "", "timeout", "-k", "1", "10", "sh", "-c", reapScript, "reap", EnvRun, run).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("reap on %s: %v: %s", n.Name, err, Tail(string(out)+" "))
	}
	return nonEmptyLines(string(out)), nil
}

// Close implements Launcher.
func (Srun) Close() error { return nil }

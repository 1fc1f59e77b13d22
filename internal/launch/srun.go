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
	// fan, when set (NewSrun), gathers probes and reaps that arrive
	// together into one step over their nodes.
	fan *fanout
}

// NewSrun is the srun launcher of a run: the probes of a preflight and
// the reaps after a round each go out as one srun step over all the nodes
// asked at once, not one per node.
func NewSrun(env []string) Srun {
	return Srun{Env: env, fan: &fanout{gather: 100 * time.Millisecond}}
}

func (s Srun) command(ctx context.Context, n cluster.Node, extraEnv string, argv ...string) *exec.Cmd {
	export := "ALL"
	if extraEnv != "" {
		export += "," + extraEnv
	}
	return s.srun(ctx, append([]string{"--nodelist=" + n.Name, "--nodes=1", "--ntasks=1", "--overlap", "--quiet",
		"--kill-on-bad-exit=1", "--export=" + export}, argv...))
}

// srun is srun with args, leading its own process group.
func (s Srun) srun(ctx context.Context, args []string) *exec.Cmd {
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
	cmd.Stdin = sp.Stdin // one task: srun forwards its stdin to it
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
	if s.fan != nil {
		lines, rc, ok := s.fan.run(ctx, s, n.Name, argv)
		switch {
		case ok && rc == 0:
			return nil
		case ok && rc == 3:
			if _, m, found := strings.Cut(strings.Join(lines, " "), "missing:"); found {
				return &MissingError{Node: n.Name, What: strings.Fields(m)}
			}
		}
		// no whole answer from the node in the batch: ask it alone
	}
	// output, not CombinedOutput: a running srun holds no OS thread here
	// (a preflight probes every node at once).
	out, err := output(ctx, s.command(ctx, n, "", argv...))
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
	// srun's own words (its last line) say why; its exit status only
	// when it said nothing
	reason := Tail(text + " ")
	if reason == "" {
		reason = "srun " + err.Error()
	}
	return &UnreachableError{Node: n.Name, Reason: reason}
}

// Reap implements Launcher with a step on the node that kills what
// carries the run's identity.
func (s Srun) Reap(ctx context.Context, n cluster.Node, run string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	argv := []string{"timeout", "-k", "1", "10", "sh", "-c", reapScript, "reap", EnvRun, run}
	if s.fan != nil {
		if lines, rc, ok := s.fan.run(ctx, s, n.Name, argv); ok && rc == 0 {
			return lines, nil
		}
		// no whole answer from the node in the batch: reap it alone
	}
	out, err := output(ctx, s.command(ctx, n, "", argv...))
	if err != nil {
		return nil, fmt.Errorf("reap on %s: %v: %s", n.Name, err, Tail(string(out)+" "))
	}
	return nonEmptyLines(string(out)), nil
}

// Close implements Launcher.
func (Srun) Close() error { return nil }

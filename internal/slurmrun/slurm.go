// Package slurmrun is what rdmalab runs on Slurm: scontrol to read a
// node's state and drain or resume it (bounded, never hanging on a
// controller that does not answer yet), the health run that applies
// package slurm's policy, and the cluster of a job's allocation.
package slurmrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/procgroup"
	"github.com/rdmalab/rdmalab/internal/slurm"
)

// ErrControllerDown means scontrol could not reach slurmctld in time: a
// health check then changes nothing.
var ErrControllerDown = errors.New("slurmctld did not answer")

// Runner runs a Slurm command with a deadline.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) (string, error)
}

// Exec runs the real commands, each in its own process group killed at
// the deadline (scontrol retries for a minute when the controller is
// away: the deadline bounds that).
type Exec struct {
	Timeout time.Duration
	Env     []string // extra environment, e.g. SLURM_CONF=...
}

// Run runs name with args and returns its standard output.
func (e Exec) Run(ctx context.Context, name string, args ...string) (string, error) {
	t := e.Timeout
	if t <= 0 {
		t = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	cmd := procgroup.Command(ctx, 0, time.Second, findTool(name), args...)
	cmd.Env = append(cmd.Environ(), e.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("%s %s: no answer in %s: %w", name, strings.Join(args, " "), t, ErrControllerDown)
	case err != nil:
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// toolDirs are where Slurm's clients live when PATH does not say: slurmd
// runs HealthCheckProgram with an empty PATH, so a bare "scontrol" would
// never be found there.
var toolDirs = []string{"/usr/bin", "/usr/local/bin", "/opt/slurm/bin", "/usr/local/slurm/bin"}

func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range toolDirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

// ShowNode reads one node's state.
func ShowNode(ctx context.Context, r Runner, name string) (slurm.Node, error) {
	out, err := r.Run(ctx, "scontrol", "--oneliner", "show", "node", name)
	if err != nil {
		return slurm.Node{}, err
	}
	return slurm.ParseNode(out)
}

// Drain drains a node with a reason (marked as rdmalab's).
func Drain(ctx context.Context, r Runner, name, reason string) error {
	_, err := r.Run(ctx, "scontrol", "update", "NodeName="+name, "State=DRAIN", "Reason="+reason)
	return err
}

// Resume returns a node to service.
func Resume(ctx context.Context, r Runner, name string) error {
	_, err := r.Run(ctx, "scontrol", "update", "NodeName="+name, "State=RESUME")
	return err
}

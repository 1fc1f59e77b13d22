// Package procgroup starts a local command as the leader of its own
// process group, so that stopping it ends everything it started (a tool's
// helpers, mpirun's ssh sessions, srun), not only the command: the one
// bounded process-group command of fabric's and inventory's tools,
// slurmrun's scontrol and launch's job launchers.
package procgroup

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Command is exec.CommandContext(ctx, name, args...) leading its own
// process group. When ctx ends the group is stopped as Stop does with
// grace (0: killed at once); waitDelay (0: one second) bounds the wait
// for its pipes after that, which a grandchild outside the group could
// still hold.
func Command(ctx context.Context, grace, waitDelay time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	Lead(cmd)
	cmd.Cancel = func() error { return Stop(cmd.Process.Pid, grace) }
	if waitDelay <= 0 {
		waitDelay = time.Second
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

// Lead makes cmd, once started, the leader of a new process group.
func Lead(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Stop ends the process group pid leads: SIGTERM, then SIGKILL grace
// later for what has not ended (a launcher forwards TERM to what it
// started); with no grace, SIGKILL at once. The error is the first
// signal's.
func Stop(pid int, grace time.Duration) error {
	if grace <= 0 {
		return syscall.Kill(-pid, syscall.SIGKILL)
	}
	err := syscall.Kill(-pid, syscall.SIGTERM)
	time.AfterFunc(grace, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	return err
}

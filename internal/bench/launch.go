package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Launcher makes the command that runs argv on a node. It is small so a
// Slurm (srun) launcher can be added beside ssh and local.
type Launcher interface {
	Command(ctx context.Context, n Node, argv []string) *exec.Cmd
}

// Local runs commands on this machine (nodes are addresses here, e.g. on
// loopback or in network namespaces reached by other means).
type Local struct{}

// Command implements Launcher.
func (Local) Command(ctx context.Context, _ Node, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// SSH runs commands through the system ssh, so the user's whole
// ~/.ssh/config applies: batch mode (never a password prompt), strict host
// key checking, one reused connection per node.
type SSH struct {
	Options    []string
	KnownHosts string
	// ControlDir holds the ControlMaster sockets.
	ControlDir string
	// RemoteTimeout bounds every remote command by itself (timeout -k), so
	// a pair killed here does not leave its remote ends running.
	RemoteTimeout time.Duration
}

// Command implements Launcher.
func (s SSH) Command(ctx context.Context, n Node, argv []string) *exec.Cmd {
	args := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
		"-o", "ControlMaster=auto", "-o", "ControlPersist=60", "-o", "ControlPath=" + filepath.Join(s.ControlDir, "%C"),
		"-p", fmt.Sprint(n.SSHPort)}
	if s.KnownHosts != "" {
		args = append(args, "-o", "UserKnownHostsFile="+s.KnownHosts)
	}
	args = append(args, s.Options...)
	remote := argv
	if s.RemoteTimeout > 0 {
		remote = append([]string{"timeout", "-k", "2", fmt.Sprint(int(s.RemoteTimeout.Seconds() + 1))}, argv...)
	}
	args = append(args, "--", n.SSH, shellJoin(remote))
	cmd := exec.CommandContext(ctx, "ssh", args...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Close ends the reused connections to the nodes, so nothing of the run
// stays behind on them.
func (s SSH) Close(nodes []Node) {
	for _, n := range nodes {
		args := []string{"-o", "ControlPath=" + filepath.Join(s.ControlDir, "%C"), "-p", fmt.Sprint(n.SSHPort)}
		args = append(args, s.Options...)
		_ = exec.Command("ssh", append(args, "-O", "exit", "--", n.SSH)...).Run()
	}
}

// shellJoin quotes every argument for the remote shell: ssh passes one
// string, and no value from a cluster file may be read as shell syntax.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/procgroup"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Job is one launch that starts every rank of a run at once (an MPI job):
// RanksPerNode ranks on each of Nodes, filled in order, so rank r runs on
// Nodes[r/RanksPerNode].
type Job struct {
	Nodes        []cluster.Node
	RanksPerNode int
	Env          []string // NAME=VALUE for every rank
	Argv         []string
	// Run is the run's identity: every rank carries it (Reap finds them).
	Run string
	// Deadline bounds every rank on its node (timeout -k), a backstop
	// should the kill from here never arrive.
	Deadline time.Duration
	// Dir is where the launcher may write files (a hostfile).
	Dir string
}

// JobLauncher makes the one local command that starts every rank of a
// job. The command leads its own process group; when its context ends the
// group gets SIGTERM, and SIGKILL shortly after. Reap and Close are a
// Launcher's.
type JobLauncher interface {
	Command(ctx context.Context, j Job) (*exec.Cmd, error)
	Reap(ctx context.Context, n cluster.Node, run string) ([]string, error)
	Close() error
}

// MPIRun launches through Open MPI's mpirun with a hostfile, its rsh agent
// (plm_rsh_agent) the ssh of SSH (the cluster's options, known_hosts and
// control connections), which also reaps.
type MPIRun struct {
	SSH   *SSH
	agent []string
	// Extra are more mpirun arguments (--mca oob_tcp_if_include …).
	Extra []string
}

// NewMPIRun checks what mpirun needs of the cluster (one ssh port and one
// user for all nodes, no space in an ssh option: mpirun splits its agent
// on spaces) and builds its rsh agent from s.
func NewMPIRun(c *cluster.Cluster, s *SSH, extra []string) (*MPIRun, error) {
	userOf := func(n cluster.Node) string {
		if u, _, ok := strings.Cut(n.SSH, "@"); ok {
			return u
		}
		return ""
	}
	port, user := c.Nodes[0].SSHPort, userOf(c.Nodes[0])
	for _, n := range c.Nodes {
		if n.SSHPort != port {
			return nil, fmt.Errorf("node %s: ssh port %d differs from %d: mpirun takes one ssh port for all nodes", n.Name, n.SSHPort, port)
		}
		if userOf(n) != user {
			return nil, fmt.Errorf("node %s: ssh user %q differs from %q: mpirun takes one ssh user for all nodes", n.Name, userOf(n), user)
		}
	}
	agent := append([]string{"ssh"}, s.base(port, c.Nodes...)...)
	if user != "" {
		agent = append(agent, "-l", user)
	}
	for _, a := range agent {
		if strings.ContainsAny(a, " \t") {
			return nil, fmt.Errorf("ssh option %q has a space: mpirun splits its rsh agent on spaces", a)
		}
	}
	return &MPIRun{SSH: s, agent: agent, Extra: extra}, nil
}

// hostOf is the host part of [user@]host.
func hostOf(ssh string) string {
	if _, h, ok := strings.Cut(ssh, "@"); ok {
		return h
	}
	return ssh
}

// Command implements JobLauncher: a hostfile of the job's nodes, -npernode
// ranks on each, the environment and the run identity through -x, every
// rank's output tagged with its rank, and every rank bounded by timeout(1)
// on its node.
func (m *MPIRun) Command(ctx context.Context, j Job) (*exec.Cmd, error) {
	var hf bytes.Buffer
	for _, n := range j.Nodes {
		fmt.Fprintf(&hf, "%s slots=%d\n", hostOf(n.SSH), j.RanksPerNode)
	}
	name := fmt.Sprintf("hostfile-%d", len(j.Nodes))
	hostfile := filepath.Join(j.Dir, name)
	// Through userfile: a link or file planted at this predictable name is
	// replaced, never written through.
	if err := userfile.WriteIn(j.Dir, name, hf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("hostfile: %w", err)
	}
	args := []string{"--tag-output", "--hostfile", hostfile, "-np", strconv.Itoa(len(j.Nodes) * j.RanksPerNode), "-npernode", strconv.Itoa(j.RanksPerNode),
		"--mca", "plm_rsh_agent", strings.Join(m.agent, " ")}
	if os.Geteuid() == 0 {
		args = append([]string{"--allow-run-as-root"}, args...)
	}
	args = append(args, m.Extra...)
	for _, v := range append(j.Env, EnvRun+"="+j.Run) {
		args = append(args, "-x", v)
	}
	args = append(args, "timeout", "-k", "3", strconv.Itoa(deadlineSeconds(j.Deadline)))
	args = append(args, j.Argv...)
	// its own process group, so a stop ends every local piece of the
	// launch (mpirun, its ssh sessions); mpirun forwards TERM to the
	// ranks, and what has not ended killAfter later is killed, so a stop
	// (a timeout or a user's ^C) ends within a second; the ranks have
	// their own deadline on the node.
	cmd := procgroup.Command(ctx, killAfter, 5*time.Second, "mpirun", args...)
	return cmd, nil
}

// killAfter is how long a cancelled launch has after SIGTERM.
const killAfter = 250 * time.Millisecond

// Reap implements JobLauncher over the ssh control connections.
func (m *MPIRun) Reap(ctx context.Context, n cluster.Node, run string) ([]string, error) {
	return m.SSH.Reap(ctx, n, run)
}

// Close implements JobLauncher: it ends the control connections.
func (m *MPIRun) Close() error { return m.SSH.Close() }

// Package launch starts the processes of a run (bench's ends, one at a
// time; nccl run's ranks, all at once through a JobLauncher) on the nodes
// and owns them: every process carries the run's identity (RDMALAB_RUN in its
// environment), has a deadline on the node itself, is killed with its whole
// process group on timeout, failure or interrupt, and whatever of the run
// is still alive on a node can be found and reaped. Local and SSH launch for
// real; Fake records calls for unit tests.
package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

// EnvRun is the environment variable that carries a run's identity on
// the nodes; Leftovers finds processes by it.
const EnvRun = "RDMALAB_RUN"

// NewRunID is a short identity for one run, unique enough to find its
// processes on the nodes.
func NewRunID() string {
	return fmt.Sprintf("rdmalab-%s-%04x", time.Now().UTC().Format("20060102T150405"), rand.IntN(1<<16))
}

// Spec is one process to start.
type Spec struct {
	Node cluster.Node
	Argv []string
	// Run is the run's identity: every process of the run carries it.
	Run string
	// Deadline bounds the process on the node itself (timeout -k), a
	// backstop should the kill from here never arrive.
	Deadline time.Duration
	// Stdin, when set, is the process's standard input (the bench agent
	// reads its instructions there); nil is the null device. An *os.File
	// is handed to the process as is, no goroutine copies it.
	Stdin io.Reader
}

// Launcher starts and reaps processes on nodes.
type Launcher interface {
	// Start starts s.Argv on s.Node.
	Start(ctx context.Context, s Spec) (Process, error)
	// Probe checks that n is reachable (and its host key known) and that
	// every path in need exists there (a bare name is looked up in PATH).
	Probe(ctx context.Context, n cluster.Node, need []string) error
	// Reap kills whatever of run still runs on n and returns what it
	// found (pid and command), so a caller can say something was left.
	Reap(ctx context.Context, n cluster.Node, run string) ([]string, error)
	// Close ends the launcher's connections.
	Close() error
}

// Process is one started process.
type Process interface {
	// Stdout is the process's output; read it to EOF before Wait.
	Stdout() io.Reader
	// Wait waits for the end; the error carries the tail of stderr.
	Wait() error
	// Kill ends the process and its whole group on the node.
	Kill()
}

// UnreachableError means the node could not be reached at all (ssh
// exited 255: connection refused or timed out, host key rejected), as
// opposed to a command that ran and failed.
type UnreachableError struct {
	Node   string
	Reason string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s unreachable: %s", e.Node, e.Reason)
}

// MissingError means the node answered but lacks something a test needs.
type MissingError struct {
	Node string
	What []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s lacks %s", e.Node, strings.Join(e.What, ", "))
}

// IsUnreachable reports whether err says a node could not be reached.
func IsUnreachable(err error) (*UnreachableError, bool) {
	var u *UnreachableError
	ok := errors.As(err, &u)
	return u, ok
}

// syncBuffer is a bytes.Buffer written by one goroutine and read by
// another (the stderr of a process while it runs).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 1<<20 { // stderr is for error messages: keep the first MiB
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Tail is the last non-empty line of text, for error messages.
func Tail(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
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

// deadlineSeconds is the node-side bound, whole seconds, at least 1.
func deadlineSeconds(d time.Duration) int { return max(1, int(d.Seconds()+0.999)) }

package launch

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

// Fake is a recording launcher for unit tests: no processes, no root. Run
// decides what each started command does.
type Fake struct {
	// Run answers one Start: the output the process prints, the error it
	// ends with, or hang until killed.
	Run func(node string, argv []string) FakeRun
	// Unready maps node names to the error Probe returns for them.
	Unready map[string]error
	// NoRecord keeps no Calls: a simulated fleet of thousands of nodes
	// starts millions of fake processes.
	NoRecord bool
	// Session, when set, answers a Start that has a Stdin (the bench
	// agent): it reads the instructions and writes the answers until
	// stdin ends or ctx does (Kill); its error is Wait's.
	Session func(ctx context.Context, node string, argv []string, stdin io.Reader, stdout io.Writer) error

	mu      sync.Mutex
	calls   []Call
	running map[*fakeProc]bool
}

// FakeRun is what one fake process does.
type FakeRun struct {
	Stdout string
	Err    error
	Hang   bool
}

// Call is one recorded Start.
type Call struct {
	Node string
	Argv []string
}

// Calls returns every Start so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Start implements Launcher.
func (f *Fake) Start(ctx context.Context, sp Spec) (Process, error) {
	var r FakeRun
	if sp.Stdin == nil || f.Session == nil {
		r = f.Run(sp.Node.Name, sp.Argv)
	}
	p := &fakeProc{f: f, run: r, killed: make(chan struct{})}
	if sp.Stdin != nil && f.Session != nil {
		pr, pw := io.Pipe()
		p.out, p.pw = pr, pw
		p.session = make(chan error, 1)
		sctx, cancel := context.WithCancel(context.Background())
		go func() { <-p.killed; cancel() }()
		go func() {
			err := f.Session(sctx, sp.Node.Name, sp.Argv, sp.Stdin, pw)
			if sctx.Err() != nil {
				err = errors.New("killed")
			}
			pw.Close()
			p.session <- err
		}()
	} else if !r.Hang {
		p.out = strings.NewReader(r.Stdout)
	} else {
		pr, pw := io.Pipe()
		p.out, p.pw = pr, pw
		go func() { // print what it has, then hang until killed
			pw.Write([]byte(r.Stdout))
			<-p.killed
			pw.CloseWithError(io.EOF)
		}()
	}
	f.mu.Lock()
	if !f.NoRecord {
		f.calls = append(f.calls, Call{sp.Node.Name, slices.Clone(sp.Argv)})
	}
	if f.running == nil {
		f.running = map[*fakeProc]bool{}
	}
	f.running[p] = true
	f.mu.Unlock()
	p.stop = context.AfterFunc(ctx, p.Kill)
	return p, nil
}

type fakeProc struct {
	f      *Fake
	run    FakeRun
	out    io.Reader
	pw     *io.PipeWriter
	killed chan struct{}
	once   sync.Once
	stop   func() bool
	// session ends with the Session's error (a Start with a Stdin)
	session chan error
}

func (p *fakeProc) Stdout() io.Reader { return p.out }

func (p *fakeProc) Wait() error {
	if p.session != nil {
		err := <-p.session
		p.stop()
		p.f.mu.Lock()
		delete(p.f.running, p)
		p.f.mu.Unlock()
		return err
	}
	if p.run.Hang {
		<-p.killed
	}
	p.stop()
	p.f.mu.Lock()
	delete(p.f.running, p)
	p.f.mu.Unlock()
	if p.run.Hang {
		return errors.New("killed")
	}
	return p.run.Err
}

func (p *fakeProc) Kill() { p.once.Do(func() { close(p.killed) }) }

// Probe implements Launcher.
func (f *Fake) Probe(_ context.Context, n cluster.Node, _ []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Unready[n.Name]
}

// SetUnready makes Probe fail for node from now on.
func (f *Fake) SetUnready(node string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Unready == nil {
		f.Unready = map[string]error{}
	}
	f.Unready[node] = err
}

// Reap implements Launcher: fake processes not yet waited for are left over.
func (f *Fake) Reap(context.Context, cluster.Node, string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.running {
		out = append(out, "fake")
		p.Kill()
	}
	return out, nil
}

// Close implements Launcher.
func (f *Fake) Close() error { return nil }

package benchrun

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// The bench agent: with Runner.Agent, a round starts ONE session per node
// (`rdmalab bench agent session`) instead of a server and a client
// process per sample. The orchestrator writes the node's steps to its
// stdin, one JSON line each, as the pair's samples come; the agent runs
// them in order and answers on stdout, one JSON line per event. Each step
// is bounded on the node by its own timeout; stdin's end ends the agent.

// AgentStep is one instruction to an agent.
type AgentStep struct {
	Seq int `json:"seq"`
	// Op is serve (accept one client on Addr and answer its test) or
	// client (run Test against the server at Addr).
	Op      string  `json:"op"`
	Addr    string  `json:"addr"`
	Test    string  `json:"test,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// TimeoutS bounds the step on the node, seconds.
	TimeoutS float64 `json:"timeout_s"`
}

// AgentLine is one answer of an agent: a serve step says listening, then
// done; a client step says result; any step may say error instead.
type AgentLine struct {
	Seq    int        `json:"seq"`
	Event  string     `json:"event"`
	Addr   string     `json:"addr,omitempty"`
	Result *TCPResult `json:"result,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// agentOps are what an agent's steps do: the tcp engine's ends, or a
// test's stand-ins.
type agentOps struct {
	serve  func(ctx context.Context, addr string, listening func(net.Addr)) error
	client func(ctx context.Context, addr, test string, seconds float64) (*TCPResult, error)
}

var tcpOps = agentOps{
	serve: serveTCP,
	client: func(ctx context.Context, addr, test string, seconds float64) (*TCPResult, error) {
		return RunTCPClient(ctx, addr, test, seconds, 10000)
	},
}

// RunAgent is the agent on a node: it runs the steps read from in, in
// order, and answers on out, until in ends. A step it cannot read ends it
// with an error (after saying so on out): the orchestrator and the agent
// no longer agree on what runs.
func RunAgent(ctx context.Context, in io.Reader, out io.Writer) error {
	return runAgent(ctx, in, out, tcpOps)
}

func runAgent(ctx context.Context, in io.Reader, out io.Writer, ops agentOps) error {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	say := func(l AgentLine) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(l)
	}
	// stdin is read while a step runs: a cancel of the running step (its
	// peer failed) must reach it.
	type item struct {
		st  AgentStep
		err error
	}
	items := make(chan item)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(items)
		put := func(it item) bool {
			select {
			case items <- it:
				return it.err == nil
			case <-quit:
				return false
			}
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			st, err := parseAgentStep(sc.Bytes())
			if !put(item{st, err}) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			put(item{err: fmt.Errorf("read the steps: %w", err)})
		}
	}()
	var queue []AgentStep
	running, cur := false, 0
	cancel := func() {}
	finished := make(chan struct{}, 1)
	run := func(st AgentStep) {
		sctx, stop := context.WithTimeout(ctx, time.Duration(st.TimeoutS*float64(time.Second)))
		running, cur, cancel = true, st.Seq, stop
		go func() {
			defer func() { finished <- struct{}{} }()
			defer stop()
			var err error
			switch st.Op {
			case "serve":
				err = ops.serve(sctx, st.Addr, func(a net.Addr) { say(AgentLine{Seq: st.Seq, Event: "listening", Addr: a.String()}) })
				if err == nil {
					say(AgentLine{Seq: st.Seq, Event: "done"})
				}
			case "client":
				var res *TCPResult
				if res, err = ops.client(sctx, st.Addr, st.Test, st.Seconds); err == nil {
					say(AgentLine{Seq: st.Seq, Event: "result", Result: res})
				}
			}
			if err != nil {
				if sctx.Err() == context.DeadlineExceeded {
					err = fmt.Errorf("%s %s: gave up after %gs: %w", st.Op, st.Addr, st.TimeoutS, err)
				}
				say(AgentLine{Seq: st.Seq, Event: "error", Error: err.Error()})
			}
		}()
	}
	wait := func() {
		if running {
			cancel()
			<-finished
			running = false
		}
	}
	for items != nil || len(queue) > 0 || running {
		if !running && len(queue) > 0 {
			run(queue[0])
			queue = queue[1:]
		}
		select {
		case it, ok := <-items:
			switch {
			case !ok:
				items = nil
			case it.err != nil:
				say(AgentLine{Seq: it.st.Seq, Event: "error", Error: it.err.Error()})
				wait()
				return it.err
			case it.st.Op == "cancel":
				if running && it.st.Seq == cur {
					cancel()
				}
				queue = slices.DeleteFunc(queue, func(q AgentStep) bool { return q.Seq == it.st.Seq })
			default:
				queue = append(queue, it.st)
			}
		case <-finished:
			running = false
		case <-ctx.Done():
			wait()
			return ctx.Err()
		}
	}
	return nil
}

// parseAgentStep reads and checks one step: nothing but a known op with
// an address, a test and a positive bound runs.
func parseAgentStep(b []byte) (AgentStep, error) {
	var st AgentStep
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&st); err != nil {
		return st, fmt.Errorf("unreadable step %q: %v", clip(b), err)
	}
	if st.Op == "cancel" {
		return st, nil // the step Seq, running or queued, if any
	}
	_, _, aerr := net.SplitHostPort(st.Addr)
	switch {
	case st.Op != "serve" && st.Op != "client":
		return st, fmt.Errorf("step %d: unknown op %q (want serve, client or cancel)", st.Seq, st.Op)
	case aerr != nil:
		return st, fmt.Errorf("step %d: address %q: %v", st.Seq, st.Addr, aerr)
	case st.TimeoutS <= 0:
		return st, fmt.Errorf("step %d: timeout_s %g: must be positive", st.Seq, st.TimeoutS)
	case st.Op == "client" && st.Test != "bw" && st.Test != "lat":
		return st, fmt.Errorf("step %d: test %q (want bw or lat)", st.Seq, st.Test)
	}
	return st, nil
}

// ParseAgentLine reads one line of node's agent; an error names the node
// and quotes the line (escaped, clipped): a node's output is data.
func ParseAgentLine(node string, b []byte) (AgentLine, error) {
	var l AgentLine
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("agent on %s: unreadable answer %q: %v", node, clip(b), err)
	}
	switch l.Event {
	case "listening", "done":
	case "result":
		if l.Result == nil {
			return l, fmt.Errorf("agent on %s: step %d: a result without a measurement", node, l.Seq)
		}
	case "error":
		if l.Error == "" {
			return l, fmt.Errorf("agent on %s: step %d: an error without a reason", node, l.Seq)
		}
	default:
		return l, fmt.Errorf("agent on %s: unknown event %q in %q", node, l.Event, clip(b))
	}
	return l, nil
}

func clip(b []byte) string {
	if len(b) > 120 {
		b = b[:120]
	}
	return userfile.Escape(string(b))
}

// probeAgents starts the agent on every node not already unready with
// nothing to do: this rdmalab reads the end of its instructions and exits
// 0; an rdmalab without `bench agent session` (an older build on the
// nodes) fails, and its node is named unready before anything is
// measured, instead of every direction failing with its usage text as if
// the link were at fault.
func (r *Runner) probeAgents(ctx context.Context, e *tcpEngine, unready map[string]string, timeout time.Duration) map[string]string {
	bad := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, n := range r.Cluster.Nodes {
		if _, out := unready[n.Name]; out {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := runEmpty(pctx, r.Launcher, launch.Spec{Node: n, Argv: e.Agent(), Run: r.RunID, Deadline: timeout, Stdin: strings.NewReader("")})
			if err == nil || ctx.Err() != nil {
				return
			}
			mu.Lock()
			bad[n.Name] = fmt.Sprintf("its rdmalab (%s) did not run 'bench agent session' (an older rdmalab there?); install this rdmalab on the node, or run with --agent=false (%v)", e.bin, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return bad
}

// runEmpty runs sp to its end within ctx, its output discarded.
func runEmpty(ctx context.Context, l launch.Launcher, sp launch.Spec) error {
	p, err := l.Start(ctx, sp)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, _ = io.Copy(io.Discard, p.Stdout())
		done <- p.Wait()
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		p.Kill()
		if err = <-done; err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// agentSession is one node's agent for a round, seen from the
// orchestrator.
type agentSession struct {
	node  cluster.Node
	proc  launch.Process
	in    *os.File // the write end of the agent's stdin
	inR   *os.File
	seq   int
	lines chan agentMsg
	quit  chan struct{}
	done  chan struct{}
	end   error // why the answers ended (after done)
}

type agentMsg struct {
	line AgentLine
	err  error
}

// startAgent starts node's agent; a session that could not start answers
// every step with why.
func (r *Runner) startAgent(ctx context.Context, n cluster.Node, steps int) *agentSession {
	s := &agentSession{node: n, lines: make(chan agentMsg, 8), quit: make(chan struct{}), done: make(chan struct{})}
	fail := func(err error) *agentSession {
		s.end = err
		close(s.done)
		close(s.lines)
		return s
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	s.in, s.inR = pw, pr
	// Bounded on the node: every step's own bound, and some.
	deadline := time.Duration(steps)*(r.Timeout+5*time.Second) + 30*time.Second
	p, err := r.Launcher.Start(ctx, launch.Spec{Node: n, Argv: r.Engine.(*tcpEngine).Agent(), Run: r.RunID, Deadline: deadline, Stdin: pr})
	if err != nil {
		return fail(err)
	}
	s.proc = p
	go s.read()
	return s
}

// read turns the agent's output into messages; the last says why it ended.
func (s *agentSession) read() {
	defer close(s.lines)
	send := func(m agentMsg) bool {
		select {
		case s.lines <- m:
			return true
		case <-s.quit:
			return false
		}
	}
	sc := bufio.NewScanner(s.proc.Stdout())
	sc.Buffer(make([]byte, 4096), 64<<10)
	// A garbled answer breaks the session: the orchestrator and the agent
	// no longer agree on what runs. The agent is killed and every later
	// step of the session fails with that answer.
	var garbled error
	for sc.Scan() {
		if garbled != nil || len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue // drained, so the agent can end
		}
		l, err := ParseAgentLine(s.node.Name, sc.Bytes())
		if err != nil {
			// not sent: the end of the answers says it, so a step
			// waiting for the end (a broken pipe) is not waiting on us
			garbled = err
			s.proc.Kill()
			continue
		}
		if !send(agentMsg{line: l}) {
			garbled = errors.New("no one reads the answers any more")
		}
	}
	if err := sc.Err(); err != nil {
		if garbled == nil {
			garbled = fmt.Errorf("agent on %s: unreadable answer: %v", s.node.Name, err)
			s.proc.Kill()
		}
		_, _ = io.Copy(io.Discard, s.proc.Stdout())
	}
	werr := s.proc.Wait()
	switch {
	case garbled != nil:
		werr = garbled
	case werr == nil:
		werr = fmt.Errorf("agent on %s ended", s.node.Name)
	}
	s.end = werr
	close(s.done)
	send(agentMsg{err: werr})
}

// step sends the next step and returns its number.
func (s *agentSession) step(st AgentStep) (int, error) {
	if s.in == nil {
		return 0, s.end
	}
	s.seq++
	st.Seq = s.seq
	b, _ := json.Marshal(st)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		// The agent is gone (or going): why it ended says more than the
		// broken pipe.
		select {
		case <-s.done:
			return 0, s.end
		case <-time.After(5 * time.Second):
		}
		return 0, fmt.Errorf("send a step to the agent on %s: %w", s.node.Name, err)
	}
	return s.seq, nil
}

// cancel stops step seq on the agent if it still runs (its answer, an
// error, is skipped by next).
func (s *agentSession) cancel(seq int) {
	if s.in != nil {
		b, _ := json.Marshal(AgentStep{Seq: seq, Op: "cancel"})
		_, _ = s.in.Write(append(b, '\n'))
	}
}

// next is the next answer to step seq, or why there is none.
func (s *agentSession) next(ctx context.Context, seq int) (AgentLine, error) {
	select {
	case m, ok := <-s.lines:
		switch {
		case !ok:
			return AgentLine{}, s.end
		case m.err != nil:
			return AgentLine{}, m.err
		case m.line.Seq < seq:
			return s.next(ctx, seq) // the answer of a step given up on
		case m.line.Seq != seq:
			return AgentLine{}, fmt.Errorf("agent on %s: answered step %d, step %d was asked", s.node.Name, m.line.Seq, seq)
		}
		return m.line, nil
	case <-ctx.Done():
		return AgentLine{}, ctx.Err()
	}
}

func (s *agentSession) kill() {
	if s.proc != nil {
		s.proc.Kill()
	}
}

// close ends the agent: its stdin first (it ends by itself), killed if it
// does not within a few seconds.
func (s *agentSession) close() {
	if s.in != nil {
		s.in.Close()
	}
	close(s.quit) // no one reads the answers any more
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.kill()
		<-s.done
	}
	if s.inR != nil {
		s.inR.Close()
	}
}

// agentBackstop is how long after the orchestrator's timeout an agent
// gives up a step by itself.
const agentBackstop = 5 * time.Second

// pairAgents are the agents of a pair's two nodes for a round.
type pairAgents struct{ a, b *agentSession }

func (r *Runner) startPair(ctx context.Context, a, b cluster.Node, directions int) *pairAgents {
	steps := directions * max(r.Samples, 1)
	return &pairAgents{a: r.startAgent(ctx, a, steps), b: r.startAgent(ctx, b, steps)}
}

func (p *pairAgents) of(n cluster.Node) *agentSession {
	if p.a.node.Name == n.Name {
		return p.a
	}
	return p.b
}

func (p *pairAgents) kill() { p.a.kill(); p.b.kill() }

func (p *pairAgents) close() {
	if p == nil {
		return
	}
	done := make(chan struct{})
	go func() { p.a.close(); close(done) }()
	p.b.close()
	<-done
}

// runOnceAgent is runOnce through the pair's agents: the server's agent
// listens, then the client's runs the test; on timeout or interrupt both
// agents are killed (the pair is done: a timeout ends it).
func (r *Runner) runOnceAgent(ctx context.Context, pa *pairAgents, from, to cluster.Node) (Measure, *runErr) {
	server, client := to, from // the tcp engine's server receives
	srv, cli := pa.of(server), pa.of(client)
	addr := net.JoinHostPort(server.Data, fmt.Sprint(r.freshPort()))
	tctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	deadline, _ := tctx.Deadline()
	// past the deadline is a timeout even when an answer reached us before
	// the timer marked tctx done (a loaded orchestrator)
	expired := func() bool { return tctx.Err() != nil || !time.Now().Before(deadline) }
	fail := func(err error) *runErr {
		// one reading: a timeout reported is always a pair killed
		late := expired()
		if late {
			pa.kill()
		}
		if late && ctx.Err() == nil {
			return &runErr{msg: fmt.Sprintf("timed out after %s; both ends killed", r.Timeout), timedOut: true}
		}
		if u, ok := launch.IsUnreachable(err); ok {
			return &runErr{msg: u.Error(), node: u.Node}
		}
		if ctx.Err() != nil {
			return &runErr{msg: "interrupted"}
		}
		return &runErr{msg: err.Error()}
	}
	// The agent's own bound only keeps a node from running a step forever
	// when the orchestrator is gone. It falls after the orchestrator's:
	// were they equal, a hanging client's agent could answer "gave up"
	// first, recorded as an error rather than a timeout, and the node
	// that hangs would never be taken out (seen once under load).
	bound := (r.Timeout + agentBackstop).Seconds()
	seq, err := srv.step(AgentStep{Op: "serve", Addr: addr, TimeoutS: bound})
	if err != nil {
		return Measure{}, fail(err)
	}
	l, err := srv.next(tctx, seq)
	if err != nil {
		return Measure{}, fail(err)
	}
	if l.Event != "listening" {
		return Measure{}, fail(fmt.Errorf("server on %s did not start: %s", server.Name, l.Error))
	}
	e := r.Engine.(*tcpEngine)
	// The server waits for its client: a client that failed takes it
	// down, as the kill of its process did.
	cseq, err := cli.step(AgentStep{Op: "client", Addr: addr, Test: e.test, Seconds: float64(e.seconds), TimeoutS: bound})
	if err != nil {
		srv.cancel(seq)
		return Measure{}, fail(err)
	}
	res, err := cli.next(tctx, cseq)
	if err != nil {
		srv.cancel(seq)
		return Measure{}, fail(err)
	}
	if res.Event != "result" {
		srv.cancel(seq)
		return Measure{}, fail(fmt.Errorf("on %s: %s", client.Name, cmp.Or(res.Error, "answered "+res.Event)))
	}
	// The server ends once its client is done; as with a process per
	// sample, what it says then does not change the measurement.
	if _, err := srv.next(tctx, seq); err != nil && expired() {
		pa.kill()
		if ctx.Err() == nil {
			return Measure{}, &runErr{msg: fmt.Sprintf("timed out after %s; both ends killed", r.Timeout), timedOut: true}
		}
		return Measure{}, &runErr{msg: "interrupted"}
	}
	t := res.Result
	return Measure{Gbps: t.Gbps, P50Us: t.P50Us, P99Us: t.P99Us, P999Us: t.P999Us}, nil
}

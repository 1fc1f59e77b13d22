package benchrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
)

// The agent runs its steps in order and answers each: a serve step says
// listening then done, a client step its result, a failing step an error
// (and the agent goes on); a step it cannot read ends it with an error.
func TestAgentProtocol(t *testing.T) {
	ops := agentOps{
		serve: func(_ context.Context, addr string, listening func(net.Addr)) error {
			if strings.HasSuffix(addr, ":9") {
				return errors.New("listen 10.0.0.1:9: address already in use")
			}
			listening(fakeAddr(addr))
			return nil
		},
		client: func(_ context.Context, addr, test string, seconds float64) (*TCPResult, error) {
			return &TCPResult{Mode: test, Gbps: 42, Seconds: seconds}, nil
		},
	}
	in := strings.Join([]string{
		`{"seq":1,"op":"serve","addr":"10.0.0.1:7","timeout_s":5}`,
		`{"seq":2,"op":"client","addr":"10.0.0.2:8","test":"bw","seconds":1,"timeout_s":5}`,
		`{"seq":3,"op":"serve","addr":"10.0.0.1:9","timeout_s":5}`,
		`{"seq":4,"op":"client","addr":"10.0.0.2:8","test":"bw","seconds":1,"timeout_s":5}`,
	}, "\n") + "\n"
	var out strings.Builder
	if err := runAgent(context.Background(), strings.NewReader(in), &out, ops); err != nil {
		t.Fatal(err)
	}
	var got []string
	for l := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		a, err := ParseAgentLine("n1", []byte(l))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.Event)
		if a.Event == "result" && (a.Seq != 2 && a.Seq != 4 || a.Result.Gbps != 42) {
			t.Errorf("%+v", a)
		}
		if a.Event == "error" && (a.Seq != 3 || !strings.Contains(a.Error, "address already in use")) {
			t.Errorf("%+v", a)
		}
	}
	if want := []string{"listening", "done", "result", "error", "result"}; !slices.Equal(got, want) {
		t.Errorf("answers %v, want %v", got, want)
	}

	// Steps it must not run: each ends the agent with the reason.
	for _, c := range []struct{ line, want string }{
		{`rm -rf /`, "unreadable step"},
		{`{"seq":1,"op":"exec","addr":"10.0.0.1:7","timeout_s":5}`, `unknown op "exec"`},
		{`{"seq":1,"op":"serve","addr":"10.0.0.1","timeout_s":5}`, "address"},
		{`{"seq":1,"op":"serve","addr":"10.0.0.1:7"}`, "timeout_s 0"},
		{`{"seq":1,"op":"client","addr":"10.0.0.1:7","test":"sh","timeout_s":5}`, `test "sh"`},
		{`{"seq":1,"op":"serve","addr":"10.0.0.1:7","timeout_s":5,"argv":["sh"]}`, "unknown field"},
	} {
		var out strings.Builder
		err := runAgent(context.Background(), strings.NewReader(c.line+"\n"), &out, ops)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
		if l, perr := ParseAgentLine("n1", []byte(strings.TrimSpace(out.String()))); perr != nil || l.Event != "error" {
			t.Errorf("%s: the agent did not say why: %q", c.line, out.String())
		}
	}
}

// A garbled or hostile answer is an error naming the node, its text
// escaped (a node's output never reaches a terminal raw).
func TestParseAgentLineNamesTheNode(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"Welcome to node7!", "agent on n7: unreadable answer"},
		{`{"seq":1,"event":"result"}`, "agent on n7: step 1: a result without a measurement"},
		{`{"seq":1,"event":"error"}`, "agent on n7: step 1: an error without a reason"},
		{`{"seq":1,"event":"\u001b[2Jpwned"}`, "agent on n7: unknown event"},
		{"\x1b[2J{\"seq\":1}", "agent on n7: unreadable answer"},
	} {
		_, err := ParseAgentLine("n7", []byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.line, err, c.want)
		}
		if err != nil && strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("%q: raw escape in %q", c.line, err)
		}
	}
}

func runFakeAgent(t *testing.T, c *cluster.Cluster, l launch.Launcher, retest bool) ([]bench.Record, *Runner) {
	t.Helper()
	eng, _ := NewEngine("tcp", "bw", 1, time.Second, "rdmalab", nil)
	r := &Runner{Cluster: c, Launcher: l, Engine: eng, Plan: bench.CirclePlan(len(c.Nodes)), Samples: 2, Timeout: 300 * time.Millisecond, RunID: "t", Retest: retest, Agent: true}
	recs, err := r.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return recs, r
}

// With Agent, a round starts one session per node of each pair (both
// directions × samples inside it), never a process per sample, and the
// records and the judgement are those of the process-per-sample path.
func TestRunnerAgentOneSessionPerNodePerRound(t *testing.T) {
	c := testCluster(t, 8, "")
	rate := func(from, to string) (float64, error) {
		switch {
		case from == "n1":
			return 9, nil
		case to == "n8":
			return 10, nil
		}
		return 95, nil
	}
	f := fakeTCP(c, rate)
	recs, r := runFakeAgent(t, c, f, false)
	calls := f.Calls()
	for _, call := range calls {
		if !slices.Equal(call.Argv, []string{"rdmalab", "bench", "agent", "session"}) {
			t.Fatalf("started %v, want only agent sessions", call.Argv)
		}
	}
	// 7 rounds × 8 nodes; a process per sample would be 7 × 4 pairs × 2
	// directions × 2 samples × 2 ends = 224.
	if len(calls) != 56 {
		t.Errorf("%d sessions, want 7 rounds × 8 nodes = 56", len(calls))
	}
	perProcess := fakeTCP(c, rate)
	precs, pr := runFake(t, c, perProcess, nil, false)
	if len(perProcess.Calls()) != 224 {
		t.Errorf("the process-per-sample path started %d, want 224", len(perProcess.Calls()))
	}
	t.Logf("8 nodes, 2 samples, circle: %d launches with agents, %d with a process per sample", len(calls), len(perProcess.Calls()))
	if len(recs) != 56 || len(precs) != 56 {
		t.Errorf("%d records with agents, %d without; want 56", len(recs), len(precs))
	}
	for _, rec := range recs {
		if rec.Failed() || len(rec.SamplesGbps) != 2 {
			t.Errorf("%+v", rec)
		}
	}
	rep := bench.Analyze(c, "tcp", "bw", false, recs, r.Out(), r.Leftovers())
	prep := bench.Analyze(c, "tcp", "bw", false, precs, pr.Out(), pr.Leftovers())
	if got, want := hostsOf(findingsOf(rep, check.Fail)), hostsOf(findingsOf(prep, check.Fail)); !slices.Equal(got, want) || !slices.Equal(got, []string{"n1:bench.node.send", "n8:bench.node.receive"}) {
		t.Errorf("with agents %v, without %v", got, want)
	}
	if len(rep.Leftovers) != 0 {
		t.Errorf("leftovers %v", rep.Leftovers)
	}
}

// An agent answering garbage fails the directions through its node with
// an error naming it; an agent that hangs times out like a process does,
// and the hanging node is taken out after two partners.
func TestRunnerAgentGarbledAndHanging(t *testing.T) {
	c := testCluster(t, 6, "")
	f := fakeTCP(c, func(from, to string) (float64, error) {
		if from == "n5" || to == "n5" {
			return 0, errors.New("hang")
		}
		return 95, nil
	})
	run := f.Session
	f.Session = func(ctx context.Context, node string, argv []string, stdin io.Reader, stdout io.Writer) error {
		if node == "n2" {
			stdout.Write([]byte("Last login: Thu Nov 26 from 10.0.0.1\n"))
			go func() { <-ctx.Done(); closeReader(stdin) }() // killed
			io.Copy(io.Discard, stdin)
			return nil
		}
		return run(ctx, node, argv, stdin, stdout)
	}
	recs, r := runFakeAgent(t, c, f, false)
	garbled, timeouts := 0, 0
	for _, rec := range recs {
		if rec.From == "n2" || rec.To == "n2" {
			if rec.Error != "" && strings.Contains(rec.Error, "agent on n2: unreadable answer") {
				garbled++
			} else if rec.To != "n5" && rec.From != "n5" {
				t.Errorf("%s → %s: %q, want the garbled answer named", rec.From, rec.To, rec.Error)
			}
		}
		if rec.TimedOut {
			timeouts++
		}
	}
	if garbled == 0 {
		t.Error("no direction failed on n2's garbled answer")
	}
	if timeouts > 2 || !strings.Contains(r.Out()["n5"], "timed out with") {
		// every record, to tell how n5's directions ended (once seen in
		// a fresh root under load: no timeout, nobody out)
		var all strings.Builder
		for _, rec := range recs {
			fmt.Fprintf(&all, "  round %d %s → %s: timed out %v, error %q, not measured %q\n", rec.Round, rec.From, rec.To, rec.TimedOut, rec.Error, rec.NotMeasured)
		}
		t.Errorf("%d timeouts, out %v\n%s", timeouts, r.Out(), all.String())
	}
	b, _ := json.Marshal(r.Out())
	t.Logf("out: %s", b)
}

// An agent gives up a step by itself only after the orchestrator's own
// timeout: a hanging client is then always the orchestrator's timeout
// (which takes its node out), never the agent's "gave up" error.
func TestAgentBoundFallsAfterTheTimeout(t *testing.T) {
	c := testCluster(t, 4, "")
	f := fakeTCP(c, func(from, to string) (float64, error) { return 95, nil })
	var (
		mu    sync.Mutex
		steps []AgentStep
	)
	run := f.Session
	f.Session = func(ctx context.Context, node string, argv []string, stdin io.Reader, stdout io.Writer) error {
		pr, pw := io.Pipe()
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				var st AgentStep
				if json.Unmarshal(sc.Bytes(), &st) == nil {
					mu.Lock()
					steps = append(steps, st)
					mu.Unlock()
				}
			}
			io.Copy(io.Discard, pr)
		}()
		tee := struct {
			io.Reader
			io.Closer
		}{io.TeeReader(stdin, pw), closerFunc(func() error { closeReader(stdin); return pw.Close() })}
		defer pw.Close()
		return run(ctx, node, argv, tee, stdout)
	}
	_, r := runFakeAgent(t, c, f, false)
	mu.Lock()
	defer mu.Unlock()
	if len(steps) == 0 {
		t.Fatal("no agent step seen")
	}
	for _, st := range steps {
		if got := time.Duration(st.TimeoutS * float64(time.Second)); got <= r.Timeout {
			t.Errorf("%s step bounded at %s on the node, want later than the run's timeout, %s", st.Op, got, r.Timeout)
		}
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

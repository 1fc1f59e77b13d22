package benchrun

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/resultslog"
)

// DefaultWindow is how many pairs run at once at most: 1,024 ssh
// sessions (a server and a client each) and their control masters. A
// 2,048-node matching round is one wave; 20,000 nodes run in 10.
const DefaultWindow = 1024

// Runner measures the pairs of a cluster, both directions of each.
type Runner struct {
	Cluster  *cluster.Cluster
	Launcher launch.Launcher
	Engine   Engine
	// Plan gives the rounds of disjoint pairs, one at a time.
	Plan    bench.Plan
	Samples int
	// Timeout bounds one run of the test; both ends are killed after it.
	Timeout time.Duration
	// ProbeTimeout bounds a readiness probe of a node.
	ProbeTimeout time.Duration
	// RunID is this run's identity on the nodes.
	RunID string
	Log   *resultslog.Log[bench.Record]
	// KeepFailed keeps failed directions of a resumed log instead of
	// measuring them again.
	KeepFailed bool
	Retest     bool
	Progress   io.Writer
	// Window bounds the pairs measured at once (0: DefaultWindow): the
	// ssh sessions, control masters and processes of the orchestrator are
	// bounded by it whatever the cluster's size; a bigger round runs in
	// waves.
	Window int
	// Agent (tcp engine only) starts one agent session per node of a pair
	// per round, which runs all of the node's samples in the round,
	// instead of a server and a client process per sample.
	Agent bool

	mu        sync.Mutex
	records   []bench.Record
	out       map[string]string          // node → why it was taken out
	timeouts  map[string]map[string]bool // node → partners it timed out with
	leftovers []string
	first     int // records before it came from the log being resumed
	// skipped counts, per node taken out, the directions not measured
	// because of it: summarised per node, not one record per pair (at
	// thousands of nodes that would be millions of records).
	skipped map[string]int
	used    bench.RoundsUsed
	seq     atomic.Int64
	logErr  error
}

// Out reports the nodes taken out of the run and why.
func (r *Runner) Out() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.out)
}

// Leftovers lists processes of this run found alive after a round (and
// killed then).
func (r *Runner) Leftovers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.leftovers)
}

// Skipped is, per node taken out, how many directions were not measured
// because of it.
func (r *Runner) Skipped() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.skipped)
}

// RoundsUsed is how many rounds the run took so far.
func (r *Runner) RoundsUsed() bench.RoundsUsed {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.used
	if r.Plan != nil {
		u.Schedule = r.Plan.Name()
	}
	return u
}

func (r *Runner) count(retest bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if retest {
		r.used.Retest++
	} else {
		r.used.Measured++
	}
}

// TakeOut removes a node from the run before it starts (preflight).
func (r *Runner) TakeOut(node, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil {
		r.out = map[string]string{}
	}
	if _, ok := r.out[node]; !ok {
		r.out[node] = why
	}
}

func (r *Runner) progress(format string, a ...any) {
	if r.Progress != nil {
		r.mu.Lock()
		fmt.Fprintf(r.Progress, format, a...)
		r.mu.Unlock()
	}
}

// Run measures every pair the prior records do not already hold (failed
// ones again unless KeepFailed), round by round, then retests suspects.
// It returns prior and new records; a write error of the log stops it.
func (r *Runner) Run(ctx context.Context, prior []bench.Record) ([]bench.Record, error) {
	r.records = slices.Clone(prior)
	r.first = len(prior)
	final := map[string]bench.Record{}
	for _, p := range prior {
		if !p.Retest {
			final[p.DirKey()] = p
		}
	}
	nodes := r.Cluster.Nodes
	e := r.Engine
	needs := func(a, b cluster.Node) bool {
		for _, k := range []string{
			bench.Record{From: a.Name, To: b.Name, Engine: e.Name(), Test: e.Test()}.DirKey(),
			bench.Record{From: b.Name, To: a.Name, Engine: e.Name(), Test: e.Test()}.DirKey(),
		} {
			f, ok := final[k]
			if !ok || (f.Failed() && !r.KeepFailed) {
				return true
			}
		}
		return false
	}
	// One round at a time, its pairs in one reused slice.
	var round []bench.Pair
	for ri := range r.Plan.Len() {
		round = r.Plan.Round(ri, round[:0])
		todo := round[:0]
		for _, p := range round {
			if needs(nodes[p.A], nodes[p.B]) {
				todo = append(todo, p)
			}
		}
		r.progress("round %d/%d: %d pair(s)%s\n", ri+1, r.Plan.Len(), len(todo), skipped(len(round)-len(todo)))
		r.runRound(ctx, ri+1, todo)
		if err := r.logError(); err != nil {
			return r.records, err
		}
		if ctx.Err() != nil {
			return r.records, ctx.Err()
		}
	}
	if r.Retest {
		r.retest(ctx)
	}
	if err := r.logError(); err != nil {
		return r.records, err
	}
	return r.records, ctx.Err()
}

func skipped(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d already measured)", n)
}

func (r *Runner) logError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logErr
}

// record keeps one record and appends it to the log at once, so an
// interrupted run loses nothing it finished.
func (r *Runner) record(rec bench.Record) {
	r.mu.Lock()
	r.records = append(r.records, rec)
	var err error
	if r.Log != nil && r.logErr == nil {
		err = r.Log.Append(rec)
		r.logErr = err
	}
	r.mu.Unlock()
	what := fmt.Sprintf("%.2f Gb/s", rec.Gbps)
	switch {
	case rec.NotMeasured != "":
		what = "not measured: " + rec.NotMeasured
	case rec.Failed():
		what = "✗ " + rec.Error
	case r.Engine.Latency():
		what = fmt.Sprintf("p50 %.2f µs", rec.P50Us)
	}
	r.progress("  %s → %s: %s\n", rec.From, rec.To, what)
}

func (r *Runner) isOut(names ...string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if why, ok := r.out[n]; ok {
			return fmt.Sprintf("%s was taken out of the run: %s", n, why), true
		}
	}
	return "", false
}

// skipOut counts a pair's two directions against the first of its nodes
// that is out (no record: the node's own finding says it once), and
// reports whether one is.
func (r *Runner) skipOut(a, b string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range []string{a, b} {
		if _, ok := r.out[n]; ok {
			if r.skipped == nil {
				r.skipped = map[string]int{}
			}
			r.skipped[n] += 2
			return true
		}
	}
	return false
}

// runRound runs the pairs of a round at once, then reaps what is left of
// the run on their nodes and takes out nodes that stopped answering.
func (r *Runner) runRound(ctx context.Context, round int, pairs []bench.Pair) {
	var wg sync.WaitGroup
	nodes := r.Cluster.Nodes
	start := r.mark()
	if len(pairs) > 0 {
		r.count(false)
	}
	window := make(chan struct{}, cmp.Or(r.Window, DefaultWindow))
	ran := make([]int, 0, 2*len(pairs))
	for _, p := range pairs {
		a, b := nodes[p.A], nodes[p.B]
		if r.skipOut(a.Name, b.Name) {
			continue
		}
		ran = append(ran, p.A, p.B)
		window <- struct{}{}
		wg.Go(func() {
			defer func() { <-window }()
			// Which direction goes first alternates, so no node always
			// sends first.
			first, second := a, b
			if (p.A+p.B+round)%2 == 1 {
				first, second = b, a
			}
			pa := r.agents(ctx, a, b, 2)
			defer pa.close()
			rec := r.runDirection(ctx, round, first, second, "", pa)
			if ctx.Err() != nil && rec.Failed() {
				return // interrupted, not measured: --resume will
			}
			r.record(rec)
			if rec.TimedOut {
				r.record(r.skip(round, second, first, fmt.Sprintf("%s → %s timed out", first.Name, second.Name)))
				return
			}
			rec = r.runDirection(ctx, round, second, first, "", pa)
			if ctx.Err() != nil && rec.Failed() {
				return
			}
			r.record(rec)
		})
	}
	wg.Wait()
	r.afterRound(ctx, round, start, ran)
}

// mark is where the next record will go: afterRound reads the round's own
// records from there, never the whole run's again.
func (r *Runner) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

func (r *Runner) skip(round int, from, to cluster.Node, why string) bench.Record {
	return bench.Record{From: from.Name, To: to.Name, Engine: r.Engine.Name(), Test: r.Engine.Test(), Round: round, Started: time.Now().UTC(), NotMeasured: why}
}

// afterRound reaps the run's processes on the nodes that ran something in
// the round (ran: node indices), probes the nodes a failure touched and
// takes out those that do not answer or that timed out with two different
// partners (one timeout cannot tell which end hangs; two can). It reads
// the round's records only: those from start on.
func (r *Runner) afterRound(ctx context.Context, round, start int, ran []int) {
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx) // still reap what an interrupt left
	}
	r.mu.Lock()
	suspect := map[string]bool{}
	for _, rec := range r.records[max(start, r.first):] {
		if rec.Round == round && !rec.Retest && (rec.Error != "" || rec.TimedOut) {
			if rec.ErrorNode != "" {
				suspect[rec.ErrorNode] = true
			} else {
				suspect[rec.From], suspect[rec.To] = true, true
			}
		}
		if rec.Round == round && rec.TimedOut {
			for _, pair := range [][2]string{{rec.From, rec.To}, {rec.To, rec.From}} {
				if r.timeouts == nil {
					r.timeouts = map[string]map[string]bool{}
				}
				if r.timeouts[pair[0]] == nil {
					r.timeouts[pair[0]] = map[string]bool{}
				}
				r.timeouts[pair[0]][pair[1]] = true
			}
		}
	}
	var hung []string
	for n, partners := range r.timeouts {
		if len(partners) >= 2 {
			if _, out := r.out[n]; !out {
				hung = append(hung, n)
			}
		}
	}
	r.mu.Unlock()
	for _, n := range hung {
		var ps []string
		for p := range r.timeouts[n] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		r.TakeOut(n, fmt.Sprintf("timed out with %s; its data path hangs", strings.Join(ps, " and ")))
		r.progress("  taking %s out of later rounds: it timed out with %s\n", n, strings.Join(ps, " and "))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	seen := make(map[int]bool, len(ran))
	for _, i := range ran {
		if seen[i] {
			continue
		}
		seen[i] = true
		n := r.Cluster.Nodes[i]
		if _, out := r.isOut(n.Name); out && !suspect[n.Name] {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if suspect[n.Name] {
				pctx, cancel := context.WithTimeout(ctx, r.probeTimeout())
				err := r.Launcher.Probe(pctx, n, nil)
				cancel()
				if err != nil {
					r.TakeOut(n.Name, err.Error())
					r.progress("  taking %s out of later rounds: %v\n", n.Name, err)
					return
				}
			}
			rctx, cancel := context.WithTimeout(ctx, r.probeTimeout())
			left, err := r.Launcher.Reap(rctx, n, r.RunID)
			cancel()
			if err == nil && len(left) > 0 {
				r.mu.Lock()
				for _, l := range left {
					r.leftovers = append(r.leftovers, n.Name+": "+l)
				}
				r.mu.Unlock()
				r.progress("  %s: %d process(es) of this run were still alive after round %d; killed\n", n.Name, len(left), round)
			}
		})
	}
	wg.Wait()
}

func (r *Runner) probeTimeout() time.Duration {
	if r.ProbeTimeout > 0 {
		return r.ProbeTimeout
	}
	return 10 * time.Second
}

// runDirection measures from → to Samples times; the first failure ends it.
// pa, when not nil, are the pair's agents (Runner.Agent).
func (r *Runner) runDirection(ctx context.Context, round int, from, to cluster.Node, suspect string, pa *pairAgents) bench.Record {
	rec := bench.Record{From: from.Name, To: to.Name, Engine: r.Engine.Name(), Test: r.Engine.Test(), Round: round,
		Retest: suspect != "", Suspect: suspect, Started: time.Now().UTC()}
	var p99, p999 []float64
	for range max(r.Samples, 1) {
		var m Measure
		var err *runErr
		// A port some other program (or another run on the same nodes)
		// holds says nothing of the link: the sample is taken again on
		// the next fresh port, and only a third clash is an error, named
		// as what it is.
		for attempt := 1; ; attempt++ {
			if pa != nil {
				m, err = r.runOnceAgent(ctx, pa, from, to)
			} else {
				m, err = r.runOnce(ctx, from, to)
			}
			if err == nil || !strings.Contains(err.msg, "address already in use") || ctx.Err() != nil {
				break
			}
			if attempt == portAttempts {
				err.msg += fmt.Sprintf(" (%d fresh ports in a row were in use: another program or another rdmalab run listens on this run's ports, from launcher.base_port %d up; give this run a free range)", portAttempts, r.Cluster.Launcher.BasePort)
				break
			}
			r.progress("  %s → %s: port in use, taking the sample on the next port\n", from.Name, to.Name)
		}
		if err != nil {
			rec.Error = err.msg
			rec.ErrorNode = err.node
			rec.TimedOut = err.timedOut
			break
		}
		rec.SamplesGbps = append(rec.SamplesGbps, m.Gbps)
		rec.SamplesP50Us = append(rec.SamplesP50Us, m.P50Us)
		p99, p999 = append(p99, m.P99Us), append(p999, m.P999Us)
		rec.MTUBytes, rec.LinkType = m.MTUBytes, m.LinkType
		for _, w := range m.Warnings {
			if !slices.Contains(rec.Warnings, w) {
				rec.Warnings = append(rec.Warnings, w)
			}
		}
	}
	rec.Seconds = time.Since(rec.Started).Seconds()
	if rec.Error != "" {
		rec.SamplesGbps, rec.SamplesP50Us = nil, nil
		return rec
	}
	if r.Engine.Latency() {
		rec.SamplesGbps = nil
		rec.P50Us, rec.P99Us, rec.P999Us = bench.Median(rec.SamplesP50Us), bench.Median(p99), bench.Median(p999)
		if slices.ContainsFunc(p99, func(v float64) bool { return v > 0 }) {
			rec.SamplesP99Us, rec.SamplesP999Us = p99, p999
		}
	} else {
		rec.SamplesP50Us = nil
		rec.Gbps = bench.Median(rec.SamplesGbps)
	}
	return rec
}

// portAttempts is how many fresh ports a sample tries when the one it
// was given is in use.
const portAttempts = 3

type runErr struct {
	msg      string
	node     string
	timedOut bool
}

// freshPort gives every test of the run its own port (above the base,
// wrapping after 20,000), so a port a killed end still holds is never
// reused while the run lasts.
func (r *Runner) freshPort() int {
	return r.Cluster.Launcher.BasePort + 1 + int(r.seq.Add(1)%20000)
}

// agents starts the agents of a pair's two nodes for its directions, or
// is nil without Runner.Agent.
func (r *Runner) agents(ctx context.Context, a, b cluster.Node, directions int) *pairAgents {
	if _, tcp := r.Engine.(*tcpEngine); !r.Agent || !tcp {
		return nil // perftest: a process per end and sample, as it runs
	}
	return r.startPair(ctx, a, b, directions)
}

// runOnce starts the server, waits for it to listen, runs the client and
// reads its measurement. Both ends are killed (their whole process groups,
// on the nodes) on timeout, on failure and on interrupt.
func (r *Runner) runOnce(ctx context.Context, from, to cluster.Node) (Measure, *runErr) {
	e := r.Engine
	server, client := to, from
	if !e.ServerReceives() {
		server, client = from, to
	}
	port := r.freshPort()
	tctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	deadline := r.Timeout + 5*time.Second
	fail := func(err error) *runErr {
		// The timeout first: a killed end can look like a lost connection.
		if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return &runErr{msg: fmt.Sprintf("timed out after %s; both ends killed", r.Timeout), timedOut: true}
		}
		if u, ok := launch.IsUnreachable(err); ok {
			return &runErr{msg: u.Error(), node: u.Node}
		}
		if ctx.Err() != nil {
			return &runErr{msg: "interrupted"}
		}
		return &runErr{msg: fmt.Sprintf("%v", err)}
	}
	srv, err := r.Launcher.Start(tctx, launch.Spec{Node: server, Argv: e.Server(server, port), Run: r.RunID, Deadline: deadline})
	if err != nil {
		return Measure{}, fail(err)
	}
	defer srv.Kill()
	// The server's output is read by this one goroutine only; its text
	// comes back on srvText when the stream ends.
	ready := make(chan bool, 1)
	srvText := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(srv.Stdout())
		said := false
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), e.Ready()) {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
		srvText <- b.String()
	}()
	var ok bool
	select {
	case ok = <-ready:
	case <-tctx.Done():
	}
	if !ok {
		text := ""
		if tctx.Err() != nil {
			srv.Kill()
		}
		select {
		case text = <-srvText: // the stream ended: the server is ending by itself
		case <-time.After(5 * time.Second):
			srv.Kill()
		}
		werr := srv.Wait()
		if werr == nil || tctx.Err() != nil {
			if tctx.Err() != nil {
				return Measure{}, fail(tctx.Err())
			}
			werr = fmt.Errorf("server on %s ended before it listened: %s", server.Name, launch.Tail(text+" "))
		}
		if _, unreachable := launch.IsUnreachable(werr); !unreachable && tctx.Err() == nil {
			werr = fmt.Errorf("server on %s did not start: %v", server.Name, werr)
		}
		return Measure{}, fail(werr)
	}
	cli, err := r.Launcher.Start(tctx, launch.Spec{Node: client, Argv: e.Client(server, client, port), Run: r.RunID, Deadline: deadline})
	if err != nil {
		return Measure{}, fail(err)
	}
	defer cli.Kill()
	out, _ := io.ReadAll(cli.Stdout())
	if err := cli.Wait(); err != nil {
		return Measure{}, fail(err)
	}
	// The server ends once its client is done; it is not waited for longer
	// than the test's own deadline.
	select {
	case <-srvText:
	case <-tctx.Done():
		srv.Kill()
	}
	_ = srv.Wait()
	m, err := e.Parse(out)
	if err != nil {
		return Measure{}, &runErr{msg: err.Error()}
	}
	return m, nil
}

// retest measures once more each bad direction no suspect explains, and
// repeats each suspect's failing direction against two known-good
// partners (nodes whose both directions are healthy). The retests run in
// rounds of disjoint pairs, so a suspect's link carries one test at a
// time and a thousand nodes' suspects take two rounds, not two each.
func (r *Runner) retest(ctx context.Context) {
	rep := bench.Analyze(r.Cluster, r.Engine.Name(), r.Engine.Test(), r.Engine.Latency(), r.records, r.Out(), nil)
	index := r.Cluster.Index()
	// A bad direction no suspect explains is measured once more before it
	// fails: fine the second time, it was noise.
	suspect := map[string]bool{}
	for _, s := range rep.Suspects {
		suspect[s.Node+"|"+s.Side] = true
	}
	var lone []retestJob
	for _, d := range rep.Directions {
		if d.Bad && !suspect[d.From+"|"+bench.Send] && !suspect[d.To+"|"+bench.Receive] {
			lone = append(lone, retestJob{from: index[d.From], to: index[d.To]})
		}
	}
	if len(lone) > 0 {
		r.progress("retest %d direction(s) no node explains\n", len(lone))
		if !r.runRetests(ctx, lone) {
			return
		}
	}
	if len(rep.Suspects) == 0 {
		return
	}
	// Each suspect gets its own two partners where there are enough known-
	// good nodes (the best first), so the suspects retest side by side.
	var jobs []retestJob
	next := 0
	for _, s := range rep.Suspects {
		var partners []string
		for k := 0; k < len(rep.Good) && len(partners) < 2; k++ {
			g := rep.Good[(next+k)%len(rep.Good)]
			if g != s.Node && !slices.Contains(partners, g) {
				partners = append(partners, g)
			}
		}
		next += 2
		if len(partners) == 0 {
			r.progress("retest %s (%s): no node is healthy both ways to retest against\n", s.Node, s.Side)
			continue
		}
		r.progress("retest %s (%s) against known-good %s\n", s.Node, s.Side, strings.Join(partners, ", "))
		for _, p := range partners {
			from, to := index[s.Node], index[p]
			if s.Side == bench.Receive {
				from, to = to, from
			}
			jobs = append(jobs, retestJob{from: from, to: to, suspect: s.Node})
		}
	}
	r.runRetests(ctx, jobs)
}

// retestJob is one direction measured again, for a suspect or alone.
type retestJob struct {
	from, to int
	suspect  string
}

// runRetests packs the jobs into rounds where no node is in two (first
// fit, in order) and runs each round's directions at once. False when
// interrupted.
func (r *Runner) runRetests(ctx context.Context, jobs []retestJob) bool {
	var rounds [][]retestJob
	var busy []map[int]bool
	for _, j := range jobs {
		k := 0
		for k < len(rounds) && (busy[k][j.from] || busy[k][j.to]) {
			k++
		}
		if k == len(rounds) {
			rounds, busy = append(rounds, nil), append(busy, map[int]bool{})
		}
		rounds[k] = append(rounds[k], j)
		busy[k][j.from], busy[k][j.to] = true, true
	}
	nodes := r.Cluster.Nodes
	for _, round := range rounds {
		start := r.mark()
		r.count(true)
		var wg sync.WaitGroup
		var interrupted atomic.Bool
		ran := make([]int, 0, 2*len(round))
		window := make(chan struct{}, cmp.Or(r.Window, DefaultWindow))
		for _, j := range round {
			ran = append(ran, j.from, j.to)
			window <- struct{}{}
			wg.Go(func() {
				defer func() { <-window }()
				pa := r.agents(ctx, nodes[j.from], nodes[j.to], 1)
				defer pa.close()
				rec := r.runDirection(ctx, 0, nodes[j.from], nodes[j.to], j.suspect, pa)
				if ctx.Err() != nil && rec.Failed() {
					interrupted.Store(true)
					return
				}
				rec.Retest = true
				r.record(rec)
			})
		}
		wg.Wait()
		r.afterRound(ctx, 0, start, ran)
		if interrupted.Load() || ctx.Err() != nil {
			return false
		}
	}
	return true
}

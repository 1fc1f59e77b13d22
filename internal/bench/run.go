package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Options are one bench run's settings.
type Options struct {
	Engine  string        // tcp or perftest
	Test    string        // tcp: bw, lat; perftest: ib_write_bw, ib_send_lat, ...
	Seconds int           // per test
	Timeout time.Duration // per pair: both ends killed after this
	// Results is the JSON-lines file every finished pair is appended to.
	Results string
	// Resume skips the pairs Results already holds.
	Resume   bool
	Progress io.Writer
	// Extra perftest arguments (-s SIZE, -a, -q QPS, --use_cuda=N).
	PerftestArgs []string
	// Retest suspects against known-good partners.
	Retest bool
}

// Result is one measured (or failed) pair, one JSON line in the results file.
type Result struct {
	Round    int       `json:"round"`
	A        string    `json:"a"` // server
	B        string    `json:"b"` // client
	Engine   string    `json:"engine"`
	Test     string    `json:"test"`
	Retest   bool      `json:"retest,omitempty"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Gbps     float64   `json:"gbps,omitempty"`
	P50Us    float64   `json:"p50_us,omitempty"`
	P99Us    float64   `json:"p99_us,omitempty"`
	P999Us   float64   `json:"p99_9_us,omitempty"`
	Ratio    float64   `json:"ratio,omitempty"`
	Verdict  string    `json:"verdict,omitempty"`
	Judgment string    `json:"judgment,omitempty"`
	TimedOut bool      `json:"timed_out,omitempty"`
	Error    string    `json:"error,omitempty"`
}

func (r Result) key() string { return r.A + "|" + r.B + "|" + r.Engine + "|" + r.Test }

// Runner runs the pairs of a cluster.
type Runner struct {
	Cluster  *Cluster
	Launcher Launcher
	// Rdmalab is the rdmalab binary on the nodes (tcp engine).
	Rdmalab string
	Options Options

	mu  sync.Mutex
	out *os.File
}

// Run measures every pair once, round by round (all pairs of a round at
// once), appends each result as it finishes, then retests suspects. It
// returns every result of this run and of the resumed file.
func (r *Runner) Run(ctx context.Context) ([]Result, error) {
	o := r.Options
	done := map[string]Result{}
	var all []Result
	if o.Resume {
		prev, err := ReadResults(o.Results)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, p := range prev {
			done[p.key()] = p
			all = append(all, p)
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !o.Resume {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(o.Results, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results file: %w", err)
	}
	defer f.Close()
	r.out = f

	nodes := r.Cluster.Nodes
	rounds := Rounds(len(nodes))
	for ri, round := range rounds {
		var todo []Pair
		for _, p := range round {
			if _, ok := done[Result{A: nodes[p.A].Name, B: nodes[p.B].Name, Engine: o.Engine, Test: o.Test}.key()]; !ok {
				todo = append(todo, p)
			}
		}
		r.progress("round %d/%d: %d pair(s)%s\n", ri+1, len(rounds), len(todo), skipped(len(round)-len(todo)))
		res := r.runRound(ctx, ri+1, todo, false)
		all = append(all, res...)
		if ctx.Err() != nil {
			return all, ctx.Err()
		}
	}
	if o.Retest {
		all = append(all, r.retest(ctx, all)...)
	}
	return all, ctx.Err()
}

func skipped(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d already done)", n)
}

func (r *Runner) progress(format string, a ...any) {
	if r.Options.Progress != nil {
		fmt.Fprintf(r.Options.Progress, format, a...)
	}
}

func (r *Runner) runRound(ctx context.Context, round int, pairs []Pair, retest bool) []Result {
	var wg sync.WaitGroup
	res := make([]Result, len(pairs))
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			port := r.Cluster.Launcher.BasePort + i
			res[i] = r.runPair(ctx, round, r.Cluster.Nodes[p.A], r.Cluster.Nodes[p.B], port)
			res[i].Retest = retest
			if ctx.Err() == nil || res[i].Error == "" {
				r.record(res[i])
			}
		}()
	}
	wg.Wait()
	return res
}

// record appends one result at once, so an interrupted run loses nothing.
func (r *Runner) record(res Result) {
	b, _ := json.Marshal(res)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.Write(append(b, '\n'))
	r.out.Sync()
	what := res.Judgment
	if res.Error != "" {
		what = "error: " + res.Error
	}
	r.progress("  %s ↔ %s: %s\n", res.A, res.B, what)
}

// runPair starts the server on a, the client on b, and kills both ends
// when the pair's timeout passes.
func (r *Runner) runPair(ctx context.Context, round int, a, b Node, port int) Result {
	o := r.Options
	res := Result{Round: round, A: a.Name, B: b.Name, Engine: o.Engine, Test: o.Test, Started: time.Now().UTC()}
	pctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	srvArgv, cliArgv, ready := r.argv(a, b, port)
	srv := r.Launcher.Command(pctx, a, srvArgv)
	var srvOut bytes.Buffer
	pipe, err := srv.StdoutPipe()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	srv.Stderr = &srvOut
	if err := srv.Start(); err != nil {
		res.Error = fmt.Sprintf("start server on %s: %v", a.Name, err)
		return res
	}
	waitSrv := make(chan error, 1)
	readyCh := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		said := false
		for sc.Scan() {
			srvOut.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), ready) {
				said = true
				readyCh <- true
			}
		}
		if !said {
			readyCh <- false
		}
		waitSrv <- srv.Wait()
	}()
	finish := func() {
		cancel()
		<-waitSrv
		res.Seconds = time.Since(res.Started).Seconds()
		if pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			res.TimedOut = true
			res.Error = fmt.Sprintf("timed out after %s; both ends killed", o.Timeout)
		}
	}
	if ok := <-readyCh; !ok {
		finish()
		if res.Error == "" {
			res.Error = fmt.Sprintf("server on %s did not start: %s", a.Name, lastNonEmpty(srvOut.String()+" "))
		}
		return res
	}
	cli := r.Launcher.Command(pctx, b, cliArgv)
	var cliErr bytes.Buffer
	cli.Stderr = &cliErr
	out, err := cli.Output()
	if err != nil {
		finish()
		if res.Error == "" {
			res.Error = fmt.Sprintf("client on %s: %v: %s", b.Name, err, lastNonEmpty(cliErr.String()+" "))
		}
		return res
	}
	finish()
	res.TimedOut, res.Error = false, ""
	if err := r.parse(out, &res); err != nil {
		res.Error = err.Error()
	}
	return res
}

// argv builds the server and client commands and the server's ready line.
func (r *Runner) argv(a, b Node, port int) (srv, cli []string, ready string) {
	o := r.Options
	secs := fmt.Sprint(max(o.Seconds, 1))
	if o.Engine == "tcp" {
		addr := fmt.Sprintf("%s:%d", a.Data, port)
		srv = []string{r.Rdmalab, "bench", "agent", "tcp-server", "--listen", addr, "--timeout", o.Timeout.String()}
		cli = []string{r.Rdmalab, "bench", "agent", "tcp-client", "--connect", addr, "--test", o.Test, "--seconds", secs}
		return srv, cli, Ready
	}
	common := func(n Node) []string {
		args := []string{o.Test, "-p", fmt.Sprint(port)}
		if n.Device != "" {
			args = append(args, "-d", n.Device, "-i", fmt.Sprint(n.Port))
		}
		if n.GIDIndex != nil {
			args = append(args, "-x", fmt.Sprint(*n.GIDIndex))
		}
		if strings.HasSuffix(o.Test, "_bw") {
			args = append(args, "--report_gbits", "-D", secs)
		}
		return append(args, o.PerftestArgs...)
	}
	return common(a), append(common(b), a.Data), "Waiting for client"
}

func (r *Runner) parse(out []byte, res *Result) error {
	link := r.Cluster.Link
	if r.Options.Engine == "tcp" {
		t, err := ParseTCPResult(out)
		if err != nil {
			return err
		}
		res.Gbps, res.P50Us, res.P99Us, res.P999Us = t.Gbps, t.P50Us, t.P99Us, t.P999Us
	} else {
		p, err := ParsePerftest(string(out))
		if err != nil {
			return err
		}
		best := p.Best()
		res.Gbps, res.P50Us, res.P99Us, res.P999Us = best.AvgGbps, best.TypicalUs, best.P99Us, best.P999Us
		if p.MTUBytes > 0 && link.MTUBytes == 0 {
			link.MTUBytes = p.MTUBytes
		}
	}
	if res.Gbps > 0 && link.RateGbps > 0 {
		res.Verdict, res.Ratio, res.Judgment = Judge(res.Gbps, link, r.Cluster.Thresholds)
	} else if res.Gbps > 0 {
		res.Judgment = fmt.Sprintf("%.2f Gb/s (no link rate in the cluster file to judge it)", res.Gbps)
	} else {
		res.Judgment = fmt.Sprintf("p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs", res.P50Us, res.P99Us, res.P999Us)
	}
	return nil
}

// retest names the bad node: a node that fails more than half of its
// pairs is retested against the best node (the fewest failed pairs); the
// ends of any other failed pair are too, so a pair whose ends both pass
// alone points at the link between them.
func (r *Runner) retest(ctx context.Context, all []Result) []Result {
	pairs, bad := map[string]int{}, map[string]int{}
	var failed [][2]string
	for _, res := range all {
		if res.Retest {
			continue
		}
		pairs[res.A]++
		pairs[res.B]++
		if res.Error != "" || (res.Verdict != "" && res.Verdict != Healthy) {
			bad[res.A]++
			bad[res.B]++
			failed = append(failed, [2]string{res.A, res.B})
		}
	}
	if len(failed) == 0 {
		return nil
	}
	index := map[string]int{}
	good := -1
	for i, n := range r.Cluster.Nodes {
		index[n.Name] = i
		if pairs[n.Name] > 0 && 2*bad[n.Name] <= pairs[n.Name] && (good < 0 || bad[n.Name] < bad[r.Cluster.Nodes[good].Name]) {
			good = i
		}
	}
	if good < 0 {
		r.progress("no node passed most of its pairs: nothing to retest against\n")
		return nil
	}
	var order []string
	for _, n := range r.Cluster.Nodes {
		if 2*bad[n.Name] > pairs[n.Name] {
			order = append(order, n.Name)
		}
	}
	for _, f := range failed {
		order = append(order, f[0], f[1])
	}
	tested := map[string]bool{r.Cluster.Nodes[good].Name: true}
	var out []Result
	for _, name := range order {
		if tested[name] {
			continue
		}
		tested[name] = true
		r.progress("retest %s against %s\n", name, r.Cluster.Nodes[good].Name)
		out = append(out, r.runRound(ctx, 0, []Pair{{A: good, B: index[name]}}, true)...)
	}
	return out
}

// ReadResults reads a results file; a torn last line (the run was killed
// while writing) is ignored.
func ReadResults(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Result
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			if i == len(lines)-1 || (i == len(lines)-2 && lines[len(lines)-1] == "") {
				break
			}
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, res)
	}
	return out, nil
}

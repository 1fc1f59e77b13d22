package nccl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/resultslog"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// rankHost is the node a rank runs on: every JobLauncher fills the job's
// nodes in order, RanksPerNode ranks each (mpirun -npernode).
func rankHost(j launch.Job, rank int) string {
	i := rank / max(j.RanksPerNode, 1)
	if i < len(j.Nodes) {
		return j.Nodes[i].Name
	}
	return ""
}

// RunOptions is one `rdmalab nccl run`.
type RunOptions struct {
	Cluster *cluster.Cluster
	// NodeCounts are the cluster sizes to run, in order (default 2, 4, 8 …
	// and the whole cluster); each run takes the first N nodes.
	NodeCounts   []int
	Tests        []string // nccl-tests binaries (default all_reduce_perf)
	TestArgs     []string // default -b 8 -e 8G -f 2 -g 1
	RanksPerNode int      // default 1
	Env          []Var    // NCCL_ALGO=Ring and NCCL_DEBUG=INFO are added when absent
	Timeout      time.Duration
	Dir          string // raw logs, one file per run
	// Launcher starts every rank of a run (launch.MPIRun) and reaps what
	// of the run is left on the nodes after it.
	Launcher launch.JobLauncher
	Judge    JudgeOptions
	// Results is the results log (Results' rules): a header bound to the
	// cluster, then one RunResult a line, appended and synced as each run
	// finishes. ClusterFile is refused as its path; Mode says what
	// happens to an existing log (Resume skips the runs it holds that
	// finished).
	Results     string
	ClusterFile string
	Mode        resultslog.Mode
	// Progress receives a line per run start and end (may be nil).
	Progress io.Writer
}

// Results is nccl run's results log: a header bound to the cluster, then
// one RunResult per launch.
var Results = resultslog.Kind[RunResult]{Format: "rdmalab-nccl-results", Version: 1, Tool: "nccl",
	Valid: func(r RunResult) bool { return r.Test != "" && r.NodeCount > 0 }}

// RunResult is one run's line in the results file.
type RunResult struct {
	Test      string    `json:"test"`
	NodeCount int       `json:"node_count"`
	Nodes     []string  `json:"nodes"`
	Command   []string  `json:"command"`
	Log       string    `json:"log"`
	Started   time.Time `json:"started"`
	Seconds   float64   `json:"seconds"`
	TimedOut  bool      `json:"timed_out,omitempty"`
	ExitCode  int       `json:"exit_code"`
	Error     string    `json:"error,omitempty"`
	// Leftovers are processes of the run found alive on the nodes after
	// it ended, and killed ("node: pid command").
	Leftovers []string        `json:"leftovers,omitempty"`
	Findings  []check.Finding `json:"findings"`
	Run       *RunSummary     `json:"run,omitempty"`
}

// DefaultNodeCounts is 2, 4, 8 … up to n, and n itself.
func DefaultNodeCounts(n int) []int {
	var out []int
	for k := 2; k <= n; k *= 2 {
		out = append(out, k)
	}
	if len(out) == 0 || out[len(out)-1] != n {
		out = append(out, n)
	}
	return out
}

// finished is a result --resume keeps: the launch ended by itself, well.
func (r RunResult) finished() bool { return !r.TimedOut && r.Error == "" && r.ExitCode == 0 }

// Run runs every test on every cluster size in order, one launch at a
// time (each uses the nodes whole), and appends each result to the results
// log as it ends. A run that times out is killed (its process group, and
// each rank by its own timeout on its node) and the next run goes on. The
// results returned include those a resumed log already held.
func Run(ctx context.Context, o RunOptions) ([]RunResult, error) {
	nodes := o.Cluster.Nodes
	counts := o.NodeCounts
	if len(counts) == 0 {
		counts = DefaultNodeCounts(len(nodes))
	}
	for _, k := range counts {
		if k < 1 || k > len(nodes) {
			return nil, fmt.Errorf("--nodes %d: the cluster has %d nodes", k, len(nodes))
		}
	}
	tests := cmpOrSlice(o.Tests, []string{"all_reduce_perf"})
	targs := cmpOrSlice(o.TestArgs, []string{"-b", "8", "-e", "8G", "-f", "2", "-g", "1"})
	env := withDefaults(o.Env)
	algo := ""
	var exports []string
	for _, v := range env {
		if v.Name == "NCCL_ALGO" {
			algo = v.Value
		}
		exports = append(exports, v.Name+"="+v.Value)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.Results), 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	log, prior, err := Results.Open(o.Results, resultslog.Target{ClusterFile: o.ClusterFile, Cluster: o.Cluster.Fingerprint(), Nodes: len(nodes), Mode: o.Mode})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	done := map[string]RunResult{}
	for _, r := range prior {
		if r.finished() {
			done[fmt.Sprint(r.Test, "/", r.NodeCount)] = r
		}
	}
	run := launch.NewRunID()
	var out []RunResult
	for _, k := range counts {
		for _, test := range tests {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			if r, ok := done[fmt.Sprint(filepath.Base(test), "/", k)]; ok {
				progress(o.Progress, "%s on %d nodes: in the results log already", r.Test, k)
				out = append(out, r)
				continue
			}
			j := launch.Job{Nodes: nodes[:k], RanksPerNode: max(o.RanksPerNode, 1), Env: exports, Argv: append([]string{test}, targs...),
				Run: run, Deadline: o.Timeout + 5*time.Second, Dir: o.Dir}
			r := runOne(ctx, o, j, algo)
			out = append(out, r)
			if err := log.Append(r); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func cmpOrSlice(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// withDefaults adds NCCL_ALGO=Ring (busbw then measures the network the
// way the verdict assumes) and NCCL_DEBUG=INFO (the transport proof) unless
// given.
func withDefaults(env []Var) []Var {
	out := slices.Clone(env)
	for _, d := range []Var{
		{"NCCL_ALGO", "Ring", "judging the network: Tree and NVLS results are not comparable with the NIC limit"},
		{"NCCL_DEBUG", "INFO", "every rank logs its transports, judged per host"},
	} {
		if !slices.ContainsFunc(out, func(v Var) bool { return v.Name == d.Name }) {
			out = append(out, d)
		}
	}
	return out
}

func runOne(ctx context.Context, o RunOptions, j launch.Job, algo string) RunResult {
	test := filepath.Base(j.Argv[0])
	r := RunResult{Test: test, NodeCount: len(j.Nodes), Started: time.Now().UTC()}
	for _, n := range j.Nodes {
		r.Nodes = append(r.Nodes, n.Name)
	}
	logName := fmt.Sprintf("%s-%dn.log", strings.TrimSuffix(test, "_perf"), len(j.Nodes))
	r.Log = filepath.Join(o.Dir, logName)
	progress(o.Progress, "run %s on %d nodes (%s)", test, len(j.Nodes), strings.Join(r.Nodes, ","))
	rctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd, err := o.Launcher.Command(rctx, j)
	if err != nil {
		r.Error, r.ExitCode = err.Error(), -1
		return r
	}
	r.Command = cmd.Args
	// Through userfile: a fresh file renamed over the log's name when the
	// run ends, never a file planted at that name written through.
	logf, err := userfile.CreateIn(o.Dir, logName, 0o644)
	if err != nil {
		r.Error, r.ExitCode = err.Error(), -1
		return r
	}
	defer logf.Abort()
	cmd.Stdout, cmd.Stderr = logf.File(), logf.File()
	start := time.Now()
	err = cmd.Run()
	if cerr := logf.Commit(); cerr != nil && err == nil {
		err = cerr
	}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever of the launch ignored TERM
	}
	r.Seconds = time.Since(start).Seconds()
	r.TimedOut = errors.Is(rctx.Err(), context.DeadlineExceeded)
	if cmd.ProcessState != nil {
		r.ExitCode = cmd.ProcessState.ExitCode()
	}
	if err != nil && !r.TimedOut {
		r.Error = err.Error()
	}
	r.Leftovers = reap(ctx, o.Launcher, j)
	raw, _ := os.ReadFile(r.Log)
	r.Findings, r.Run = judgeRun(raw, j, o, algo, r)
	progress(o.Progress, "  %s on %d nodes: %s", test, len(j.Nodes), verdictLine(r))
	return r
}

// reap kills what of the run is still alive on the job's nodes, all at
// once: a hung rank the launch's kill did not reach. Interrupted, it has
// a moment (the command must end within a second); else as long as a
// node takes to answer.
func reap(ctx context.Context, l launch.JobLauncher, j launch.Job) []string {
	bound := 15 * time.Second
	if ctx.Err() != nil {
		bound = 400 * time.Millisecond
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	var mu sync.Mutex
	var left []string
	var wg sync.WaitGroup
	for _, n := range j.Nodes {
		wg.Go(func() {
			found, err := l.Reap(rctx, n, j.Run)
			if err != nil {
				return // unreachable now: the rank's own deadline ends it there
			}
			mu.Lock()
			for _, f := range found {
				left = append(left, n.Name+": "+f)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(left)
	return left
}

func progress(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}

func verdictLine(r RunResult) string {
	c := check.Count(r.Findings)
	s := fmt.Sprintf("%d fail, %d warn, %d unknown, %d pass", c[check.Fail], c[check.Warn], c[check.Unknown], c[check.Pass])
	if r.TimedOut {
		s = "timed out; " + s
	}
	return s
}

var ncclHostRE = lazyre.New(`^(\S+?):(\d+:\d+ \[\d+\] NCCL (?:INFO|WARN))`)

// attribute rewrites each rank's lines so NCCL_DEBUG lines carry the
// cluster's node name for that rank (what the launch placed there), not
// whatever hostname the node reports: hosts are then named as the cluster
// file names them, and a node that said nothing is missed by name.
func attribute(raw []byte, j launch.Job) []byte {
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, rank := StripMPIPrefix(sc.Text())
		if rank >= 0 {
			if h := rankHost(j, rank); h != "" {
				line = ncclHostRE().ReplaceAllString(line, h+":$2")
			}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func judgeRun(raw []byte, j launch.Job, o RunOptions, algo string, r RunResult) ([]check.Finding, *RunSummary) {
	subject := fmt.Sprintf("%s on %d nodes", r.Test, len(j.Nodes))
	text := attribute(raw, j)
	opt := o.Judge
	opt.Algo, opt.Hosts, opt.Nodes, opt.RanksPerNode = algo, r.Nodes, len(j.Nodes), o.RanksPerNode
	var fs []check.Finding
	var sum *RunSummary
	runs := ParseTests(text)
	if len(runs) > 0 {
		if m := perfNameRE().FindStringSubmatch(r.Test); runs[0].Collective == "" && m != nil {
			runs[0].Collective = m[1] // the binary this run launched
		}
		f, s := JudgeTests(subject, runs[0], opt)
		fs, sum = append(fs, f...), &s
	}
	log := ParseDebug(text)
	fs = append(fs, JudgeDebug(log, opt)...)
	switch {
	case r.TimedOut:
		var stuck []string
		for _, h := range r.Nodes {
			if hl := log.Host(h); hl == nil || !hl.InitComplete {
				stuck = append(stuck, h)
			}
		}
		msg := fmt.Sprintf("killed after %s without finishing", o.Timeout)
		if len(stuck) > 0 && len(stuck) < len(r.Nodes) {
			msg += fmt.Sprintf("; %s never logged NCCL Init COMPLETE: look there first (plugin or OOB interface differs, wrong GID index)", strings.Join(stuck, ", "))
		}
		fs = append(fs, check.Finding{Check: "nccl.run.timeout", Outcome: check.Fail, Subject: subject, Message: msg,
			Evidence: []check.Evidence{{What: "log", Value: r.Log, Source: strings.Join(r.Command, " ")}}})
	case r.Error != "":
		fs = append(fs, check.Finding{Check: "nccl.run.exit", Outcome: check.Fail, Subject: subject, Message: "the launch failed: " + r.Error + " (see the log)",
			Evidence: []check.Evidence{{What: "log", Value: r.Log, Source: strings.Join(r.Command, " ")}}})
	}
	if len(r.Leftovers) > 0 {
		fs = append(fs, check.Finding{Check: "nccl.run.leftover", Outcome: check.Warn, Subject: subject,
			Message: fmt.Sprintf("%d process(es) of this run were still alive after it ended and were killed: %s", len(r.Leftovers), strings.Join(r.Leftovers, "; "))})
	}
	for i := range fs {
		if fs[i].Subject == "" {
			fs[i].Subject = subject
		}
	}
	check.Sort(fs)
	return fs, sum
}

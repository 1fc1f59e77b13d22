// Package ncclrun runs nccl-tests on a cluster's nodes (through a
// launcher) and polls NCCL's RAS endpoint; package nccl holds what they
// leave (the results log, RAS reports) and judges it.
package ncclrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/procgroup"
	"github.com/rdmalab/rdmalab/internal/resultslog"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// RunOptions is one `rdmalab nccl run`.
type RunOptions struct {
	Cluster *cluster.Cluster
	// NodeCounts are the cluster sizes to run, in order (default 2, 4, 8 …
	// and the whole cluster); each run takes the first N nodes.
	NodeCounts   []int
	Tests        []string   // nccl-tests binaries (default all_reduce_perf)
	TestArgs     []string   // default -b 8 -e 8G -f 2 -g 1
	RanksPerNode int        // default 1
	Env          []nccl.Var // NCCL_ALGO=Ring and NCCL_DEBUG=INFO are added when absent
	Timeout      time.Duration
	Dir          string // raw logs, one file per run
	// Launcher starts every rank of a run (launch.MPIRun) and reaps what
	// of the run is left on the nodes after it.
	Launcher launch.JobLauncher
	Judge    nccl.JudgeOptions
	// Results is the results log (nccl.Results' rules): a header bound to the
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

// Run runs every test on every cluster size in order, one launch at a
// time (each uses the nodes whole), and appends each result to the results
// log as it ends. A run that times out is killed (its process group, and
// each rank by its own timeout on its node) and the next run goes on. The
// results returned include those a resumed log already held.
func Run(ctx context.Context, o RunOptions) ([]nccl.RunResult, error) {
	nodes := o.Cluster.Nodes
	counts := o.NodeCounts
	if len(counts) == 0 {
		counts = nccl.DefaultNodeCounts(len(nodes))
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
	log, prior, err := nccl.Results.Open(o.Results, resultslog.Target{ClusterFile: o.ClusterFile, Cluster: o.Cluster.Fingerprint(), Nodes: len(nodes), Mode: o.Mode})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	done := map[string]nccl.RunResult{}
	for _, r := range prior {
		if r.Finished() {
			done[fmt.Sprint(r.Test, "/", r.NodeCount)] = r
		}
	}
	run := launch.NewRunID()
	var out []nccl.RunResult
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
			if ctx.Err() != nil {
				// Stopped part-way: not a run to judge (its launch was
				// killed by the stop, not by a fault) nor to log as done;
				// --resume runs it again.
				return out, ctx.Err()
			}
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
func withDefaults(env []nccl.Var) []nccl.Var {
	out := slices.Clone(env)
	for _, d := range []nccl.Var{
		{Name: "NCCL_ALGO", Value: "Ring", Reason: "judging the network: Tree and NVLS results are not comparable with the NIC limit"},
		{Name: "NCCL_DEBUG", Value: "INFO", Reason: "every rank logs its transports, judged per host"},
	} {
		if !slices.ContainsFunc(out, func(v nccl.Var) bool { return v.Name == d.Name }) {
			out = append(out, d)
		}
	}
	return out
}

func runOne(ctx context.Context, o RunOptions, j launch.Job, algo string) nccl.RunResult {
	test := filepath.Base(j.Argv[0])
	r := nccl.RunResult{Test: test, NodeCount: len(j.Nodes), Started: time.Now().UTC()}
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
		_ = procgroup.Stop(cmd.Process.Pid, 0) // whatever of the launch ignored TERM
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
	opt := o.Judge
	opt.Algo, opt.Hosts, opt.Nodes, opt.RanksPerNode = algo, r.Nodes, len(j.Nodes), o.RanksPerNode
	r.Findings, r.Run = nccl.JudgeRun(raw, r, opt, o.Timeout)
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

func verdictLine(r nccl.RunResult) string {
	c := check.Count(r.Findings)
	s := fmt.Sprintf("%d fail, %d warn, %d unknown, %d pass", c[check.Fail], c[check.Warn], c[check.Unknown], c[check.Pass])
	if r.TimedOut {
		s = "timed out; " + s
	}
	return s
}

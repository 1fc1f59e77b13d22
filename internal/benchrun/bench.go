// Package benchrun measures pairwise benchmarks across a cluster: the
// engines (perftest, the built-in TCP agent), the Runner (both directions,
// samples, preflight, nodes taken out, retests) over a launcher, the cover
// rounds' running and the dry run. Package bench holds what it leaves and
// judges it.
package benchrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/slurmrun"
	"github.com/rdmalab/rdmalab/internal/userfile"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/resultslog"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/schedule"
)

// Options are one bench run's settings, as the user gave them.
type Options struct {
	ClusterFile string
	Engine      string // tcp or perftest
	Test        string // "" picks the engine's default
	Seconds     int    // per sample
	Samples     int    // per direction
	Timeout     time.Duration
	// Rate overrides the cluster file's link rate ("200", "4X HDR").
	Rate string
	// Layer overrides the cluster file's link layer.
	Layer   string
	Results string
	// Resume continues Results; Overwrite replaces an earlier results log.
	Resume, Overwrite bool
	// KeepFailed: on resume, do not measure failed directions again.
	KeepFailed bool
	// WithoutUnready runs without the nodes preflight finds unready.
	WithoutUnready bool
	NoRetest       bool
	PerftestArgs   []string
	Rdmalab        string // rdmalab on the nodes (tcp engine)
	Progress       io.Writer
	// Launcher replaces the cluster file's launcher (tests).
	Launcher launch.Launcher
	// ControlDir holds ssh control sockets (a short temporary directory).
	ControlDir string
	// DataAddrs overrides a Slurm node's data address (NodeAddr) by name,
	// when the cluster comes from the allocation.
	DataAddrs map[string]string
	// Rounds is a round file (RoundsFormat superbench or clusterkit) that
	// replaces the circle method: e.g. the cover rounds 'rdmalab bench
	// schedule' writes. Only its pairs are measured.
	Rounds       string
	RoundsFormat string
	// Schedule "cover" plans the rounds from the fabric's routes (Fabric:
	// files, or the live fabric through its Runner), runs them and the
	// localiser's follow-ups, and names the slow cable or node. "circle"
	// is every pair; "matching" is MatchingRounds perfect matchings; ""
	// picks by size (DefaultSchedule).
	Schedule string
	Fabric   route.Input
	// UseCUDA measures every pair a second time with perftest's buffers in
	// GPU memory (--use_cuda) and judges GPU against host memory.
	UseCUDA bool
	// Hosts are the nodes' host snapshots, when given: a cable the cover
	// schedule names carries its two ports' PHY facts from their phy[]
	// (docs/phy.md), or says there is no PHY evidence.
	Hosts []*host.Snapshot
	// Agent (tcp engine) runs each node's work of a round in one agent
	// session instead of a server and a client process per sample; the
	// perftest engine runs a process per end and sample whatever it says.
	Agent bool
}

// UsageError is a flag or input bench refuses before doing anything.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UnreadyError lists the nodes preflight found unready.
type UnreadyError struct{ Nodes map[string]string }

func (e *UnreadyError) Error() string {
	names := make([]string, 0, len(e.Nodes))
	for n := range e.Nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d node(s) not ready; fix them or run with --without-unready:", len(names))
	for _, n := range names {
		fmt.Fprintf(&b, "\n  %s: %s", n, e.Nodes[n])
	}
	return b.String()
}

// Validate checks the flags once, before any work.
func (o *Options) Validate() error {
	switch {
	case o.ClusterFile == "" && !slurmrun.InAllocation():
		return &UsageError{errors.New("--cluster FILE is required outside a Slurm allocation (see 'rdmalab bench --help')")}
	case o.Timeout <= 0:
		return &UsageError{fmt.Errorf("--timeout %s: must be positive", o.Timeout)}
	case o.Seconds <= 0:
		return &UsageError{fmt.Errorf("--seconds %d: must be positive", o.Seconds)}
	case o.Samples <= 0:
		return &UsageError{fmt.Errorf("--samples %d: must be positive", o.Samples)}
	case o.Resume && o.Overwrite:
		return &UsageError{resultslog.ErrContradict}
	case time.Duration(o.Seconds)*time.Second >= o.Timeout:
		return &UsageError{fmt.Errorf("--timeout %s must be longer than --seconds %d (one test)", o.Timeout, o.Seconds)}
	}
	if o.Rate != "" {
		if _, err := linkrate.ParseRate(o.Rate); err != nil {
			return &UsageError{fmt.Errorf("--expect-rate: %w", err)}
		}
	}
	if o.Layer != "" {
		if _, err := linkrate.ParseLayer(o.Layer); err != nil {
			return &UsageError{fmt.Errorf("--expect-link-layer: %w", err)}
		}
	}
	if o.UseCUDA && (o.Engine != "perftest" || strings.HasSuffix(o.Test, "_lat")) {
		return &UsageError{errors.New("--use-cuda needs --engine perftest and a bandwidth test (ib_write_bw, ib_read_bw, ib_send_bw)")}
	}
	switch o.Schedule {
	case "", "circle", "matching":
		if o.Fabric.FabricFile != "" || o.Fabric.RoutesFile != "" {
			return &UsageError{errors.New("--fabric and --routes plan the rounds of --schedule cover: add --schedule cover")}
		}
	case "cover":
		if o.Rounds != "" {
			return &UsageError{errors.New("--schedule cover plans its own rounds: leave out --rounds")}
		}
	default:
		return &UsageError{fmt.Errorf("--schedule %q: want matching, circle or cover", o.Schedule)}
	}
	if o.Rounds != "" {
		if _, err := schedule.ParseFormat(o.RoundsFormat); err != nil {
			return &UsageError{fmt.Errorf("--rounds-format: %w", err)}
		}
	}
	return nil
}

// roundsFromFile reads a round file by the cluster's node names and turns
// it into the runner's pairs of node indices.
func roundsFromFile(path, format string, c *cluster.Cluster) (bench.Plan, error) {
	f, err := userfile.Open(path, userfile.Rounds)
	if err != nil {
		return nil, fmt.Errorf("--rounds %w", err)
	}
	defer f.Close()
	names := make([]string, len(c.Nodes))
	idx := map[string]int{}
	for i, n := range c.Nodes {
		names[i], idx[n.Name] = n.Name, i
	}
	s, err := schedule.ReadRounds(f, schedule.Format(format), names)
	if err != nil {
		return nil, fmt.Errorf("--rounds %s: %w", path, err)
	}
	var rounds [][]bench.Pair
	for _, round := range s.Rounds {
		var out []bench.Pair
		for _, p := range round {
			a, b := idx[p.A], idx[p.B]
			if a > b {
				a, b = b, a
			}
			out = append(out, bench.Pair{A: a, B: b})
		}
		rounds = append(rounds, out)
	}
	if len(rounds) == 0 {
		// Measuring nothing would end in a verdict on nothing.
		return nil, fmt.Errorf("--rounds %s: no rounds in it", userfile.Name(path))
	}
	return bench.FixedPlan("rounds", fmt.Sprintf("--rounds %s: %d round(s), only the pairs it lists", userfile.Name(path), len(rounds)), rounds), nil
}

// cluster reads the cluster file, or, without one inside a Slurm
// allocation, makes the cluster of the job's nodes launched with srun.
func (o *Options) cluster(ctx context.Context) (*cluster.Cluster, error) {
	if o.ClusterFile != "" {
		return cluster.Load(o.ClusterFile)
	}
	return slurmrun.Allocation(ctx, slurmrun.Exec{Timeout: 15 * time.Second}, o.DataAddrs)
}

// Run validates, preflights, measures, retests and judges. The report is
// returned also with an error when the run was interrupted (what finished
// is in the results log and the report).
func Run(ctx context.Context, o Options) (*bench.Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c, err := o.cluster(ctx)
	if err != nil {
		return nil, &UsageError{err}
	}
	if c, err = o.expect(c); err != nil {
		return nil, &UsageError{err}
	}
	bin := cmp.Or(o.Rdmalab, c.Launcher.Rdmalab)
	if bin == "" && o.Engine == "tcp" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	eng, err := NewEngine(o.Engine, o.Test, o.Seconds, o.Timeout, bin, o.PerftestArgs)
	if err != nil {
		return nil, &UsageError{err}
	}
	// Every input is read before the log is touched or a node is probed.
	sched := bench.PlanFor(o.Schedule, len(c.Nodes))
	if o.Rounds != "" {
		if sched, err = roundsFromFile(o.Rounds, o.RoundsFormat, c); err != nil {
			return nil, &UsageError{err}
		}
	}
	var cover *coverRun
	if o.Schedule == "cover" {
		if cover, err = planCover(ctx, o.Fabric, c); err != nil {
			return nil, &UsageError{err}
		}
		cover.WithHosts(o.Hosts)
		sched = cover.plan()
	}
	mode, _ := resultslog.ModeOf(o.Resume, o.Overwrite) // Validate refused both
	log, prior, err := bench.Results.Open(o.Results, resultslog.Target{ClusterFile: o.ClusterFile, Cluster: c.Fingerprint(), Nodes: len(c.Nodes), Mode: mode})
	if err != nil {
		return nil, &UsageError{err}
	}
	defer log.Close()
	l := o.Launcher
	if l == nil {
		if c.Launcher.Type == "ssh" && o.ControlDir != "" {
			// Masters a run killed with SIGKILL left behind are ended now
			// (they would end by themselves after ControlPersist), and
			// this run's directory is marked for the next.
			if swept := launch.SweepControlDirs(ctx, filepath.Dir(o.ControlDir), "rdmalab-"); len(swept) > 0 && o.Progress != nil {
				fmt.Fprintf(o.Progress, "ended %d ssh control master(s) of an earlier run that did not end\n", len(swept))
			}
			if err := launch.MarkControlDir(o.ControlDir); err != nil {
				return nil, err
			}
		}
		l = launch.For(c, launch.Setup{ControlDir: o.ControlDir, ConnectTimeout: 5 * time.Second})
	}
	defer l.Close()
	if o.Progress != nil {
		// Before anything runs: how long this will take, and why.
		fmt.Fprintf(o.Progress, "schedule %s\n", sched.Why())
	}
	r := &Runner{Cluster: c, Launcher: l, Engine: eng, Plan: sched, Samples: o.Samples, Timeout: o.Timeout,
		RunID: launch.NewRunID(), Log: log, KeepFailed: o.KeepFailed, Retest: !o.NoRetest, Progress: o.Progress, Agent: o.Agent}
	// a node gets as long to answer the probe as one test may take
	unready := Preflight(ctx, l, c.Nodes, eng, max(15*time.Second, o.Timeout))
	if tcp, ok := eng.(*tcpEngine); ok && o.Agent && ctx.Err() == nil {
		maps.Copy(unready, r.probeAgents(ctx, tcp, unready, max(15*time.Second, o.Timeout)))
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if len(unready) > 0 {
		if !o.WithoutUnready {
			return nil, &UnreadyError{unready}
		}
		for n, why := range unready {
			r.TakeOut(n, "preflight: "+why)
			r.progress("preflight: running without %s: %s\n", n, why)
		}
	}
	var recs []bench.Record
	var runErr error
	if cover != nil {
		recs, runErr = r.runCover(ctx, cover, prior)
	} else {
		recs, runErr = r.Run(ctx, prior)
	}
	rep := bench.AnalyzeRun(c, eng.Name(), eng.Test(), eng.Latency(), recs, r.Out(), r.Skipped(), r.Leftovers())
	used := r.RoundsUsed()
	rep.Rounds = &used
	if cover != nil {
		cover.Judge(c, rep, recs)
	}
	if !o.UseCUDA || runErr != nil {
		return rep, runErr
	}
	// The same schedule again with the buffers in GPU memory; a node taken
	// out in the host pass stays out.
	cudaEng, _ := CUDAEngine(eng)
	rc := &Runner{Cluster: c, Launcher: l, Engine: cudaEng, Plan: sched, Samples: o.Samples, Timeout: o.Timeout,
		RunID: r.RunID, Log: log, KeepFailed: o.KeepFailed, Retest: !o.NoRetest, Progress: o.Progress}
	for n, why := range r.Out() {
		rc.TakeOut(n, why)
	}
	r.progress("GPU memory (--use_cuda): the same pairs again\n")
	crecs, runErr := rc.Run(ctx, prior)
	cuda := bench.AnalyzeRun(c, cudaEng.Name(), cudaEng.Test(), false, crecs, rc.Out(), rc.Skipped(), rc.Leftovers())
	rep.CompareCUDA(cuda)
	return rep, runErr
}

// Preflight checks every node at once (reachable, host key known, the
// engine's binaries, device and port present) within timeout and returns
// the unready ones with the reason.
func Preflight(ctx context.Context, l launch.Launcher, nodes []cluster.Node, e Engine, timeout time.Duration) map[string]string {
	return launch.Preflight(ctx, l, nodes, e.Need, timeout)
}

// expect is c judged against the file's link with --expect-rate and
// --expect-link-layer over it: a new cluster value (the file's link
// section stays as written), by the rules the flags follow everywhere.
func (o *Options) expect(c *cluster.Cluster) (*cluster.Cluster, error) {
	if o.Rate == "" && o.Layer == "" {
		return c, nil
	}
	var src []string
	if o.Rate != "" {
		src = append(src, "--expect-rate "+o.Rate)
	}
	if o.Layer != "" {
		src = append(src, "--expect-link-layer "+o.Layer)
	}
	e, err := c.Expect().Override(o.Rate, o.Layer, strings.Join(src, " "))
	if err != nil {
		return nil, err
	}
	return c.WithExpect(e), nil
}

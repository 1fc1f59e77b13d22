// Command fleetsim runs the REAL bench orchestrator, schedule and
// localiser against a SIMULATED fleet (benchrun.SimFleet: a link model behind
// the launch fake; no node, process or network exists) and prints, as one
// JSON line, what the orchestrator itself cost: time and peak RSS to the
// first round, rounds used, peak RSS, peak OS threads, CPU per round, the
// node or cable named, and the wall time the same rounds would take on a
// real fleet at the given --seconds/--samples. bench/fleet-scale.sh runs
// it once per scenario (each in its own process, so peak RSS is its own).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/benchrun"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
)

type result struct {
	Simulated       bool    `json:"simulated"`
	Nodes           int     `json:"nodes"`
	Schedule        string  `json:"schedule"`
	ToFirstRoundS   float64 `json:"to_first_round_s"`
	RSSFirstRoundMB float64 `json:"rss_first_round_mb"`
	// CPUToFirstRoundS is the CPU the plan to round 1 took: what a loaded
	// machine does not inflate the way it does the wall time.
	CPUToFirstRoundS float64  `json:"cpu_to_first_round_s"`
	MeasuredRounds   int      `json:"measured_rounds"`
	RetestRounds     int      `json:"retest_rounds"`
	PeakRSSMB        float64  `json:"peak_rss_mb"`
	PeakThreads      int64    `json:"peak_threads"`
	CPUPerRoundS     float64  `json:"cpu_per_round_s"`
	OrchestratorS    float64  `json:"orchestrator_s"`
	Named            []string `json:"named"`
	ProjectedWallMin float64  `json:"projected_wall_min"`
	Slow             string   `json:"slow"`
}

// watch is the progress writer: it notes when round 1 starts.
type watch struct {
	start     time.Time
	first     atomic.Int64 // ns since start
	firstRSS  atomic.Int64
	firstCPU  atomic.Int64
	stopFirst func()
}

func (w *watch) Write(p []byte) (int, error) {
	if w.first.Load() == 0 && strings.HasPrefix(string(p), "round 1/") {
		w.first.Store(int64(time.Since(w.start)))
		w.firstRSS.Store(maxRSS())
		w.firstCPU.Store(int64(cpu()))
		if w.stopFirst != nil {
			w.stopFirst()
		}
	}
	return len(p), nil
}

func maxRSS() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss // KiB
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func threads() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func main() {
	nodes := flag.Int("nodes", 2048, "simulated nodes")
	schedule := flag.String("schedule", "", "bench --schedule (default: by size)")
	slow := flag.String("slow", "", "the node whose cable is slow (default: a node in the middle)")
	share := flag.Float64("slow-share", 0.5, "what the slow cable carries, a share of the others")
	firstOnly := flag.Bool("first-round", false, "stop once round 1 starts (plan to first round)")
	seconds := flag.Int("seconds", 5, "bench --seconds the projection uses (default bench's)")
	samples := flag.Int("samples", 3, "bench --samples the projection uses (default bench's)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the orchestrator here")
	write := flag.String("write-cluster", "", "only write the simulated fleet's cluster file here (for bench --dry-run)")
	flag.Parse()
	if *write != "" {
		if err := os.WriteFile(*write, []byte(benchrun.SimClusterFile(*nodes)), 0o600); err != nil {
			fail(err)
		}
		return
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fail(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}

	dir, err := os.MkdirTemp("", "fleetsim")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(file, []byte(benchrun.SimClusterFile(*nodes)), 0o600); err != nil {
		fail(err)
	}
	res := result{Simulated: true, Nodes: *nodes, Slow: *slow}
	if res.Slow == "" && !*firstOnly {
		res.Slow = fmt.Sprintf("sim%05d", *nodes/2+7)
	}

	var peak atomic.Int64
	done := make(chan struct{})
	go func() { // OS threads, sampled
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if n := threads(); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watch{start: time.Now()}
	if *firstOnly {
		w.stopFirst = cancel
	}
	// The simulated launcher needs the data addresses: the cluster file is
	// read once more for it (benchrun.Run reads it itself, as always).
	c, err := cluster.Load(file)
	if err != nil {
		fail(err)
	}
	sim := &benchrun.SimFleet{Gbps: 95, Slow: res.Slow, SlowShare: *share, Jitter: 0.02}
	rep, err := benchrun.Run(ctx, benchrun.Options{ClusterFile: file, Engine: "tcp", Seconds: *seconds, Samples: *samples, Timeout: 2 * time.Minute,
		Results: filepath.Join(dir, "results.jsonl"), Launcher: sim.Launcher(c), Progress: w, Schedule: *schedule})
	total := time.Since(w.start)
	close(done)
	if err != nil && !*firstOnly {
		fail(err)
	}
	res.ToFirstRoundS = time.Duration(w.first.Load()).Seconds()
	res.RSSFirstRoundMB = float64(w.firstRSS.Load()) / 1024
	res.CPUToFirstRoundS = time.Duration(w.firstCPU.Load()).Seconds()
	res.PeakRSSMB = float64(maxRSS()) / 1024
	res.PeakThreads = peak.Load()
	res.OrchestratorS = total.Seconds()
	if rep != nil && rep.Rounds != nil {
		u := rep.Rounds
		res.Schedule, res.MeasuredRounds, res.RetestRounds = u.Schedule, u.Measured, u.Retest
		if n := u.Measured + u.Retest; n > 0 {
			res.CPUPerRoundS = (cpu() - time.Duration(w.firstCPU.Load())).Seconds() / float64(n)
		}
		m := benchrun.Model(*seconds, *samples, *nodes)
		// preflight (one probe each, 64 at a time) is a round's reap
		res.ProjectedWallMin = (m.Project(u.Measured, u.Retest) + m.PerRound).Minutes()
		for _, f := range rep.Findings {
			if f.Outcome == check.Fail {
				res.Named = append(res.Named, strings.TrimSpace(f.Host+" "+f.Check+" "+subjectIfNoHost(f)))
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func subjectIfNoHost(f check.Finding) string {
	if f.Host != "" {
		return ""
	}
	return f.Subject
}

func fail(err error) {
	pprof.StopCPUProfile()
	fmt.Fprintln(os.Stderr, "fleetsim:", err)
	os.Exit(2)
}

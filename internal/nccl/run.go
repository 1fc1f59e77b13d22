package nccl

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/resultslog"
)

// What nccl run (internal/ncclrun) leaves: its results log and the
// judgement of each run's output.

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

// Finished is a result --resume keeps: the launch ended by itself, well.
func (r RunResult) Finished() bool { return !r.TimedOut && r.Error == "" && r.ExitCode == 0 }

// rankHost is the node a rank runs on: every launcher fills the run's
// nodes in order, ranksPerNode ranks each (mpirun -npernode).
func rankHost(hosts []string, ranksPerNode, rank int) string {
	i := rank / max(ranksPerNode, 1)
	if i < len(hosts) {
		return hosts[i]
	}
	return ""
}

var ncclHostRE = lazyre.New(`^(\S+?):(\d+:\d+ \[\d+\] NCCL (?:INFO|WARN))`)

// attribute rewrites each rank's lines so NCCL_DEBUG lines carry the
// cluster's node name for that rank (what the launch placed there), not
// whatever hostname the node reports: hosts are then named as the cluster
// file names them, and a node that said nothing is missed by name.
func attribute(raw []byte, hosts []string, ranksPerNode int) []byte {
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(UntangleMPITags(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, rank := StripMPIPrefix(sc.Text())
		if rank >= 0 {
			if h := rankHost(hosts, ranksPerNode, rank); h != "" {
				line = ncclHostRE().ReplaceAllString(line, h+":$2")
			}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// JudgeRun judges one launched run: its nccl-tests output and NCCL_DEBUG
// lines (each rank's lines attributed to the node the launch placed it
// on, opt.Hosts in order, opt.RanksPerNode each), and how the launch
// ended (timeout after timeout, error, processes left behind).
func JudgeRun(raw []byte, r RunResult, opt JudgeOptions, timeout time.Duration) ([]check.Finding, *RunSummary) {
	subject := fmt.Sprintf("%s on %d nodes", r.Test, len(r.Nodes))
	text := attribute(raw, opt.Hosts, opt.RanksPerNode)
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
	logEv := check.Evidence{What: "log", Value: r.Log, Source: strings.Join(r.Command, " ")}
	switch {
	case r.TimedOut:
		var stuck []string
		for _, h := range r.Nodes {
			if hl := log.Host(h); hl == nil || !hl.InitComplete {
				stuck = append(stuck, h)
			}
		}
		msg := fmt.Sprintf("killed after %s without finishing", timeout)
		if len(stuck) > 0 && len(stuck) < len(r.Nodes) {
			msg += fmt.Sprintf("; %s never logged NCCL Init COMPLETE: look there first (plugin or OOB interface differs, wrong GID index)", strings.Join(stuck, ", "))
		}
		f := CheckRunTimeout.Reporter("").Fail(subject, "%s", msg)
		f.Evidence = append(f.Evidence, logEv)
		fs = append(fs, *f)
	case r.Error != "":
		f := CheckRunExit.Reporter("").Fail(subject, "the launch failed: %s (see the log)", r.Error)
		f.Evidence = append(f.Evidence, logEv)
		fs = append(fs, *f)
	}
	if len(r.Leftovers) > 0 {
		f := CheckRunLeftover.Reporter("").Warn(subject, "%d process(es) of this run were still alive after it ended and were killed: %s", len(r.Leftovers), strings.Join(r.Leftovers, "; "))
		fs = append(fs, *f)
	}
	for i := range fs {
		if fs[i].Subject == "" {
			fs[i].Subject = subject
		}
	}
	check.Sort(fs)
	return fs, sum
}

package nccl

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
)

// One launched run judged as nccl run leaves it (internal/ncclrun): a
// real 2-node nccl-tests table behind mpirun's "[1,0]<stdout>:" prefix.
// Killed at its deadline it fails nccl.run.timeout, a failed launch
// nccl.run.exit, a rank left behind warns nccl.run.leftover, each on the
// run with the catalog's fixes and the log as evidence; the run that ended
// well has none of them.
func TestJudgeRunEnds(t *testing.T) {
	table := capture(t, "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt")
	var b strings.Builder
	for _, l := range strings.Split(table, "\n") {
		b.WriteString("[1,0]<stdout>:" + l + "\n")
	}
	raw := []byte(b.String())
	opt := JudgeOptions{Algo: "Ring", Hosts: []string{"n1", "n2"}, Nodes: 2, RanksPerNode: 1}
	base := RunResult{Test: "all_reduce_perf", NodeCount: 2, Nodes: []string{"n1", "n2"}, Log: "/tmp/run/all_reduce-2n.log",
		Command: []string{"mpirun", "-np", "2", "all_reduce_perf"}}
	const subject = "all_reduce_perf on 2 nodes"
	ends := map[string]bool{"nccl.run.timeout": true, "nccl.run.exit": true, "nccl.run.leftover": true}

	fs, sum := JudgeRun(raw, base, opt, time.Minute)
	if sum == nil {
		t.Fatal("the table was not read")
	}
	for _, f := range fs {
		if ends[f.Check] {
			t.Errorf("a run that ended well: %s %s %s", f.Outcome, f.Check, f.Message)
		}
	}

	for _, c := range []struct {
		id      string
		outcome check.Outcome
		edit    func(*RunResult)
		msg     string
		logEv   bool
	}{
		{"nccl.run.timeout", check.Fail, func(r *RunResult) { r.TimedOut, r.ExitCode = true, -1 }, "killed after 1m0s without finishing", true},
		{"nccl.run.exit", check.Fail, func(r *RunResult) { r.Error, r.ExitCode = "exit status 1", 1 }, "the launch failed: exit status 1", true},
		{"nccl.run.leftover", check.Warn, func(r *RunResult) { r.Leftovers = []string{"n2: 4242 all_reduce_perf"} }, "n2: 4242 all_reduce_perf", false},
	} {
		r := base
		c.edit(&r)
		fs, _ := JudgeRun(raw, r, opt, time.Minute)
		var got *check.Finding
		for i := range fs {
			if fs[i].Check == c.id {
				got = &fs[i]
			}
		}
		switch {
		case got == nil:
			t.Errorf("%s: missing\n%s", c.id, dump(fs))
		case got.Outcome != c.outcome || got.Subject != subject || !strings.Contains(got.Message, c.msg) || len(got.Fix) == 0 || got.Fix[0] == "":
			t.Errorf("%s: %s %q %q fix %q", c.id, got.Outcome, got.Subject, got.Message, got.Fix)
		case c.logEv && (len(got.Evidence) == 0 || got.Evidence[0].Value != r.Log):
			t.Errorf("%s: evidence %+v", c.id, got.Evidence)
		}
	}
}

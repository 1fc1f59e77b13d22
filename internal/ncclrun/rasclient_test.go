package ncclrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Real RAS reports (shared/testdata/ncclras), replayed over the real
// client protocol by testhost.RASReplay; their judgement is internal/nccl's tests.
const (
	rasSleepFault = "ncclras/nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt"
	rasRayHealthy = "ncclras/ray-test-nv-hang-detector_HEALTHY_RAS_JSON_2.28.9_1node-2rank_empty-missing-ranks-array.json"
)

func capture(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func poll(t *testing.T, addr string, n int) []nccl.RASPoll {
	t.Helper()
	polls, err := PollRAS(context.Background(), PollOptions{Addr: addr, Interval: 10 * time.Millisecond, Polls: n, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return polls
}

// A text server (NCCL before 2.28.7) is asked for JSON, refuses, and is
// asked for the verbose report; three polls of the docs' sleep-fault
// report are judged a hang of rank 7 on node1.
func TestRASClientTextServer(t *testing.T) {
	addr, cmds := testhost.RASReplay(t, testhost.RASReport{Body: capture(t, rasSleepFault)})
	polls := poll(t, addr, 3)
	if c := cmds(); len(c) < 3 || c[0] != "CLIENT PROTOCOL 2" || c[1] != "SET FORMAT json" || c[2] != "VERBOSE STATUS" {
		t.Errorf("commands %q", c)
	}
	for _, p := range polls {
		if p.Report == nil || p.Err != "" {
			t.Fatalf("poll: %+v", p)
		}
	}
	fs := nccl.JudgeRASPolls("RAS at "+addr, polls, nil)
	for _, f := range fs {
		if f.Check == "nccl.ras.hang" && f.Outcome == check.Fail && f.Host == "node1" && f.Subject == "rank 7" && len(f.Fix) > 0 {
			return
		}
	}
	t.Errorf("no nccl.ras.hang fail on node1 rank 7 with a fix: %+v", fs)
}

// A JSON server is asked STATUS and its report read as JSON; healthy
// polls of it are judged healthy.
func TestRASClientJSONServer(t *testing.T) {
	addr, cmds := testhost.RASReplay(t, testhost.RASReport{JSON: true, Body: capture(t, rasRayHealthy)})
	polls := poll(t, addr, 2)
	if c := cmds(); len(c) < 3 || c[1] != "SET FORMAT json" || c[2] != "STATUS" {
		t.Errorf("a JSON server is asked STATUS: %q", c)
	}
	if polls[0].Report == nil || polls[0].Report.Format != "json" {
		t.Fatalf("poll: %+v", polls[0])
	}
	for _, f := range nccl.JudgeRASPolls("x", polls, nil) {
		if f.Outcome != check.Pass {
			t.Errorf("healthy: %s %s %s", f.Outcome, f.Check, f.Message)
		}
	}
}

// An endpoint that accepts and never answers costs each poll its timeout,
// no more, and leaves no report to judge.
func TestRASClientSilentBounded(t *testing.T) {
	addr, _ := testhost.RASReplay(t, testhost.RASReport{Silent: true})
	start := time.Now()
	polls, err := PollRAS(context.Background(), PollOptions{Addr: addr, Interval: 10 * time.Millisecond, Polls: 2, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("two bounded polls took %s", el)
	}
	if len(polls) != 2 || polls[0].Report != nil || !strings.Contains(polls[0].Err, "no answer within the poll's timeout") {
		t.Errorf("%+v", polls)
	}
	if nccl.JudgeRASPolls("x", polls, nil) != nil {
		t.Error("findings from no report")
	}
}

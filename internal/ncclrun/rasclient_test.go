package ncclrun

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Real RAS reports (shared/testdata/ncclras), replayed by the fake
// endpoint; their judgement is internal/nccl's tests.
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

// replay is one report a fake RAS endpoint gives: the real capture's text
// (or JSON, which it then offers to SET FORMAT json), or silence.
type replay struct {
	body   string
	json   bool
	silent bool // accept, then never answer
}

// fakeRAS is a test peer for NCCL's RAS client protocol (the real server
// runs inside NCCL processes on GPUs): on 127.0.0.1, it answers CLIENT
// PROTOCOL, SET FORMAT and [VERBOSE ]STATUS as client_support.cc does,
// replaying the given captures one connection each (the last one again
// after the list). It stops when the test ends.
func fakeRAS(t *testing.T, replays ...replay) (addr string, commands func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			rp := replays[min(i, len(replays)-1)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				if rp.silent {
					select {
					case <-done:
					case <-time.After(30 * time.Second):
					}
					return
				}
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					cmd := strings.TrimSpace(line)
					mu.Lock()
					seen = append(seen, cmd)
					mu.Unlock()
					switch up := strings.ToUpper(cmd); {
					case strings.HasPrefix(up, "CLIENT PROTOCOL "):
						io.WriteString(conn, "SERVER PROTOCOL 2\n")
					case up == "SET FORMAT JSON" && rp.json:
						io.WriteString(conn, "OK\n")
					case up == "SET FORMAT JSON": // NCCL before 2.28.7
						io.WriteString(conn, "ERROR: Unknown command "+cmd+"\n")
					case up == "STATUS" || up == "VERBOSE STATUS":
						io.WriteString(conn, rp.body)
						return // the server closes at the report's end
					default:
						io.WriteString(conn, "ERROR: Unknown command "+cmd+"\n")
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
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
	addr, cmds := fakeRAS(t, replay{body: capture(t, rasSleepFault)})
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
	addr, cmds := fakeRAS(t, replay{json: true, body: capture(t, rasRayHealthy)})
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
	addr, _ := fakeRAS(t, replay{silent: true})
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

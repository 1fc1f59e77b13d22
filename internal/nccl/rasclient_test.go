package nccl

import (
	"bufio"
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

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

func poll(t *testing.T, addr string, n int) []RASPoll {
	t.Helper()
	polls, err := PollRAS(context.Background(), PollOptions{Addr: addr, Interval: 10 * time.Millisecond, Polls: n, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return polls
}

// The docs' sleep-fault report replayed in three polls: rank 7 frozen at
// AllReduce #60 while the others are at #64 is a hang, on node1.
func TestRASPollFrozenIsHang(t *testing.T) {
	addr, cmds := fakeRAS(t, replay{body: capture(t, rasSleepFault)})
	polls := poll(t, addr, 3)
	fs := JudgeRASPolls("RAS at "+addr, polls, nil)
	f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "rank 7 on host node1 stuck at AllReduce #60 while others reached #64 for 3 polls")
	if !strings.Contains(f.Message, "GPU 3, PID 1650386") {
		t.Errorf("%s", f.Message)
	}
	// text servers are asked for the verbose report after JSON is refused
	if c := cmds(); len(c) < 3 || c[0] != "CLIENT PROTOCOL 2" || c[1] != "SET FORMAT json" || c[2] != "VERBOSE STATUS" {
		t.Errorf("commands %q", c)
	}
	// one poll of the same report is no verdict
	fs = JudgeRASPolls("x", polls[:1], nil)
	has(t, fs, "nccl.ras.progress", check.Warn, "node1", "#0-0 (78db921d1c117b4a) AllReduce", "one poll is not a verdict")
	none(t, fs, "nccl.ras.hang", check.Fail)
}

// rayCounts is ray's healthy JSON capture with rank 0 and rank 1 at the
// given AllReduce counts.
func rayCounts(t *testing.T, r0, r1 string) string {
	s := capture(t, rasRayHealthy)
	i := strings.Index(s, `"AllReduce": 2`)
	j := strings.LastIndex(s, `"AllReduce": 2`)
	if i < 0 || i == j {
		t.Fatal("the capture changed")
	}
	return s[:i] + `"AllReduce": ` + r0 + s[i+len(`"AllReduce": 2`):j] + `"AllReduce": ` + r1 + s[j+len(`"AllReduce": 2`):]
}

// The JSON capture replayed with rank 1 behind but moving: a straggler
// (warning), not a hang; behind in the first poll only: launch skew; the
// capture itself three times: healthy.
func TestRASPollStragglerSkewHealthy(t *testing.T) {
	addr, cmds := fakeRAS(t, replay{json: true, body: rayCounts(t, "10", "8")}, replay{json: true, body: rayCounts(t, "12", "10")}, replay{json: true, body: rayCounts(t, "14", "12")})
	fs := JudgeRASPolls("x", poll(t, addr, 3), nil)
	has(t, fs, "nccl.ras.hang", check.Warn, "10.0.77.184", "rank 1", "rank 1 (GPU 1, PID 8814 on 10.0.77.184) lags but moves: AllReduce #8 → #10 → #12 over 3 polls")
	none(t, fs, "nccl.ras.hang", check.Fail)
	if c := cmds(); len(c) < 3 || c[2] != "STATUS" {
		t.Errorf("a JSON server is asked STATUS: %q", c)
	}

	addr, _ = fakeRAS(t, replay{json: true, body: rayCounts(t, "10", "8")}, replay{json: true, body: rayCounts(t, "12", "12")})
	fs = JudgeRASPolls("x", poll(t, addr, 3), nil)
	has(t, fs, "nccl.ras.hang", check.Pass, "", "polls", "launch skew, not a hang")

	addr, _ = fakeRAS(t, replay{json: true, body: capture(t, rasRayHealthy)})
	fs = JudgeRASPolls("x", poll(t, addr, 3), nil)
	has(t, fs, "nccl.ras.hang", check.Pass, "", "polls", "no rank stayed behind across 3 polls")
	has(t, fs, "nccl.ras.ranks", check.Pass, "", "communicators", "(2 ranks)")
	for _, f := range fs {
		if f.Outcome != check.Pass {
			t.Errorf("healthy: %s %s %s", f.Outcome, f.Check, f.Message)
		}
	}
}

// A dead rank in the last poll fails by name; an endpoint that accepts and
// never answers costs each poll its timeout, no more.
func TestRASPollDeadAndSilent(t *testing.T) {
	addr, _ := fakeRAS(t, replay{json: true, body: capture(t, rasRayHealthy)}, replay{json: true, body: capture(t, rasRSTJSON)})
	fs := JudgeRASPolls("x", poll(t, addr, 2), nil)
	has(t, fs, "nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "PID 1524345")

	addr, _ = fakeRAS(t, replay{silent: true})
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
	if JudgeRASPolls("x", polls, nil) != nil {
		t.Error("findings from no report")
	}
}

// From rank to path: the frozen rank 7 of the docs' sleep-fault replay,
// with node1's snapshot (the HGX H200 example bound to RAS's name for it),
// is followed to GPU 3 (NVML index 3, the 4th GPU by PCI bus id), its rail
// mlx5_3 and port 1, and the finding offers the bench retest of that rail.
func TestRASPathFromRankToPort(t *testing.T) {
	addr, _ := fakeRAS(t, replay{body: capture(t, rasSleepFault)})
	polls := poll(t, addr, 2)
	hgx := load(t, "hgx-h200")
	fs := JudgeRASPolls("x", polls, &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Cluster: "cluster.yaml"})
	f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "stuck at AllReduce #60 while others reached #64 for 2 polls")
	if !strings.Contains(f.Message, "its GPU's rail is mlx5_3 port 1") {
		t.Errorf("message: %s", f.Message)
	}
	if !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return e.What == "path" && strings.Contains(e.Value, "hgx-h200-01 → GPU 3 = 0000:43:00.0 H200 SXM (NVML index 3") && strings.Contains(e.Value, "rail NIC mlx5_3 (0000:44:00.0, path PIX) → port 1 (Active, 400 Gb/s, netdev ibp68s0)")
	}) {
		t.Errorf("path: %+v", f.Evidence)
	}
	if len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "give node node1 device: mlx5_3, port: 1, cuda_gpu: 3") || !strings.Contains(f.Fix[0], "> retest.rounds && rdmalab bench --cluster cluster.yaml --rounds retest.rounds (add --use-cuda to measure from GPU 3's memory") {
		t.Errorf("fix: %q", f.Fix)
	}
	// a snapshot matched by hostname works alike; one of another host
	// names what is missing instead of guessing
	fs = JudgeRASPolls("x", polls, &RASOptions{Snapshots: []*host.Snapshot{hgx}})
	f = has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "stuck")
	if !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return strings.Contains(e.Value, "no snapshot of node1 among those given")
	}) {
		t.Errorf("%+v", f.Evidence)
	}
	// the missing rank of the ras.rst JSON, through one report
	fs = JudgeRAS("x", mustRAS(t, capture(t, rasRSTJSON)), &RASOptions{Hosts: map[string]*host.Snapshot{"172.16.64.245": hgx}})
	f = has(t, fs, "nccl.ras.ranks", check.Fail, "172.16.64.245", "rank 1", "its GPU's rail is mlx5_1 port 1")
}

// With a fabric snapshot the rail's port is followed one step further: the
// cable to its switch, found by the NIC's node GUID (a fabric holding the
// HGX example's mlx5_3 on leaf port 17, as ibnetdiscover would list it).
func TestRASPathToCable(t *testing.T) {
	hgx := load(t, "hgx-h200")
	nic := hgx.RDMA("mlx5_3")
	leaf := host.GUID(0x7cfe900300a0b0c0)
	fab := &fabric.Snapshot{Source: "test fabric", Nodes: []fabric.Node{{GUID: leaf, Type: "Switch", Desc: "leaf-3 QM9700", Ports: 64}, {GUID: nic.NodeGUID, Type: "CA", Desc: "hgx-h200-01 mlx5_3", Ports: 1}},
		Ports: []fabric.Port{{NodeGUID: nic.NodeGUID, NodeDesc: "hgx-h200-01 mlx5_3", NodeType: "CA", Num: 1, State: portstate.Active, Width: "4X", Speed: "NDR",
			Remote: &fabric.End{NodeGUID: leaf, NodeDesc: "leaf-3 QM9700", Port: 17}}}}
	addr, _ := fakeRAS(t, replay{body: capture(t, rasSleepFault)})
	fs := JudgeRASPolls("x", poll(t, addr, 2), &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Fabric: fab})
	f := has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "its GPU's rail is mlx5_3 port 1, cabled mlx5_3 port 1 ↔ leaf-3 QM9700 port 17 (4X NDR Active)")
	// the NIC of another GPU is not in this fabric: said, not guessed
	fab.Ports[0].NodeGUID = hgx.RDMA("mlx5_0").NodeGUID
	fs = JudgeRASPolls("x", poll(t, addr, 2), &RASOptions{Hosts: map[string]*host.Snapshot{"node1": hgx}, Fabric: fab})
	f = has(t, fs, "nccl.ras.hang", check.Fail, "node1", "rank 7", "its GPU's rail is mlx5_3 port 1")
	if strings.Contains(f.Message, "cabled") || !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return e.What == "cable" && strings.Contains(e.Value, "no port of node GUID")
	}) {
		t.Errorf("%s %+v", f.Message, f.Evidence)
	}
}

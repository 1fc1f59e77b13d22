package cli

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The exit contract of nccl judge on real outputs: proven healthy 0, a
// fault 1, bad input or flag 2, a question the input cannot answer 3.
func TestNCCLJudgeVerdictContract(t *testing.T) {
	d := testhost.SharedTestdata(t)
	healthy := filepath.Join(d, "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt")
	out, errOut, code := run(t, "nccl", "judge", healthy, "--expect-rate", "100GbE", "--mtu", "1024")
	if code != ExitOK || !strings.Contains(out, "verdict: HEALTHY") {
		t.Errorf("healthy 2-node run: exit %d\n%s%s", code, out, errOut)
	}

	// faults: NET/Socket between nodes; a fatal WARN; NCCL_IB_DISABLE=1 on
	// the launch line of the healthy run
	_, _, code = run(t, "nccl", "judge", filepath.Join(d, "nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log"))
	if code != ExitFindings {
		t.Errorf("NET/Socket log: exit %d", code)
	}
	b, err := os.ReadFile(healthy)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	tcp := filepath.Join(tmp, "tcp.txt")
	os.WriteFile(tcp, []byte(strings.Replace(string(b), "--hostfile", "-x NCCL_IB_DISABLE=1 --hostfile", 1)), 0o600)
	out, _, code = run(t, "nccl", "judge", tcp, "--expect-rate", "100GbE", "--mtu", "1024")
	if code != ExitFindings || !strings.Contains(out, "a TCP run judged as RDMA") {
		t.Errorf("NCCL_IB_DISABLE=1: exit %d\n%s", code, out)
	}
	fatal := filepath.Join(tmp, "fatal.log")
	nv, _ := os.ReadFile(filepath.Join(d, "nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log"))
	os.WriteFile(fatal, append(nv, "master_node:24570:24910 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 192.168.11.2<58012> with error 12, opcode 0, len 0, vendor err 129\n"...), 0o600)
	out, _, code = run(t, "nccl", "judge", fatal)
	if code != ExitFindings || !strings.Contains(out, "IBV_WC_RETRY_EXC_ERR") {
		t.Errorf("error 12: exit %d\n%s", code, out)
	}

	// bad input and bad flags
	for _, args := range [][]string{
		{"nccl", "judge", "/nonexistent.log"},
		{"nccl", "judge", filepath.Join(d, "PROVENANCE.md")},
		{"nccl", "judge", healthy, "--ranks-per-node", "8"},
		{"nccl", "judge", healthy, "--nodes", "0"},
	} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage || errOut == "" || strings.Contains(errOut, "goroutine") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}

	// unproven: the table names no hosts and --nodes is not given; with
	// --nodes the same table is judged
	paste := filepath.Join(tmp, "paste.txt")
	s := string(b)
	s = s[strings.Index(s, "#       size"):]
	os.WriteFile(paste, []byte(s), 0o600)
	out, _, code = run(t, "nccl", "judge", paste, "--expect-rate", "100GbE", "--mtu", "1024")
	if code != ExitUnproven || !strings.Contains(out, "verdict: UNPROVEN") || !strings.Contains(out, "--nodes N") {
		t.Errorf("no hosts, no --nodes: exit %d\n%s", code, out)
	}
	out, _, code = run(t, "nccl", "judge", paste, "--expect-rate", "100GbE", "--mtu", "1024", "--nodes", "2")
	if code != ExitOK {
		t.Errorf("--nodes 2: exit %d\n%s", code, out)
	}
	// unproven: no NIC rate
	out, _, code = run(t, "nccl", "judge", healthy)
	if code != ExitUnproven || !strings.Contains(out, "--expect-rate") {
		t.Errorf("no --expect-rate: exit %d\n%s", code, out)
	}
}

// rasPeer is a test peer for NCCL's RAS client protocol on 127.0.0.1 (the
// real server runs inside NCCL processes on GPUs), replaying one report
// text to every connection: it answers the handshake, refuses JSON as
// NCCL before 2.28.7 does, and writes the report on [VERBOSE ]STATUS.
func rasPeer(t *testing.T, report string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(conn)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break
				}
				switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
				case strings.HasPrefix(cmd, "CLIENT PROTOCOL"):
					io.WriteString(conn, "SERVER PROTOCOL 2\n")
				case strings.HasSuffix(cmd, "STATUS"):
					io.WriteString(conn, report)
				default:
					io.WriteString(conn, "ERROR: Unknown command\n")
					continue
				}
				if strings.HasSuffix(strings.TrimSpace(line), "STATUS") {
					break
				}
			}
			conn.Close()
		}
	}()
	return ln.Addr().String()
}

// The exit contract of nccl ras against replays of the real ncclras
// captures: healthy 0, a frozen lagging rank (hang) 1, a dead rank 1, no
// endpoint or a bad flag 2, no communicator data 3.
func TestNCCLRASVerdictContract(t *testing.T) {
	d := testhost.SharedTestdata(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(d, "ncclras", rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ras := func(addr string, extra ...string) (string, string, int) {
		host, port, _ := net.SplitHostPort(addr)
		return run(t, append([]string{"nccl", "ras", "--host", host, "--port", port, "--polls", "2", "--interval", "100ms", "--timeout", "5s"}, extra...)...)
	}
	out, errOut, code := ras(rasPeer(t, read("nccl-docs-example-08_ras_ncclras-v_2.30.7_2node-8rank_healthy-RUNNING-OK_masked.txt")))
	if code != ExitOK || !strings.Contains(out, "verdict: HEALTHY") || !strings.Contains(errOut, "RAS poll 2/2") {
		t.Errorf("healthy: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = ras(rasPeer(t, read("nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt")))
	if code != ExitFindings || !strings.Contains(out, "rank 7 on host node1 stuck at AllReduce #60 while others reached #64 for 2 polls") {
		t.Errorf("frozen rank: exit %d\n%s", code, out)
	}
	// with node1's snapshot: the rank's GPU, rail NIC and port, and the retest
	out, _, code = ras(rasPeer(t, read("nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt")),
		"--snapshot", "node1=example:hgx-h200", "--cluster", "lab.yaml")
	if code != ExitFindings || !strings.Contains(out, "mlx5_3 port 1") || !strings.Contains(out, "rdmalab bench --cluster lab.yaml --rounds retest.rounds (add --use-cuda") {
		t.Errorf("path: exit %d\n%s", code, out)
	}
	if _, errOut, code := ras("127.0.0.1:1", "--snapshot", "node1=/nonexistent.json"); code != ExitUsage || !strings.Contains(errOut, "/nonexistent.json") {
		t.Errorf("bad snapshot: exit %d %s", code, errOut)
	}
	if _, errOut, code := ras("127.0.0.1:1", "--fabric", "example:hgx-h200"); code != ExitUsage || !strings.Contains(errOut, "--fabric") {
		t.Errorf("a host where a fabric is meant: exit %d %s", code, errOut)
	}
	out, _, code = ras(rasPeer(t, read("nccl-docs-example-08_ras_exit-fault_rank7_INCOMPLETE_communicators-section-only_masked.txt")), "-o", "json")
	if code != ExitFindings || !strings.Contains(out, `"verdict"`) || !strings.Contains(out, "PID 3748990") {
		t.Errorf("dead rank: exit %d\n%s", code, out)
	}
	out, _, code = ras(rasPeer(t, "Communicators... (0.001s)\n=============\n\nNo communicator data collected!\n"))
	if code != ExitUnproven || !strings.Contains(out, "verdict: UNPROVEN") {
		t.Errorf("no communicator data: exit %d\n%s", code, out)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	_, errOut, code = ras(closed)
	if code != ExitUsage || !strings.Contains(errOut, "no RAS report from "+closed) {
		t.Errorf("no endpoint: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"nccl", "ras"}, {"nccl", "ras", "--host", "h", "--polls", "0"}, {"nccl", "ras", "--host", "h", "--port", "70000"}} {
		if _, errOut, code := run(t, args...); code != ExitUsage || errOut == "" {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
}

package ncclrun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// standIn replays captured real nccl-tests output and NCCL_DEBUG lines in
// place of all_reduce_perf: this machine has no GPU. Each node picks its
// behaviour by its address in the namespace cluster.
const standIn = `#!/bin/sh
d=$(dirname "$0")
me=$(/bin/ip -4 -o addr show | sed -n 's/.* inet [0-9.]*\.\([0-9]*\)\/24 .*/\1/p' | head -1)
case $(cat "$d/node$me.behaviour" 2>/dev/null) in
hang) cat "$d/hang.log"; exec sleep 600 ;;
socket) cat "$d/socket.log" ;;
*) cat "$d/healthy.log" ;;
esac
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then cat "$d/table-$OMPI_COMM_WORLD_SIZE.txt"; fi
`

// ncclLines returns the NCCL_DEBUG lines of a captured log.
func ncclLines(t *testing.T, b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " NCCL INFO ") || strings.Contains(l, " NCCL WARN ") {
			out = append(out, l)
		}
	}
	return out
}

// TestRunReplayNoGPUOverMPIInNamespaces: three namespaces with real sshd,
// real Open MPI mpirun over ssh with the cluster's key and known_hosts, and
// a stand-in for all_reduce_perf replaying captured real output (no GPU
// here). The 3-node run hangs on n3 (it never reaches Init COMPLETE): it is
// killed at the timeout, named, and the 2-node run still happens; there n2
// logs NET/Socket channels: FAIL naming n2.
func TestRunReplayNoGPUOverMPIInNamespaces(t *testing.T) {
	testhost.RequireTool(t, "mpirun")
	c := testhost.StartNetCluster(t, "nccl", 3)
	data := testhost.SharedTestdata(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(data, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	trace := ncclLines(t, read("nccl-debug/nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log"))
	complete := trace[slices.IndexFunc(trace, func(l string) bool { return strings.Contains(l, "Init COMPLETE") })]
	socket := append(ncclLines(t, read("nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log")), complete)
	files := map[string][]byte{
		"all_reduce_perf": []byte(standIn),
		"healthy.log":     []byte(strings.Join(trace, "\n") + "\n"),
		"hang.log":        []byte(strings.Join(trace[:10], "\n") + "\n"),
		"socket.log":      []byte(strings.Join(socket, "\n") + "\n"),
		"table-2.txt":     read("nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"),
		"table-3.txt":     read("nccl-tests/rtx3090-inc/3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt"),
		"node2.behaviour": []byte("socket"),
		"node3.behaviour": []byte("hang"),
	}
	bin := filepath.Join(c.Dir, "replay")
	os.MkdirAll(bin, 0o755)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(bin, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var nodes strings.Builder
	for i, a := range c.Addrs {
		fmt.Fprintf(&nodes, "  - {name: n%d, ssh: root@%s, data: %s}\n", i+1, a, a)
	}
	cl, err := cluster.Parse([]byte("nodes:\n" + nodes.String() + fmt.Sprintf(`link: {layer: RoCE, rate_gbps: 100, mtu_bytes: 1024}
launcher:
  type: ssh
  known_hosts: %s
  ssh_options: ["-F", "/dev/null", "-i", "%s"]
`, c.KnownHosts(), c.KeyFile())))
	if err != nil {
		t.Fatal(err)
	}
	subnet := c.Subnet + ".0/24"
	control, err := os.MkdirTemp("", "rl") // short: sockets have a length limit
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(control)
	// mpirun's own session directory, apart from another test's mpirun on
	// this machine (the nodes have theirs: testhost gives each its own)
	t.Setenv("TMPDIR", control)
	ssh := &launch.SSH{Options: cl.Launcher.Options, KnownHosts: cl.Launcher.KnownHosts, ControlDir: control}
	// rtc ^hwloc: Debian 12's orted now and then segfaults in
	// hwloc_shmem_topology_write (a mapping at a fixed address that ASLR
	// sometimes takes); the stand-in ranks need no binding.
	l, err := launch.NewMPIRun(cl, ssh, []string{"--mca", "oob_tcp_if_include", subnet, "--mca", "rtc", "^hwloc"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The timeout must outlast a healthy launch and rank 0's whole table
	// (the 3-node run is judged on all 27 rows while n3 hangs): time one
	// ssh login (a shell whose rc files are slow makes every rank slow to
	// start), and leave room for a loaded machine (8 s once cut rank 0's
	// table in a fresh root under load).
	login := time.Now()
	if out, err := exec.Command("ssh", c.SSHArgs(c.Addrs[0], "true")...).CombinedOutput(); err != nil {
		t.Fatalf("ssh: %v %s", err, out)
	}
	timeout := 16*time.Second + 3*time.Since(login)
	var prog bytes.Buffer
	start := time.Now()
	results := filepath.Join(c.Dir, "runs", "results.jsonl")
	rs, err := Run(context.Background(), RunOptions{Cluster: cl, NodeCounts: []int{3, 2}, Tests: []string{filepath.Join(bin, "all_reduce_perf")},
		Timeout: timeout, Dir: filepath.Join(c.Dir, "runs"), Launcher: l, Results: results, Progress: &prog,
		Judge: nccl.JudgeOptions{NIC: cl.Resolved(), RailsPerNode: 1, NICSource: "cluster file"}})
	t.Logf("%.1fs (timeout %s)\n%s", time.Since(start).Seconds(), timeout, prog.String())
	for _, r := range rs {
		t.Logf("%s on %d nodes:\n%s", r.Test, r.NodeCount, dump(r.Findings))
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(results)
	h, logged, valid, err := nccl.Results.Parse(b)
	if len(rs) != 2 || err != nil || len(logged) != 2 || valid != len(b) || h.Cluster != cl.Fingerprint() || h.Nodes != 3 {
		t.Fatalf("%d results; the log: %v %+v %d records, %d of %d bytes valid\n%s", len(rs), err, h, len(logged), valid, len(b), b)
	}
	has := func(r nccl.RunResult, id string, o check.Outcome, host, text string) bool {
		return slices.ContainsFunc(r.Findings, func(f check.Finding) bool {
			return f.Check == id && f.Outcome == o && f.Host == host && strings.Contains(f.Message, text)
		})
	}
	hung := rs[0]
	// every row of rank 0's table arrives, whatever Open MPI's chunking
	for _, r := range rs {
		if r.Run == nil || len(r.Run.Rows) != 27 {
			t.Errorf("%d nodes: table rows lost: %+v", r.NodeCount, r.Run)
		}
	}
	if !hung.TimedOut || hung.Seconds > timeout.Seconds()+10 || !has(hung, "nccl.run.timeout", check.Fail, "", "n3 never logged NCCL Init COMPLETE") {
		log, _ := os.ReadFile(hung.Log)
		t.Errorf("3-node run: timed out %v after %.1fs\n%s\nlog:\n%s", hung.TimedOut, hung.Seconds, dump(hung.Findings), log)
	}
	ok := rs[1]
	if ok.TimedOut || ok.ExitCode != 0 || !has(ok, "nccl.log.socket", check.Fail, "n2", "NET/Socket") || !has(ok, "nccl.log.network", check.Pass, "n1", "NET/IB") ||
		!has(ok, "nccl.log.gdr", check.Pass, "n1", "GDRDMA") || !has(ok, "nccl.tests.busbw", check.Pass, "", "9.68 GB/s") || has(ok, "nccl.log.socket", check.Fail, "n1", "") {
		log, _ := os.ReadFile(ok.Log)
		t.Errorf("2-node run: exit %d\n%s\nlog:\n%s", ok.ExitCode, dump(ok.Findings), log)
	}
	if !slices.Contains(ok.Command, "NCCL_ALGO=Ring") || !slices.Contains(ok.Command, "NCCL_DEBUG=INFO") {
		t.Errorf("command %v", ok.Command)
	}
	// nothing of the hung run is left on n3: the reap by the run's
	// identity after the launch ended killed what mpirun's stop missed
	// (left alone, the stand-in sleeps 600 s: the wait is room for a loaded
	// machine, not for a survivor; 30 s under load)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && slices.ContainsFunc(c.PIDs(2), func(pid string) bool {
		b, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		return bytes.Contains(b, []byte("sleep"))
	}) {
		time.Sleep(200 * time.Millisecond)
	}
	for _, pid := range c.PIDs(2) {
		if b, _ := os.ReadFile("/proc/" + pid + "/cmdline"); bytes.Contains(b, []byte("sleep")) {
			t.Errorf("the hung rank still runs on n3: pid %s %q", pid, b)
		}
	}
}

package nccl

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// capture reads a real output of shared/testdata.
func capture(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// has asserts one finding by check id, outcome, host, subject and a piece
// of its message.
func has(t *testing.T, fs []check.Finding, id string, o check.Outcome, host, subject, reason string) check.Finding {
	t.Helper()
	i := slices.IndexFunc(fs, func(f check.Finding) bool {
		return f.Check == id && f.Outcome == o && f.Host == host && f.Subject == subject && strings.Contains(f.Message, reason)
	})
	if i < 0 {
		t.Errorf("missing %s %s host %q subject %q %q\n%s", o, id, host, subject, reason, dump(fs))
		return check.Finding{}
	}
	fixed(t, fs[i])
	return fs[i]
}

// fixed asserts a failure says what to do: a fix, and no empty line in it.
func fixed(t *testing.T, f check.Finding) {
	t.Helper()
	if f.Outcome == check.Fail && (len(f.Fix) == 0 || slices.Contains(f.Fix, "")) {
		t.Errorf("%s %s %q fails with fix %q", f.Check, f.Host, f.Subject, f.Fix)
	}
}

func none(t *testing.T, fs []check.Finding, id string, o check.Outcome) {
	t.Helper()
	if slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == id && f.Outcome == o }) {
		t.Errorf("unexpected %s %s\n%s", o, id, dump(fs))
	}
}

// The fatal classes of NCCL's WARNs, in the line shapes NCCL prints them
// (host:pid:tid [dev] file:line NCCL WARN …), appended to a real healthy
// log (nv_peer_memory issue 56: NET/IB over mlx5_0): each fails with the
// belief it rests on; the log alone has no fatal finding.
func TestFatalWarnsFail(t *testing.T) {
	const healthy = "nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log"
	base := capture(t, healthy)
	fs, _, err := JudgeFile("healthy.log", []byte(base), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	none(t, fs, "nccl.log.fatal", check.Fail)

	cases := []struct {
		name, lines, reason, chain string
	}{
		{"retry exceeded, wrapped over two lines, with its chain",
			"master_node:24570:24910 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 192.168.11.2<58012> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n" +
				"   localGid ::ffff:192.168.11.1 remoteGid ::ffff:192.168.11.2\n" +
				"master_node:24570:24910 [0] NCCL INFO transport/net_ib.cc:1374 -> 6\n" +
				"master_node:24570:24910 [0] NCCL INFO proxy.cc:1502 -> 6\n" +
				"master_node:24570:24910 [0] NCCL INFO proxy.cc:1556 -> 2\n",
			"error 12 is IBV_WC_RETRY_EXC_ERR: the peer stopped answering on the fabric", "transport/net_ib.cc:1374 -> 6 (ncclRemoteError), proxy.cc:1502 -> 6 (ncclRemoteError), proxy.cc:1556 -> 2 (ncclSystemError)"},
		{"ibv_create_qp",
			"master_node:24570:24907 [0] include/ibvwrap.h:262 NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory\n" +
				"master_node:24570:24907 [0] NCCL INFO transport/net_ib.cc:574 -> 2\n",
			"NCCL's call to ibv_create_qp failed: the NIC refused a queue pair", "transport/net_ib.cc:574 -> 2 (ncclSystemError)"},
		{"ibv_reg_mr",
			"master_node:24570:24907 [0] include/ibvwrap.h:132 NCCL WARN Call to ibv_reg_mr failed\n",
			"NCCL's call to ibv_reg_mr failed: memory registration failed", ""},
		{"proxy",
			"master_node:24570:24907 [0] proxy.cc:1473 NCCL WARN [Proxy Service 3] Failed to execute operation Connect from rank 3, retcode 3\n",
			"a fatal class of NCCL error", ""},
		{"timeout",
			"master_node:24570:24907 [0] misc/socket.cc:557 NCCL WARN socketProgress: Connection closed by remote peer, timeout waiting for peer\n",
			"a fatal class of NCCL error", ""},
		{"abort",
			"master_node:24570:24907 [0] init.cc:2003 NCCL WARN Communicator was aborted\n",
			"a fatal class of NCCL error", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, _, err := JudgeFile("x.log", []byte(base+c.lines), JudgeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f := has(t, fs, "nccl.log.fatal", check.Fail, "master_node", "NCCL WARN", c.reason)
			if c.name[:5] == "retry" && !strings.Contains(f.Message, "localGid ::ffff:192.168.11.1 remoteGid") {
				t.Errorf("the WARN's continuation was lost: %s", f.Message)
			}
			if c.chain != "" && !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool { return e.Value == c.chain }) {
				t.Errorf("chain %q not in %+v", c.chain, f.Evidence)
			}
			none(t, fs, "nccl.log.warn", check.Warn)
		})
	}
}

func TestIBVWCStatus(t *testing.T) {
	for n, want := range map[int]string{5: "IBV_WC_WR_FLUSH_ERR", 10: "IBV_WC_REM_ACCESS_ERR", 12: "IBV_WC_RETRY_EXC_ERR", 13: "IBV_WC_RNR_RETRY_EXC_ERR", 21: "IBV_WC_GENERAL_ERR"} {
		if got, _ := IBVWCStatus(n); got != want {
			t.Errorf("%d: %s, want %s", n, got, want)
		}
	}
	if got, _ := IBVWCStatus(22); got != "" {
		t.Errorf("22: %s", got)
	}
}

// The old log format (NCCL 2.3: no "Using network" line, rings printed as
// "Ring 00 : 0 -> 1 [send] via NET/IB/0") says the network in its channel
// lines. The same form via NET/Socket is the issue-367 capture's failure.
func TestOldRingFormatNetwork(t *testing.T) {
	old := "c6ad99331184:117277:117384 [0] NCCL INFO Ring 00 : 15 -> 0 [receive] via NET/IB/0\n" +
		"c6ad99331184:117277:117384 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/IB/0/GDRDMA\n"
	fs, _, err := JudgeFile("old.log", []byte(old), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	has(t, fs, "nccl.log.network", check.Pass, "c6ad99331184", "network", "channels cross the network via NET/IB (2 channel line(s)")
	none(t, fs, "nccl.log.network", check.Unknown)
	fs, _, _ = JudgeFile("367.log", []byte(capture(t, "nccl-debug/nccl-issue-367_old-ring-format_NET-Socket_shm_excerpt.log")), JudgeOptions{})
	has(t, fs, "nccl.log.socket", check.Fail, "c6ad99331184", "inter-node channels", "use NET/Socket")
}

// NCCL_IB_DISABLE=1 however it is set makes a TCP run; the real 2-node
// RoCE capture (its own mpirun line) is the healthy twin.
func TestIBDisabledIsTCP(t *testing.T) {
	const rel = "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"
	orig := capture(t, rel)
	opt := JudgeOptions{NIC: linkrate.Link{Layer: linkrate.RoCE, RateGbps: 100, MTUBytes: 1024}, NICSource: "test"}
	fs, _, _ := JudgeFile("run.txt", []byte(orig), opt)
	none(t, fs, "nccl.log.socket", check.Fail)
	has(t, fs, "nccl.tests.busbw", check.Pass, "", "run.txt", "84% of the NIC ceiling")
	first, rest, _ := strings.Cut(orig, "\n")
	for _, c := range []struct{ name, launch, source string }{
		{"mpirun -x", strings.Replace(first, "--hostfile", "-x NCCL_IB_DISABLE=1 --hostfile", 1), "launch"},
		{"srun --export", "$ srun -N2 --export=ALL,NCCL_DEBUG=WARN,NCCL_IB_DISABLE=1 ./all_reduce_perf -b 8 -e 512M -f 2", "launch"},
		{"export", "$ export NCCL_IB_DISABLE=1\n" + first, "launch"},
		{"set by environment", first + "\nworker1:30541:30541 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.", "worker1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, _, err := JudgeFile("run.txt", []byte(c.launch+"\n"+rest), opt)
			if err != nil {
				t.Fatal(err)
			}
			host := ""
			if c.source == "worker1" {
				host = "worker1"
			}
			has(t, fs, "nccl.log.socket", check.Fail, host, "NCCL_IB_DISABLE", "a TCP run judged as RDMA")
		})
	}
	// NCCL_IB_DISABLE=0 (the nv_peer_memory capture sets it so) is RDMA
	fs, _, _ = JudgeFile("x", []byte(capture(t, "nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log")), JudgeOptions{})
	none(t, fs, "nccl.log.socket", check.Fail)
	// the user said TCP was meant
	fs, _, _ = JudgeFile("x", []byte("$ export NCCL_IB_DISABLE=1\n"+rest), JudgeOptions{AllowSocket: true})
	none(t, fs, "nccl.log.socket", check.Fail)
}

// Two tables in one file, each under its own "Collective test starting"
// header, in a file whose name says all_reduce: the alltoall table is
// judged as alltoall ((n−1)/n), the all_reduce one as all_reduce.
func TestCollectivePerTableNotFileName(t *testing.T) {
	a2a := capture(t, "nccl-tests/superbench/nccl_alltoall.log")
	ar := capture(t, "nccl-tests/superbench/nccl_allreduce.log")
	b := "# Collective test starting: alltoall_perf\n" + a2a + "# Collective test starting: all_reduce_perf\n" + ar
	_, res, err := JudgeFile("all_reduce_results.log", []byte(b), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs := res.(*FileResult).Runs
	if len(runs) != 2 || runs[0].Collective != "alltoall" || runs[1].Collective != "all_reduce" {
		for _, r := range runs {
			t.Logf("%q", r.Collective)
		}
		t.Fatalf("want alltoall then all_reduce, got %d runs", len(runs))
	}
	// the superbench files name no collective at all: the alltoall table's
	// count column (one rank's share) says it is of the (n−1)/n family,
	// never all_reduce, whatever the file is called
	fs, _, _ := JudgeFile("nccl_allreduce.log", []byte(a2a), JudgeOptions{Nodes: 2})
	// the output's own host (one node) wins over --nodes
	f := has(t, fs, "nccl.tests.busbw", check.Unknown, "", "nccl_allreduce.log", "one node (localhost)")
	if !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool {
		return strings.Contains(e.Value, "all_gather/alltoall/gather/scatter over 8 ranks: busbw = algbw × 0.875")
	}) {
		t.Errorf("factor: %+v", f.Evidence)
	}
}

// synthAllReduce is an nccl-tests 2.17 all_reduce table over n ranks with
// no rank lines (a paste from the column header), the busbw plateau at
// busbw GB/s, values printed to two decimals as nccl-tests prints them.
func synthAllReduce(n int, busbw float64) string {
	var b strings.Builder
	b.WriteString("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	b.WriteString("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
	f := 2 * float64(n-1) / float64(n)
	for size := int64(1 << 20); size <= 8<<30; size *= 2 {
		bw := busbw * math.Min(1, float64(size)/float64(256<<20))
		alg := bw / f
		us := float64(size) / (alg * 1e3)
		fmt.Fprintf(&b, "%12d  %12d     float     sum      -1  %7.1f  %6.2f  %6.2f      0  %7.1f  %6.2f  %6.2f      0\n", size, size/4, us, alg, bw, us, alg, bw)
	}
	b.WriteString("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.0\n")
	return b.String()
}

// A 64-rank, 8-node all_reduce at ~35% of its NIC with no host lines:
// without --nodes busbw is unknown (the fix names --nodes) and the ranks
// are a range, never 73; with --nodes 8 it fails; at 85% it passes.
func TestNodesFlagForOutputWithoutHosts(t *testing.T) {
	ndr := JudgeOptions{NIC: linkrate.Link{Layer: linkrate.InfiniBand, RateGbps: 400, Speed: "NDR", MTUBytes: 4096}, RailsPerNode: 1, NICSource: "--expect-rate 400"}
	ceiling := linkrate.BusbwCeilingGBps(ndr.NIC, 1)
	slow := []byte(synthAllReduce(64, 0.35*ceiling))
	fs, _, err := JudgeFile("paste.txt", slow, ndr)
	if err != nil {
		t.Fatal(err)
	}
	f := has(t, fs, "nccl.tests.busbw", check.Unknown, "", "paste.txt", "names no hosts and --nodes was not given")
	if len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "--nodes N") {
		t.Errorf("fix %q does not name --nodes", f.Fix)
	}
	if strings.Contains(f.Message, "73") || !strings.Contains(f.Message, "cannot tell which") {
		t.Errorf("ranks guessed from rounded numbers: %s", f.Message)
	}
	opt := ndr
	opt.Nodes, opt.RanksPerNode = 8, 8
	fs, _, _ = JudgeFile("paste.txt", slow, opt)
	f = has(t, fs, "nccl.tests.busbw", check.Fail, "", "paste.txt", "35% of the NIC ceiling")
	if !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool { return strings.Contains(e.Value, "all_reduce over 64 ranks") }) {
		t.Errorf("64 ranks not from the flags: %+v", f.Evidence)
	}
	fs, _, _ = JudgeFile("paste.txt", []byte(synthAllReduce(64, 0.85*ceiling)), opt)
	has(t, fs, "nccl.tests.busbw", check.Pass, "", "paste.txt", "85% of the NIC ceiling")
}

// inf, NaN and a busbw beyond physics fail; the real table they are
// written into (2 nodes over 100GbE RoCE) is the healthy twin.
func TestBusbwBeyondPhysicsFails(t *testing.T) {
	const rel = "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"
	orig := capture(t, rel)
	opt := JudgeOptions{NIC: linkrate.Link{Layer: linkrate.RoCE, RateGbps: 100, MTUBytes: 1024}, NICSource: "test"}
	fs, _, _ := JudgeFile("run.txt", []byte(orig), opt)
	none(t, fs, "nccl.tests.measurement", check.Fail)
	lastRow := "   536870912     134217728     float     sum      -1    54959    9.77    9.77      0    55029    9.76    9.76      0"
	if !strings.Contains(orig, lastRow) {
		t.Skip("the capture's last row changed")
	}
	for _, c := range []struct{ name, row, reason string }{
		{"9,999,999 GB/s", strings.Replace(lastRow, "    9.77    9.77", "    9.77 9999999", 1), "busbw 9.999999e+06 GB/s at 512 MiB is beyond any GPU interconnect or NIC"},
		{"inf", strings.Replace(lastRow, "    9.77    9.77", "     inf     inf", 1), "out-of-place algbw is +Inf at 512 MiB: not a measurement"},
		{"nan", strings.Replace(lastRow, "    9.77    9.77", "     nan     nan", 1), "out-of-place algbw is NaN at 512 MiB: not a measurement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, _, _ := JudgeFile("run.txt", []byte(strings.Replace(orig, lastRow, c.row, 1)), opt)
			has(t, fs, "nccl.tests.measurement", check.Fail, "", "run.txt", c.reason)
			none(t, fs, "nccl.tests.busbw", check.Pass)
		})
	}
	// above 105% of what one 25GbE rail carries with NCCL_ALGO=Ring, or
	// for a collective whose data no reduction shrinks: a failure, never good
	slowNIC := JudgeOptions{NIC: linkrate.Link{Layer: linkrate.RoCE, RateGbps: 25, MTUBytes: 1024}, NICSource: "test: 25GbE", Algo: "Ring"}
	fs, _, _ = JudgeFile("run.txt", []byte(orig), slowNIC)
	has(t, fs, "nccl.tests.busbw", check.Fail, "", "run.txt", "with NCCL_ALGO=Ring is")
	slowNIC.Algo = ""
	fs, _, _ = JudgeFile("ag.txt", []byte(strings.Replace(orig, "+ mpirun", "# Collective test starting: all_gather_perf\n+ mpirun", 1)), slowNIC)
	has(t, fs, "nccl.tests.busbw", check.Fail, "", "ag.txt", "beyond physics")
}

// One busbw ceiling: the judge's is linkrate's, 200GbE RoCE at the
// default RoCE MTU is one number.
func TestOneBusbwCeiling(t *testing.T) {
	l := linkrate.Link{Layer: linkrate.RoCE, RateGbps: 200}
	want := linkrate.BusbwCeilingGBps(l, 1)
	l.MTUBytes = linkrate.DefaultMTU(linkrate.RoCE)
	if got := l.CeilingGbps() / 8; math.Abs(got-want) > 1e-9 {
		t.Errorf("%g vs %g", got, want)
	}
	_, s := JudgeTests("x", &TestRun{Format: "text", Ranks: []TestRank{{0, "a", 0, "", ""}, {1, "b", 0, "", ""}},
		Rows: []Row{{SizeBytes: 1 << 30, Count: 1 << 28, Type: "float", Redop: "sum", OutOfPlace: Perf{TimeUS: 1, AlgbwGBps: 20, BusbwGBps: 20}}}},
		JudgeOptions{NIC: l, RailsPerNode: 1})
	if s.ExpectedGBps != want {
		t.Errorf("judge ceiling %g, linkrate %g", s.ExpectedGBps, want)
	}
}

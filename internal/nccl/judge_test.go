package nccl

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// want is one finding a file must produce: check id, outcome, host and a
// piece of its message (the reason).
type want struct {
	check   string
	outcome check.Outcome
	host    string
	subject string
	reason  string
}

var hdr200 = JudgeOptions{NIC: linkrate.Link{Layer: linkrate.InfiniBand, RateGbps: 200, Speed: "HDR", MTUBytes: 4096}, RailsPerNode: 1, NICSource: "test: one 4X HDR rail"}

func roce100(mtu int) JudgeOptions {
	return JudgeOptions{NIC: linkrate.Link{Layer: linkrate.RoCE, RateGbps: 100, MTUBytes: mtu}, RailsPerNode: 1, NICSource: "test: 100GbE"}
}

// TestJudgeEveryCapturedFile judges every nccl-tests output and NCCL_DEBUG
// log in shared/testdata and asserts the verdict with its reason.
func TestJudgeEveryCapturedFile(t *testing.T) {
	cases := map[string]struct {
		opt   JudgeOptions
		worst check.Outcome
		rows  int
		wants []want
	}{
		"nccl-tests/superbench/nccl_allreduce.log": {worst: check.Unknown, rows: 34, wants: []want{
			{"nccl.tests.correctness", check.Unknown, "", "nccl_allreduce.log", "not validated"},
			{"nccl.tests.busbw", check.Unknown, "", "nccl_allreduce.log", "one node (localhost)"},
			{"nccl.tests.complete", check.Pass, "", "nccl_allreduce.log", "34 sizes up to 8 GiB"}}},
		"nccl-tests/superbench/nccl_allgather.log":     {worst: check.Unknown, rows: 34, wants: []want{{"nccl.tests.busbw", check.Unknown, "", "nccl_allgather.log", "220.85 GB/s"}}},
		"nccl-tests/superbench/nccl_alltoall.log":      {worst: check.Unknown, rows: 34, wants: []want{{"nccl.tests.busbw", check.Unknown, "", "nccl_alltoall.log", "222.90 GB/s"}}},
		"nccl-tests/superbench/nccl_broadcast.log":     {worst: check.Unknown, rows: 34, wants: []want{{"nccl.tests.busbw", check.Unknown, "", "nccl_broadcast.log", "232.33 GB/s"}}},
		"nccl-tests/superbench/nccl_reduce.log":        {worst: check.Unknown, rows: 34, wants: []want{{"nccl.tests.busbw", check.Unknown, "", "nccl_reduce.log", "230.33 GB/s"}}},
		"nccl-tests/superbench/nccl_reducescatter.log": {worst: check.Unknown, rows: 34, wants: []want{{"nccl.tests.busbw", check.Unknown, "", "nccl_reducescatter.log", "229.15 GB/s"}}},
		"nccl-tests/rtx3090-inc/1gpu-1nic_INC_rdma-mtu256.txt": {worst: check.Unknown, rows: 27, wants: []want{
			{"nccl.tests.busbw", check.Unknown, "", "1gpu-1nic_INC_rdma-mtu256.txt", "single rank"}, {"nccl.tests.correctness", check.Pass, "", "1gpu-1nic_INC_rdma-mtu256.txt", "#wrong 0"}}},
		"nccl-tests/rtx3090-inc/1gpu-1nic_NO-INC.txt": {worst: check.Warn, rows: 27, wants: []want{
			{"nccl.tests.implausible", check.Warn, "", "1gpu-1nic_NO-INC.txt", "did no work"}}},
		"nccl-tests/rtx3090-inc/2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt": {opt: roce100(256), worst: check.Fail, rows: 27, wants: []want{
			{"nccl.tests.correctness", check.Fail, "", "2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt", "108 sizes out of bounds, #wrong up to 2.68435e+08 at 512 MiB"},
			// the bandwidth looks plausible; the run is still wrong
			{"nccl.tests.busbw", check.Warn, "", "2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt", "7.32 GB/s is 77% of the NIC ceiling 9.5 GB/s"}}},
		"nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt": {opt: roce100(1024), worst: check.Pass, rows: 27, wants: []want{
			{"nccl.tests.busbw", check.Pass, "", "2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt", "busbw plateau 9.68 GB/s is 84% of the NIC ceiling 11.6 GB/s"}}},
		"nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu256.txt": {worst: check.Unknown, rows: 27, wants: []want{
			{"nccl.tests.busbw", check.Unknown, "", "2node-2gpu-2nic_NO-INC_rdma-mtu256.txt", "NIC rate is unknown"}}},
		"nccl-tests/rtx3090-inc/3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt": {opt: roce100(256), worst: check.Pass, rows: 27, wants: []want{
			{"nccl.tests.busbw", check.Pass, "", "3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt", "7.96 GB/s is 84%"}}},
		"nccl-tests/alps-gh200-slingshot/2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt": {worst: check.Warn, rows: 25, wants: []want{
			{"nccl.tests.plateau", check.Warn, "", "2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt", "still rising at the largest size (128 MiB)"},
			{"nccl.tests.complete", check.Pass, "", "2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt", "concluded"}}},
		"nccl-tests/json/nccl-tests-pr-318_alltoall_json_TRUNCATED.txt": {worst: check.Fail, rows: 2, wants: []want{
			{"nccl.tests.complete", check.Fail, "", "nccl-tests-pr-318_alltoall_json_TRUNCATED.txt", "JSON output ends mid-document after 2 sizes"}}},
		"nccl-debug/nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log": {opt: hdr200, worst: check.Fail, rows: 85, wants: []want{
			{"nccl.tests.complete", check.Fail, "", "nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", "without \"concluded\""},
			{"nccl.tests.plateau", check.Warn, "", "nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", "falls at large sizes: 20.87 GB/s at 256 MiB"},
			{"nccl.tests.busbw", check.Fail, "", "nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", "10.76 GB/s is 43% of the NIC ceiling 24.8 GB/s, after reaching 84% at 256 MiB: the path is RDMA"},
			{"nccl.log.network", check.Pass, "n013", "network", "mlx5_0:1/RoCE mlx5_2:1/IB"},
			{"nccl.log.gdr-level", check.Warn, "n013", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_LEVEL=SYS forces GPUDirect RDMA"},
			{"nccl.log.mixed-layers", check.Warn, "n013", "NET/IB devices", "IB: mlx5_2; RoCE: mlx5_0"},
			{"nccl.log.gdr", check.Pass, "n013", "GPUDirect RDMA", "6 channel(s) via /GDRDMA"},
			{"nccl.log.silent", check.Unknown, "n014", "NCCL_DEBUG", "not assumed"}}},
		"nccl-debug/alps-gh200_aws-ofi-plugin-not-found_WARN.log": {worst: check.Fail, wants: []want{
			{"nccl.log.plugin", check.Fail, "nid006365", "net plugin", "network AWS Libfabric not found"},
			{"nccl.log.failure", check.Fail, "nid006352", "nccl-tests", "invalid usage"},
			{"nccl.log.network", check.Pass, "nid006352", "network", "AWS Libfabric"}}},
		"nccl-debug/azure-nd96isr-h100-v5_mixed-IB-RoCE-devices_excerpt.log": {worst: check.Warn, wants: []want{
			{"nccl.log.mixed-layers", check.Warn, "elsah100", "NET/IB devices", "RoCE: mlx5_1"},
			{"nccl.log.warn", check.Pass, "elsah100", "NCCL WARN", "harmless: NCCL notes it and carries on as meant (a topology attribute a VM or container does not expose, a deprecated setting): Attribute busid of node nic not found"},
			{"nccl.log.gdr", check.Pass, "elsah100", "GPUDirect RDMA", "2 HCA(s) enabled"}}},
		"nccl-debug/nccl-issue-1232_socket-ifname_mpi-prefixed_excerpt.log": {worst: check.Unknown, wants: []want{
			{"nccl.log.network", check.Unknown, "node0", "network", "does not say which network"},
			{"nccl.log.network", check.Unknown, "node2", "network", "does not say which network"},
			{"nccl.log.plugin", check.Pass, "node2", "net plugin", "internal"}}},
		"nccl-debug/nccl-issue-1537_RoCE_GDR-disabled_excerpt.log": {worst: check.Fail, wants: []want{
			{"nccl.log.gdr", check.Fail, "hostname1", "GPUDirect RDMA", "NCCL found no GPUDirect RDMA support for mlx5_0, mlx5_1 (no nvidia-peermem or DMA-BUF registered)"},
			{"nccl.log.network", check.Pass, "hostname1", "network", "mlx5_0:1/RoCE mlx5_1:1/RoCE"}}},
		"nccl-debug/nccl-issue-1866_H100-2vm_nccl-2.27.6_init_excerpt.log": {worst: check.Unknown, wants: []want{
			{"nccl.log.version", check.Pass, "", "NCCL version", "2.27.6+cuda13.0 on cl4-gpu03-vm, cl4-gpu04-vm"},
			{"nccl.log.network", check.Unknown, "cl4-gpu04-vm", "network", "does not say"}}},
		"nccl-debug/nccl-issue-367_old-ring-format_NET-Socket_shm_excerpt.log": {worst: check.Fail, wants: []want{
			{"nccl.log.socket", check.Fail, "c6ad99331184", "inter-node channels", "NET/Socket"}}},
		"nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log": {worst: check.Fail, wants: []want{
			{"nccl.log.socket", check.Fail, "ip-172-31-13-129", "inter-node channels", "NET/Socket"},
			{"nccl.log.socket", check.Fail, "ip-172-31-0-112", "inter-node channels", "NET/Socket"}}},
		"nccl-debug/nccl-issue-952_hpcx-IBext-plugin_NET-IB-no-device_excerpt.log": {worst: check.Pass, wants: []want{
			{"nccl.log.network", check.Pass, "<cluster_name>", "network", "IBext"}}},
		"nccl-debug/nccl-tests-issue-188_no-plugin-internal-impl_excerpt.log": {worst: check.Unknown, wants: []want{
			{"nccl.log.plugin", check.Pass, "user", "net plugin", "internal"}, {"nccl.log.network", check.Unknown, "user", "network", "does not say"}}},
		"nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log": {worst: check.Unknown, wants: []want{
			{"nccl.log.network", check.Pass, "master_node", "network", "NET/IB over mlx5_0:1/IB; OOB ib0"},
			// the second node logged no network line: named, not assumed
			{"nccl.log.network", check.Unknown, "secondary_node", "network", "does not say"}}},
		"nccl-debug/sglang-2node-roce-ofi-fallback-to-ib_excerpt-A.log": {worst: check.Warn, wants: []want{
			{"nccl.log.plugin", check.Warn, "tpgds-aihub0008", "net plugin", "failed to initialise; NCCL fell back to IB"},
			{"nccl.log.network", check.Pass, "tpgds-aihub0008", "network", "mlx5_11:1/RoCE"}}},
	}
	base := testhost.SharedTestdata(t)
	var all []string
	for _, dir := range []string{"nccl-tests", "nccl-debug"} {
		filepath.WalkDir(filepath.Join(base, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".md") {
				rel, _ := filepath.Rel(base, p)
				all = append(all, rel)
			}
			return nil
		})
	}
	for _, rel := range all {
		if _, ok := cases[rel]; !ok {
			t.Errorf("%s has no case: every captured file must be judged", rel)
		}
	}
	for rel, c := range cases {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(base, rel))
			if err != nil {
				t.Fatal(err)
			}
			if !Sniff(b) {
				t.Fatal("Sniff says no")
			}
			fs, payload, err := JudgeFile(rel, b, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			worst := check.Pass
			for _, f := range fs {
				if f.Outcome.Rank() < worst.Rank() {
					worst = f.Outcome
				}
			}
			if worst != c.worst {
				t.Errorf("worst outcome %s, want %s\n%s", worst, c.worst, dump(fs))
			}
			for _, f := range fs {
				fixed(t, f)
			}
			if c.rows > 0 {
				runs := payload.(*FileResult).Runs
				if len(runs) != 1 || len(runs[0].Rows) != c.rows {
					t.Errorf("want 1 run of %d rows, got %d runs", c.rows, len(runs))
				}
			}
			for _, w := range c.wants {
				if !slices.ContainsFunc(fs, func(f check.Finding) bool {
					return f.Check == w.check && f.Outcome == w.outcome && f.Host == w.host && f.Subject == w.subject && strings.Contains(f.Message, w.reason)
				}) {
					t.Errorf("missing %s %s host %q subject %q %q\n%s", w.outcome, w.check, w.host, w.subject, w.reason, dump(fs))
				}
			}
		})
	}
}

func dump(fs []check.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Outcome, f.Check, f.Host, f.Message)
	}
	return b.String()
}

// TestTreeAboveNICExplained: a 2-node busbw above the NIC limit is
// explained (Tree/NVLS), not praised; with NCCL_ALGO=Ring it is a failure
// of the expectation.
func TestTreeAboveNICExplained(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"))
	opt := JudgeOptions{NIC: linkrate.Link{Layer: linkrate.RoCE, RateGbps: 50, MTUBytes: 1024}}
	fs, _, _ := JudgeFile("x", b, opt)
	if !slices.ContainsFunc(fs, func(f check.Finding) bool {
		return f.Check == "nccl.tests.busbw" && f.Outcome == check.Warn && strings.Contains(f.Message, "Tree/NVLS/CollNet")
	}) {
		t.Errorf("no Tree explanation:\n%s", dump(fs))
	}
	opt.Algo = "Ring"
	fs, _, _ = JudgeFile("x", b, opt)
	if !slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == "nccl.tests.busbw" && f.Outcome == check.Fail }) {
		t.Errorf("Ring above the NIC limit not failed:\n%s", dump(fs))
	}
}

// TestGDRExpectedButOff: GDRDMA absent where the prediction said on is FAIL.
func TestGDRExpectedButOff(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-debug/nccl-issue-1537_RoCE_GDR-disabled_excerpt.log"))
	fs, _, _ := JudgeFile("x", b, JudgeOptions{GDRExpected: map[string]bool{"hostname1": true}})
	if !slices.ContainsFunc(fs, func(f check.Finding) bool {
		return f.Check == "nccl.log.gdr" && f.Outcome == check.Fail && strings.Contains(f.Message, "prediction")
	}) {
		t.Errorf("not failed:\n%s", dump(fs))
	}
	// the host's snapshot predicted GPUDirect off (its GPUs sit too far
	// from the NICs): the missing peer memory costs nothing more, a warning
	fs, _, _ = JudgeFile("x", b, JudgeOptions{GDRExpected: map[string]bool{"hostname1": false}})
	if !slices.ContainsFunc(fs, func(f check.Finding) bool {
		return f.Check == "nccl.log.gdr" && f.Outcome == check.Warn && f.Host == "hostname1"
	}) || check.Failed(fs) {
		t.Errorf("predicted off, yet not a lone warning:\n%s", dump(fs))
	}
}

func TestBusFactor(t *testing.T) {
	for _, c := range []struct {
		coll string
		n    int
		want float64
	}{{"all_reduce", 8, 1.75}, {"all_reduce", 2, 1}, {"all_gather", 4, 0.75}, {"reduce_scatter", 2, 0.5}, {"alltoall", 8, 0.875}, {"broadcast", 16, 1}, {"sendrecv", 2, 1}} {
		if f, ok := BusFactor(c.coll, c.n); !ok || f != c.want {
			t.Errorf("%s n=%d: %v, want %v", c.coll, c.n, f, c.want)
		}
	}
	if _, ok := BusFactor("nope", 2); ok {
		t.Error("unknown collective has a factor")
	}
}

func TestNotNCCL(t *testing.T) {
	if _, _, err := JudgeFile("ibstat.txt", []byte("CA 'mlx5_0'\n\tPort 1:\n"), JudgeOptions{}); err == nil || !strings.Contains(err.Error(), "ibstat.txt") {
		t.Errorf("err = %v", err)
	}
}

// FuzzParseTests: rows are never invented (each row's size is a data line
// of the input, sizes never go down within a table of the real layout),
// and a table of N well-formed data rows yields N rows whatever stray
// lines are mixed in.
func FuzzParseTests(f *testing.F) {
	base := "../../../shared/testdata/"
	for _, p := range []string{"nccl-tests/superbench/nccl_alltoall.log", "nccl-tests/rtx3090-inc/2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt", "nccl-tests/json/nccl-tests-pr-318_alltoall_json_TRUNCATED.txt"} {
		if b, err := os.ReadFile(base + p); err == nil {
			f.Add(b, []byte("hostname:1:1 [0] NCCL INFO x\n"), uint8(3))
		}
	}
	f.Add([]byte("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"), []byte("Connect QP\n"), uint8(1))
	f.Fuzz(func(t *testing.T, doc, stray []byte, n uint8) {
		// property 1: every row's size and count appear as the first fields of an input line
		for _, r := range ParseTests(doc) {
			if r.Format != "text" {
				continue
			}
			for _, row := range r.Rows {
				if !bytes.Contains(doc, []byte(fmt.Sprint(row.SizeBytes))) {
					t.Fatalf("row of size %d is not in the input", row.SizeBytes)
				}
			}
		}
		// property 2: Open MPI tags inserted anywhere in a row (a chunk
		// boundary) change nothing
		if len(doc) > 0 {
			at := int(n) % (len(doc) + 1)
			tagged := append(append(append([]byte{}, doc[:at]...), "[1,0]<stdout>:"...), doc[at:]...)
			if a, b := ParseTests(doc), ParseTests(tagged); len(a) != len(b) || (len(a) > 0 && len(a[0].Rows) != len(b[0].Rows)) {
				t.Fatalf("a tag at %d changed the parse", at)
			}
		}
		// property 3: a built table of n rows with stray lines between them yields n rows, in order
		if bytes.ContainsAny(stray, "\r\n") || len(bytes.Fields(stray)) == 0 || bytes.HasPrefix(bytes.TrimSpace(stray), []byte("#")) {
			return
		}
		var b bytes.Buffer
		b.WriteString("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n")
		b.WriteString("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
		for i := 0; i < int(n%40); i++ {
			fmt.Fprintf(&b, "%12d %12d float sum -1 %d.5 1.00 1.00 0 2.5 1.00 1.00 N/A\n", 8<<i, 2<<i, i)
			b.Write(stray)
			b.WriteByte('\n')
		}
		b.WriteString("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1\n")
		runs := ParseTests(b.Bytes())
		if len(runs) != 1 {
			t.Fatalf("%d runs", len(runs))
		}
		if got := len(runs[0].Rows); got != int(n%40) {
			t.Fatalf("%d rows from %d (stray %q)", got, n%40, stray)
		}
		for i, row := range runs[0].Rows {
			if row.SizeBytes != 8<<i || row.InPlace.Checked || !row.OutOfPlace.Checked {
				t.Fatalf("row %d: %+v", i, row)
			}
		}
	})
}

// FuzzParseDebug: every channel found is a line of the input that says
// "via", every host found names a line, and the count of NCCL lines never
// exceeds the input's lines.
func FuzzParseDebug(f *testing.F) {
	base := "../../../shared/testdata/nccl-debug/"
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if b, err := os.ReadFile(base + e.Name()); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := ParseDebug(b)
		if d.Lines > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d NCCL lines from %d lines", d.Lines, bytes.Count(b, []byte("\n"))+1)
		}
		for _, h := range d.Hosts {
			if !bytes.Contains(b, []byte(h.Host)) {
				t.Fatalf("host %q not in input", h.Host)
			}
			for _, c := range h.Channels {
				if !bytes.Contains(b, []byte("via "+c.Transport)) {
					t.Fatalf("channel transport %q not in input", c.Transport)
				}
			}
		}
	})
}

// TestOpenMPIChunkTag: Open MPI 4.1 --tag-output tags each forwarded chunk,
// so a row straddling a chunk boundary gets a second tag mid-line (seen
// with mpirun 4.1.4 here at byte 4096 of rank 0's output). No row is lost.
func TestOpenMPIChunkTag(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-tests/rtx3090-inc/3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const tag = "[1,0]<stdout>:"
	var out bytes.Buffer
	// Open MPI tags the start of every chunk and every line inside it
	for _, chunk := range [][]byte{b[:4096], b[4096:]} {
		for _, l := range strings.SplitAfter(string(chunk), "\n") {
			if l != "" {
				out.WriteString(tag + l)
			}
		}
	}
	tagged := out.Bytes()
	if bytes.Count(tagged, []byte(tag)) <= bytes.Count(b, []byte("\n")) {
		t.Fatal("no mid-line tag made")
	}
	runs := ParseTests(tagged)
	if len(runs) != 1 || len(runs[0].Rows) != 27 || runs[0].StrayLines != 0 {
		t.Fatalf("%d runs, rows %d, stray %d", len(runs), len(runs[0].Rows), runs[0].StrayLines)
	}
}

// TestTwoRunsInOneFile: a file holding two runs (a healthy and a degraded
// one, as people paste them) yields two runs judged apart.
func TestTwoRunsInOneFile(t *testing.T) {
	d := testhost.SharedTestdata(t)
	a, _ := os.ReadFile(filepath.Join(d, "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"))
	b, _ := os.ReadFile(filepath.Join(d, "nccl-tests/rtx3090-inc/2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt"))
	fs, p, err := JudgeFile("two.txt", append(a, b...), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs := p.(*FileResult).Runs
	if len(runs) != 2 || len(runs[0].Rows) != 27 || len(runs[1].Rows) != 27 {
		t.Fatalf("%d runs", len(runs))
	}
	if !slices.ContainsFunc(fs, func(f check.Finding) bool {
		return f.Subject == "two.txt run 2" && f.Check == "nccl.tests.correctness" && f.Outcome == check.Fail
	}) || slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Subject == "two.txt run 1" && f.Outcome == check.Fail }) {
		t.Errorf("%s", dump(fs))
	}
}

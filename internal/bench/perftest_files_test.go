package bench

import (
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

// Every real perftest output in the shared test data, judged: each
// finding as outcome, check ID and what its subject adds to the file name
// (the run, for files holding several). The rate is the one PROVENANCE.md
// gives for the capture ("" when it gives none). A reviewed table: a
// change in any verdict shows here.
func TestJudgeEveryPerftestFile(t *testing.T) {
	root := testhost.SharedTestdata(t)
	cases := []struct {
		file, rate string
		want       []string // "refused" for a file that is not perftest output
	}{
		{"perftest/azure-hbv3_ib_send_bw_all_client.txt", "4X HDR", []string{"pass bench.perftest.mtu", "pass bench.perftest.bandwidth", "pass bench.perftest.warning"}},
		{"perftest/azure-hbv3_ib_send_bw_all_server.txt", "4X HDR", []string{"pass bench.perftest.mtu", "pass bench.perftest.bandwidth", "pass bench.perftest.warning"}},
		{"perftest/azure-hbv3_ib_send_lat_all_server.txt", "4X HDR", []string{"pass bench.perftest.mtu", "warn bench.perftest.latency"}},
		{"perftest/azure-hbv3_ib_write_bw_loopback_interleaved.txt", "4X HDR", []string{"pass bench.perftest.mtu", "fail bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt", "4X NDR", []string{"pass bench.perftest.mtu run 1 of 4 (Send BW Test)", "pass bench.perftest.bandwidth run 1 of 4 (Send BW Test)", "pass bench.perftest.warning run 1 of 4 (Send BW Test)", "pass bench.perftest.mtu run 2 of 4 (Send Latency Test)", "warn bench.perftest.latency run 2 of 4 (Send Latency Test)", "warn bench.perftest.warning run 2 of 4 (Send Latency Test)", "pass bench.perftest.mtu run 3 of 4 (RDMA_Read BW Test)", "fail bench.perftest.bandwidth run 3 of 4 (RDMA_Read BW Test)", "warn bench.perftest.warning run 3 of 4 (RDMA_Read BW Test)", "pass bench.perftest.mtu run 4 of 4 (RDMA_Write BW Test)", "pass bench.perftest.bandwidth run 4 of 4 (RDMA_Write BW Test)", "pass bench.perftest.warning run 4 of 4 (RDMA_Write BW Test)"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_read_bw.txt", "4X NDR", []string{"pass bench.perftest.mtu", "fail bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_send_bw.txt", "4X NDR", []string{"pass bench.perftest.mtu", "pass bench.perftest.bandwidth", "pass bench.perftest.warning"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_send_lat.txt", "4X NDR", []string{"pass bench.perftest.mtu", "warn bench.perftest.latency", "warn bench.perftest.warning"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_write_bw.txt", "4X NDR", []string{"pass bench.perftest.mtu", "pass bench.perftest.bandwidth", "pass bench.perftest.warning"}},
		{"perftest/json/perftest-issue-216_rxe0_ib_write_lat_out_json_INVALID-JSON.txt", "", []string{"refused"}},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_atomic_bw_roce_client.txt", "", []string{"warn bench.perftest.mtu", "unknown bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_read_bw_roce_client.txt", "", []string{"warn bench.perftest.mtu", "unknown bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt", "", []string{"warn bench.perftest.mtu", "unknown bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt", "4X QDR", []string{"warn bench.perftest.mtu run 1 of 9 (RDMA_Write BW Test)", "pass bench.perftest.bandwidth run 1 of 9 (RDMA_Write BW Test)", "warn bench.perftest.mtu run 2 of 9 (RDMA_Write Latency Test)", "pass bench.perftest.latency run 2 of 9 (RDMA_Write Latency Test)", "warn bench.perftest.mtu run 3 of 9 (RDMA_Read BW Test)", "pass bench.perftest.bandwidth run 3 of 9 (RDMA_Read BW Test)", "warn bench.perftest.mtu run 4 of 9 (RDMA_Read BW Test)", "pass bench.perftest.bandwidth run 4 of 9 (RDMA_Read BW Test)", "pass bench.perftest.warning run 4 of 9 (RDMA_Read BW Test)", "warn bench.perftest.mtu run 5 of 9 (RDMA_Read Latency Test)", "pass bench.perftest.latency run 5 of 9 (RDMA_Read Latency Test)", "warn bench.perftest.mtu run 6 of 9 (Atomic FETCH_AND_ADD BW Test)", "fail bench.perftest.bandwidth run 6 of 9 (Atomic FETCH_AND_ADD BW Test)", "warn bench.perftest.warning run 6 of 9 (Atomic FETCH_AND_ADD BW Test)", "warn bench.perftest.mtu run 7 of 9 (Atomic FETCH_AND_ADD Latency Test)", "pass bench.perftest.latency run 7 of 9 (Atomic FETCH_AND_ADD Latency Test)", "warn bench.perftest.warning run 7 of 9 (Atomic FETCH_AND_ADD Latency Test)", "warn bench.perftest.mtu run 8 of 9 (Send BW Test)", "pass bench.perftest.bandwidth run 8 of 9 (Send BW Test)", "warn bench.perftest.mtu run 9 of 9 (Send Latency Test)", "pass bench.perftest.latency run 9 of 9 (Send Latency Test)"}},
		{"perftest/stmatengss-mlx4-qdr/ib_atomic_bw_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "fail bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest/stmatengss-mlx4-qdr/ib_atomic_lat_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.latency", "warn bench.perftest.warning"}},
		{"perftest/stmatengss-mlx4-qdr/ib_read_bw_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.bandwidth", "pass bench.perftest.warning"}},
		{"perftest/stmatengss-mlx4-qdr/ib_read_bw_teaker-11.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.bandwidth"}},
		{"perftest/stmatengss-mlx4-qdr/ib_read_lat_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.latency"}},
		{"perftest/stmatengss-mlx4-qdr/ib_send_bw_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.bandwidth"}},
		{"perftest/stmatengss-mlx4-qdr/ib_send_lat_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.latency"}},
		{"perftest/stmatengss-mlx4-qdr/ib_write_bw_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.bandwidth"}},
		{"perftest/stmatengss-mlx4-qdr/ib_write_lat_4bfed8618b1d.txt", "4X QDR", []string{"warn bench.perftest.mtu", "pass bench.perftest.latency"}},
		{"perftest/superbench/ib_loopback_8M_size.log", "", []string{"pass bench.perftest.mtu", "unknown bench.perftest.bandwidth"}},
		{"perftest/superbench/ib_loopback_all_sizes.log", "", []string{"pass bench.perftest.mtu", "unknown bench.perftest.bandwidth"}},
		{"perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt", "", []string{"warn bench.perftest.mtu run 1 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.latency run 1 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.mtu run 2 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.latency run 2 of 2 (RDMA_Write Latency Test)"}},
		{"perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt", "", []string{"warn bench.perftest.mtu run 1 of 2 (RDMA_Read Latency Test)", "warn bench.perftest.latency run 1 of 2 (RDMA_Read Latency Test)", "warn bench.perftest.warning run 1 of 2 (RDMA_Read Latency Test)", "warn bench.perftest.mtu run 2 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.latency run 2 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.warning run 2 of 2 (RDMA_Write Latency Test)"}},
		{"perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_4_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_client.txt", "", []string{"warn bench.perftest.mtu", "unknown bench.perftest.bandwidth", "warn bench.perftest.warning"}},
		{"perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_5_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_server.txt", "", []string{"warn bench.perftest.mtu", "unknown bench.perftest.bandwidth", "warn bench.perftest.warning"}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, c.file))
			if err != nil {
				t.Fatal(err)
			}
			var l linkrate.Link
			if c.rate != "" {
				r, err := linkrate.ParseRate(c.rate)
				if err != nil {
					t.Fatal(err)
				}
				l.RateGbps, l.Speed = r.Gbps, r.Speed
			}
			fs, _, err := JudgePerftestFile(c.file, b, &l)
			var got []string
			for _, f := range fs {
				if !strings.HasPrefix(f.Subject, c.file) {
					t.Errorf("subject %q does not name the file", f.Subject)
				}
				got = append(got, fmt.Sprintf("%s %s%s", f.Outcome, f.Check, strings.TrimPrefix(f.Subject, c.file)))
				if f.Outcome != check.Pass && f.Check != "bench.perftest.bandwidth" && f.Check != "bench.perftest.latency" && len(f.Fix) == 0 && !strings.Contains(f.Message, "software RDMA") {
					t.Errorf("%s %s without a fix: %s", f.Outcome, f.Check, f.Message)
				}
			}
			if err != nil {
				if !strings.Contains(err.Error(), c.file) {
					t.Errorf("refusal does not name the file: %v", err)
				}
				got = []string{"refused"}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
				for _, f := range fs {
					t.Logf("%s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
				}
			}
		})
	}
	for _, dir := range []string{"perftest", "perftest-latency", "perftest-warnings"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				if !seen[rel] {
					t.Errorf("%s: a real perftest output with no asserted verdict", rel)
				}
			}
			return nil
		})
	}
}

// Any text: ParsePerftestRuns either refuses it or returns runs that each
// have rows; text one run long reads the same as ParsePerftest reads it;
// two copies of a run joined by its banner read as that one run again.
func FuzzParsePerftestRuns(f *testing.F) {
	f.Add("                    Send BW Test\n Mtu : 4096[B]\n #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 5000 392.38 392.34 0.748336\n")
	f.Add("  RDMA_Write Latency Test\n #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]\n 2 1000 1.34 8.56 1.41\n")
	f.Add(" WARNING: CPU is not PCIe relaxed ordering compliant.\n #bytes #iterations BW peak[MiB/sec] BW average[MiB/sec] MsgRate[Mpps]\nConflicting CPU frequency values detected: 1200.000000 != 1300.046000. CPU Frequency is not max.\n 2 1000 7.79 7.40 3.879797\n")
	f.Fuzz(func(t *testing.T, s string) {
		runs, err := ParsePerftestRuns(s)
		if err != nil {
			return
		}
		for _, r := range runs {
			if len(r.Rows) == 0 || (r.Kind != "bw" && r.Kind != "lat") {
				t.Fatalf("a run without rows or kind: %+v", r)
			}
		}
		one, err := ParsePerftest(s)
		if len(runs) == 1 && (err != nil || !slices.Equal(one.Rows, runs[0].Rows)) {
			t.Fatalf("one run read two ways: %v %+v %+v", err, one, runs[0])
		}
		if len(runs) == 1 && runs[0].Test != "" && strings.HasSuffix(s, "\n") {
			twice, err := ParsePerftestRuns(s + s)
			if err != nil || len(twice) != 1 || !slices.Equal(twice[0].Rows, runs[0].Rows) {
				t.Fatalf("the same run twice is not one run: %v %d", err, len(twice))
			}
		}
	})
}

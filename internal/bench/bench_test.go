package bench

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

func perftestFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "perftest", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01*math.Max(1, math.Abs(b)) }

// Every real perftest output: kind, unit, rows and the row a verdict uses.
func TestParsePerftestReal(t *testing.T) {
	cases := []struct {
		file       string
		kind, unit string
		rows       int
		link       string
		mtu        int
		bytes      int64
		gbps, p99  float64
	}{
		{"cx7-ndr-b2b-perftest25/ib_write_bw.txt", "bw", "Gb/sec", 1, "IB", 4096, 65536, 392.34, 0},
		{"cx7-ndr-b2b-perftest25/ib_read_bw.txt", "bw", "Gb/sec", 1, "IB", 4096, 65536, 328.61, 0},
		{"cx7-ndr-b2b-perftest25/ib_send_bw.txt", "bw", "MiB/sec", 1, "IB", 4096, 65536, 390.55, 0},
		{"cx7-ndr-b2b-perftest25/ib_send_lat.txt", "lat", "", 1, "IB", 4096, 2, 0, 1.37},
		{"stmatengss-mlx4-qdr/ib_write_bw_4bfed8618b1d.txt", "bw", "MB/sec", 23, "IB", 2048, 8388608, 30.75, 0},
		{"stmatengss-mlx4-qdr/ib_read_bw_teaker-11.txt", "bw", "MB/sec", 23, "IB", 2048, 8388608, 30.75, 0},
		{"stmatengss-mlx4-qdr/ib_write_lat_4bfed8618b1d.txt", "lat", "", 23, "IB", 2048, 2, 0, 1.21},
		{"stmatengss-mlx4-qdr/ib_atomic_lat_4bfed8618b1d.txt", "lat", "", 1, "IB", 2048, 8, 0, 2.56},
		{"roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt", "bw", "MB/sec", 1, "Ethernet", 1024, 65536, 93.25, 0},
		{"azure-hbv3_ib_send_bw_all_client.txt", "bw", "MiB/sec", 14, "IB", 4096, 16384, 197.53, 0},
		{"azure-hbv3_ib_send_lat_all_server.txt", "lat", "", 14, "IB", 4096, 2, 0, 1.62},
		// server and client interleaved line by line, a warning inside the table
		{"azure-hbv3_ib_write_bw_loopback_interleaved.txt", "bw", "MiB/sec", 1, "IB", 4096, 1000, 33.73, 0},
		{"superbench/ib_loopback_all_sizes.log", "bw", "MB/sec", 23, "IB", 4096, 8388608, 194.96, 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParsePerftest(perftestFile(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			b := r.Best()
			if r.Kind != c.kind || r.Unit != c.unit || len(r.Rows) != c.rows || r.LinkType != c.link || r.MTUBytes != c.mtu || b.Bytes != c.bytes {
				t.Errorf("got %s %q %d rows %s mtu %d best %d bytes", r.Kind, r.Unit, len(r.Rows), r.LinkType, r.MTUBytes, b.Bytes)
			}
			if !near(b.AvgGbps, c.gbps) || !near(b.P99Us, c.p99) {
				t.Errorf("best row %+v, want %.2f Gb/s p99 %.2f", b, c.gbps, c.p99)
			}
		})
	}
	// Not one run's output: refused with the line at fault, never a zero.
	for _, c := range []struct{ file, want string }{
		{"json/perftest-issue-216_rxe0_ib_write_lat_out_json_INVALID-JSON.txt", "no result table"},
		{"stmatengss-mlx4-qdr/_full_transcript_excerpt.txt", "a second result table"},
	} {
		if _, err := ParsePerftest(perftestFile(t, c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.file, err, c.want)
		}
	}
	_, err := ParsePerftest(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000             392.38             n/a 	     0.748336\n")
	if err == nil || !strings.Contains(err.Error(), `"65536      5000             392.38             n/a       0.748336"`) {
		t.Errorf("a bad row must be quoted: %v", err)
	}
}

func FuzzParsePerftest(f *testing.F) {
	f.Add(" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 5000 392.38 392.34 0.748336\n")
	f.Add(" #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]\n 2 1000 1.24 5.19 1.27 1.27 0.00 1.37 5.19\n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParsePerftest(s)
		if err == nil && len(r.Rows) == 0 {
			t.Fatal("no error and no rows")
		}
	})
}

func TestRounds(t *testing.T) {
	for n := 2; n <= 17; n++ {
		checkPlan(t, CirclePlan(n), n, n-1+n%2, true)
		checkPlan(t, MatchingPlan(n, MatchingRounds), n, min(MatchingRounds, n-1+n%2), false)
	}
	// The closed form gives the rounds the rotating ring did.
	if got := CirclePlan(6).Round(2, nil); !slices.Equal(got, []Pair{{0, 3}, {2, 4}, {1, 5}}) {
		t.Errorf("circle round 3 of 6: %v", got)
	}
}

// checkPlan: rounds of disjoint pairs, no pair twice, n/2 pairs a round;
// every pair when all is set.
func checkPlan(t *testing.T, p Plan, n, rounds int, all bool) {
	t.Helper()
	if p.Len() != rounds {
		t.Errorf("%s n=%d: %d rounds, want %d", p.Name(), n, p.Len(), rounds)
	}
	seen := map[Pair]bool{}
	for i := range p.Len() {
		r := p.Round(i, nil)
		busy := map[int]bool{}
		for _, pr := range r {
			if busy[pr.A] || busy[pr.B] || pr.A >= pr.B || pr.B >= n {
				t.Fatalf("%s n=%d: node twice in a round or bad pair: %v", p.Name(), n, r)
			}
			busy[pr.A], busy[pr.B] = true, true
			if seen[pr] {
				t.Fatalf("%s n=%d: pair %v twice", p.Name(), n, pr)
			}
			seen[pr] = true
		}
		if len(r) != n/2 {
			t.Errorf("%s n=%d: a round of %d pairs, want %d", p.Name(), n, len(r), n/2)
		}
	}
	if all && len(seen) != n*(n-1)/2 {
		t.Errorf("n=%d: %d pairs, want every one of %d", n, len(seen), n*(n-1)/2)
	}
}

// exitCode is the exit status of a finished rdmalab (-1 when it did not
// exit by itself).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

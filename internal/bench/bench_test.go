package bench

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/linkrate"
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

func FuzzParseCluster(f *testing.F) {
	f.Add("nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCluster([]byte(s))
		if err == nil && len(c.Nodes) < 2 {
			t.Fatal("accepted a cluster of fewer than 2 nodes")
		}
	})
}

func TestRounds(t *testing.T) {
	for n := 2; n <= 17; n++ {
		rounds := Rounds(n)
		want := n - 1
		if n%2 == 1 {
			want = n
		}
		if len(rounds) != want {
			t.Errorf("n=%d: %d rounds, want %d", n, len(rounds), want)
		}
		seen := map[Pair]bool{}
		for _, r := range rounds {
			busy := map[int]bool{}
			for _, p := range r {
				if busy[p.A] || busy[p.B] || p.A >= p.B {
					t.Fatalf("n=%d: node twice in a round or bad pair: %v", n, r)
				}
				busy[p.A], busy[p.B] = true, true
				if seen[p] {
					t.Fatalf("n=%d: pair %v twice", n, p)
				}
				seen[p] = true
			}
			if len(r) != n/2 {
				t.Errorf("n=%d: a round of %d pairs, want %d", n, len(r), n/2)
			}
		}
		if len(seen) != n*(n-1)/2 {
			t.Errorf("n=%d: %d pairs, want every one of %d", n, len(seen), n*(n-1)/2)
		}
	}
}

func TestJudge(t *testing.T) {
	roce := Link{Layer: linkrate.RoCE, RateGbps: 25, MTUBytes: 4096}
	v, ratio, s := Judge(24.00, roce, DefaultThresholds)
	if v != Healthy || !near(ratio, 0.98) || s != "24.00 Gb/s = 98% of what 25GbE RoCE at MTU 4096 can carry (24.51 Gb/s): healthy" {
		t.Errorf("%s %.3f %q", v, ratio, s)
	}
	// QDR pays 8b/10b: 4X QDR carries 32 Gb/s of data at most.
	qdr := Link{Layer: linkrate.InfiniBand, RateGbps: 40, Speed: "QDR", MTUBytes: 2048}
	if v, _, _ := Judge(30.75, qdr, DefaultThresholds); v != Healthy {
		t.Errorf("the mlx4 QDR capture's 30.75 Gb/s is healthy, got %s (ceiling %.2f)", v, qdr.CeilingGbps())
	}
	if v, _, _ := Judge(20, roce, DefaultThresholds); v != Degraded {
		t.Errorf("20 of 24.5 is degraded, got %s", v)
	}
	if v, _, _ := Judge(12, roce, DefaultThresholds); v != Broken {
		t.Errorf("12 of 24.5 is broken, got %s", v)
	}
}

func TestParseClusterStrict(t *testing.T) {
	good := "nodes:\n  - {name: a, data: 10.0.0.1, gid_index: 3}\n  - {name: b, data: 10.0.0.2}\ndefaults: {device: mlx5_0}\nlink: {layer: RoCE, rate_gbps: 25}\n"
	c, err := ParseCluster([]byte(good))
	if err != nil || c.Nodes[1].Device != "mlx5_0" || c.Nodes[0].SSH != "10.0.0.1" || c.Link.MTUBytes != 1024 || c.Launcher.Type != "ssh" || *c.Nodes[0].GIDIndex != 3 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2, colour: red}\n", `3: unknown key "colour"`},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n", "at least 2 nodes"},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: a, data: 10.0.0.2}\n", `node "a" is listed twice`},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b}\n", `3: node "b" has no data address`},
		{"nodes:\n  - {name: a, data: 10.0.0.1, ssh: \"x; rm -rf /\"}\n  - {name: b, data: 10.0.0.2}\n", "is not a [user@]host"},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\nlauncher: {type: pdsh}\n", `launcher type "pdsh"`},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\nthresholds: {healthy: 0.7, degraded: 0.8}\n", "thresholds want"},
	} {
		if _, err := ParseCluster([]byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestShellJoinQuotes(t *testing.T) {
	if got := shellJoin([]string{"ib_write_bw", "-d", "mlx5_0", "it's; rm -rf /"}); got != `'ib_write_bw' '-d' 'mlx5_0' 'it'\''s; rm -rf /'` {
		t.Errorf("%s", got)
	}
}

// The whole pipeline on loopback addresses with the real binary: kill the
// run after its first round, resume, and every pair is measured exactly once.
func TestKillAndResume(t *testing.T) {
	dir := testhost.TempDir(t)
	bin := filepath.Join(dir, "rdmalab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/rdmalab").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte(`nodes:
  - {name: n1, data: 127.0.0.1}
  - {name: n2, data: 127.0.0.2}
  - {name: n3, data: 127.0.0.3}
  - {name: n4, data: 127.0.0.4}
  - {name: n5, data: 127.0.0.5}
  - {name: n6, data: 127.0.0.6}
link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher: {type: local, rdmalab: `+bin+`, base_port: 23400}
`), 0o644)
	results := filepath.Join(dir, "results.jsonl")
	args := []string{"bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "1", "--timeout", "30s", "--results", results, "--no-retest"}
	interruptAt(t, "round 2/", bin, args...)
	first, err := ReadResults(results)
	if err != nil || len(first) < 3 || len(first) >= 15 {
		t.Fatalf("after the interrupt: %d results (%v), want round 1's 3 and not all 15", len(first), err)
	}
	out, err := exec.Command(bin, append(args, "--resume")...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "already done") {
		t.Errorf("resume did not skip anything:\n%s", out)
	}
	all, err := ReadResults(results)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range all {
		seen[r.key()]++
		if r.Error != "" || r.Gbps <= 0 {
			t.Errorf("pair %s ↔ %s: %+v", r.A, r.B, r)
		}
	}
	if len(seen) != 15 {
		t.Errorf("%d distinct pairs, want 15", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("pair %s measured %d times", k, n)
		}
	}
}

// interruptAt runs rdmalab and sends it ^C when a progress line starts with prefix.
func interruptAt(t *testing.T, prefix, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			cmd.Process.Signal(os.Interrupt)
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	cmd.Wait()
}

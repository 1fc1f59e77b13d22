package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// seedText reads a seed article (../shared/seeds/NNN_*.txt) and fails the
// test unless every quoted line is in it, so the figures below are the
// authors' own.
func seedText(t *testing.T, n string, quotes ...string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(testhost.SharedTestdata(t), "..", "seeds", n+"_*.txt"))
	if len(m) != 1 {
		t.Fatalf("seed %s: %v", n, m)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range quotes {
		if !strings.Contains(string(b), q) {
			t.Fatalf("seed %s does not say %q", n, q)
		}
	}
}

// perftestOutput is a run as perftest prints it, with the seed's figures:
// banner, MTU, link type, the warnings it printed, the table.
func perftestOutput(banner string, mtu int, linkType string, warnings []string, header string, rows ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "---------------------------------------------------------------------------------------\n")
	fmt.Fprintf(&b, "                    %s\n Dual-port       : OFF\t\tDevice         : mlx5_0\n", banner)
	for _, w := range warnings {
		if strings.HasPrefix(w, "WARNING") {
			fmt.Fprintf(&b, " %s\n", w)
		}
	}
	fmt.Fprintf(&b, " Mtu             : %d[B]\n Link type       : %s\n", mtu, linkType)
	fmt.Fprintf(&b, "---------------------------------------------------------------------------------------\n %s\n", header)
	for _, w := range warnings {
		if !strings.HasPrefix(w, "WARNING") {
			fmt.Fprintf(&b, "%s\n", w)
		}
	}
	for _, r := range rows {
		fmt.Fprintf(&b, " %s\n", r)
	}
	b.WriteString("---------------------------------------------------------------------------------------\n")
	return []byte(b.String())
}

const (
	bwHeaderGbits = "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	bwHeaderMiB   = "#bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	latHeader     = "#bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"
	latHeaderAvg  = "#bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
)

func judgeSeedRun(t *testing.T, out []byte, rate string, layer linkrate.Layer) map[string]check.Finding {
	t.Helper()
	r, err := linkrate.ParseRate(rate)
	if err != nil {
		t.Fatal(err)
	}
	fs, _, err := JudgePerftestFile("seed", out, &linkrate.Link{Layer: layer, RateGbps: r.Gbps, Speed: r.Speed})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]check.Finding{}
	for _, f := range fs {
		key := f.Check
		if f.Check == "bench.perftest.warning" {
			key += ":" + strings.SplitN(strings.TrimPrefix(f.Message, "perftest warned: "), " (", 2)[0]
		}
		by[key] = f
	}
	return by
}

func wantOutcome(t *testing.T, by map[string]check.Finding, key string, out check.Outcome, text ...string) {
	t.Helper()
	f, ok := by[key]
	if !ok {
		t.Errorf("no %s finding; have %v", key, by)
		return
	}
	if f.Outcome != out {
		t.Errorf("%s: %s, want %s: %s", key, f.Outcome, out, f.Message)
	}
	all := f.Message + strings.Join(f.Fix, " ")
	for _, e := range f.Evidence {
		all += " " + e.Value + " " + e.Source
	}
	for _, s := range text {
		if !strings.Contains(all, s) {
			t.Errorf("%s lacks %q: %s", key, s, all)
		}
	}
}

// Seed 003: a ConnectX-4 on a 40 Gb QDR switch. Its ib_send_bw plateau,
// 31.7 Gb/s, is healthy (the author: "healthy enough to sustain
// near-expected throughput"); the relaxed-ordering warning is a warning
// with the --disable_pcie_relaxed re-run they did; "CPU Frequency is not
// max" is harmless at that saturation ("non issue as we have already
// saturated our links"); 1.15 µs ib_send_lat is healthy.
func TestSeed003QDRVerdicts(t *testing.T) {
	seedText(t, "003",
		"WARNING: CPU is not PCIe relaxed ordering compliant.",
		"WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client.",
		"Mtu : 4096[B] Link type : IB",
		"#bytes #iterations BW peak[MiB/sec] BW average[MiB/sec] MsgRate[Mpps]Conflicting CPU frequency values detected: 1200.000000 != 1300.046000. CPU Frequency is not max. 2 1000 7.79 7.40 3.879797",
		"Plateau was about: 3776.9 MiB/s which is about 31.7 Gbit/s",
		"Our InfiniBand link is healthy enough to sustain near-expected throughput",
		"We still see CPU Frequency is not max, however this is non issue as we have already saturated our links.",
		"Average latency: ~1.15 µs", "Typical latency: ~1.14 µs", "Minimum latency: 1.06 µs", "Outliers: up to 11.41 µs",
		"Conclusion: Healthy RDMA performance")
	// The seed prints the 2-byte row and names the plateau; the 8 MiB row
	// carries the plateau it names.
	bw := perftestOutput("Send BW Test", 4096, "IB", []string{
		"WARNING: CPU is not PCIe relaxed ordering compliant.",
		"WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client.",
		"Conflicting CPU frequency values detected: 1200.000000 != 1300.046000. CPU Frequency is not max.",
	}, bwHeaderMiB, "2          1000           7.79               7.40               3.879797", "8388608    1000           3777.02            3776.90            0.000472")
	by := judgeSeedRun(t, bw, "4X QDR", "")
	wantOutcome(t, by, "bench.perftest.bandwidth", check.Pass, "31.68 Gb/s", "QDR InfiniBand at MTU 4096", "healthy")
	wantOutcome(t, by, "bench.perftest.warning:PCIe relaxed ordering not supported", check.Warn, "--disable_pcie_relaxed on both server and client", "saturated")
	wantOutcome(t, by, "bench.perftest.warning:CPU frequency not max", check.Pass, "harmless here: the link is saturated", "cpupower frequency-set -g performance")
	wantOutcome(t, by, "bench.perftest.mtu", check.Pass)

	lat := perftestOutput("Send Latency Test", 4096, "IB", nil, latHeaderAvg, "2       1000          1.06           11.41        1.14               1.15")
	by = judgeSeedRun(t, lat, "4X QDR", "")
	wantOutcome(t, by, "bench.perftest.latency", check.Pass, "typical 1.14 µs", "healthy", "seed 001")
}

// Seed 000: two VMs with ConnectX-4 Lx on 25GbE RoCE, netdev MTU 4200.
// 24.50 Gb/s ib_write_bw and 1.41 µs ib_write_lat are "~ 97% of the 25GbE
// wire rate": healthy. The output says Link type: Ethernet, so the run is
// judged as RoCE without being told; told InfiniBand, that is a finding.
func TestSeed000RoCEVerdicts(t *testing.T) {
	seedText(t, "000",
		"# 65536 5000 24.50 24.50 0.046733",
		"# 2 1000 1.34 8.56 1.41",
		"24.50 Gb/sec write bandwidth and 1.41 μs write latency is ~ 97% of the 25GbE wire rate",
		"# active_mtu: 4096 (5)",
		"# Link layer: Ethernet")
	bw := perftestOutput("RDMA_Write BW Test", 4096, "Ethernet", nil, bwHeaderGbits, "65536      5000             24.50              24.50                0.046733")
	by := judgeSeedRun(t, bw, "25GbE", "")
	wantOutcome(t, by, "bench.perftest.bandwidth", check.Pass, "24.50 Gb/s", "25GbE RoCE at MTU 4096", "Link type: Ethernet", "healthy")
	if _, ok := by["bench.perftest.link-layer"]; ok {
		t.Errorf("no layer was expected, yet: %+v", by["bench.perftest.link-layer"])
	}
	lat := perftestOutput("RDMA_Write Latency Test", 4096, "Ethernet", nil, latHeader, "2       1000          1.34           8.56         1.41")
	by = judgeSeedRun(t, lat, "25GbE", "")
	wantOutcome(t, by, "bench.perftest.latency", check.Pass, "typical 1.41 µs", "healthy")
	// Expecting InfiniBand of a run that went over Ethernet is a finding.
	by = judgeSeedRun(t, bw, "25GbE", linkrate.InfiniBand)
	wantOutcome(t, by, "bench.perftest.link-layer", check.Fail, "RoCE (Link type: Ethernet), not the expected InfiniBand")
	// The default netdev MTU of 1500 gives RoCE 1024: a finding with its fix.
	seedText(t, "000", "the default Ethernet MTU of 1500 limits the RDMA (IB) MTU to 1024 bytes")
	by = judgeSeedRun(t, perftestOutput("RDMA_Write BW Test", 1024, "Ethernet", nil, bwHeaderGbits, "65536      5000             23.10              23.10                0.044060"), "25GbE", "")
	wantOutcome(t, by, "bench.perftest.mtu", check.Warn, "RoCE MTU 1024", `ip link set "$(ls /sys/class/infiniband/mlx5_0/device/net)" mtu 9000 (at least 4192)`)
}

// Seed 001's table of expected numbers on a clean fabric: both ends of
// every row's bandwidth and latency range are healthy (its low ends were
// once called degraded: HDR 188 → 95%, NDR 370 → 93%); above 5 µs on one
// switch is broken; 20% under the table is wrong.
func TestSeed001ExpectedNumbers(t *testing.T) {
	seedText(t, "001",
		"100 Gb/s EDR / 100 GbE RoCE 95–98 Gb/s 1.0–1.5 µs",
		"200 Gb/s HDR / 200 GbE RoCE 188–197 Gb/s 0.9–1.3 µs",
		"400 Gb/s NDR 370–395 Gb/s 0.8–1.1 µs",
		"If you are 20% under those numbers, do not start chasing NCCL tuning. The fabric is wrong.",
		"anything over 5 µs on a single-switch RoCE fabric is broken")
	rows := []struct {
		rate, linkType    string
		lowGbps, highGbps float64
		lowUs, highUs     float64
	}{
		{"4X EDR", "IB", 95, 98, 1.0, 1.5},
		{"100GbE", "Ethernet", 95, 98, 1.0, 1.5},
		{"4X HDR", "IB", 188, 197, 0.9, 1.3},
		{"200GbE", "Ethernet", 188, 197, 0.9, 1.3},
		{"4X NDR", "IB", 370, 395, 0.8, 1.1},
	}
	for _, r := range rows {
		t.Run(r.rate, func(t *testing.T) {
			for _, g := range []float64{r.lowGbps, r.highGbps} {
				out := perftestOutput("Send BW Test", 4096, r.linkType, nil, bwHeaderGbits, fmt.Sprintf("65536      5000             %.2f              %.2f                0.3", g, g))
				wantOutcome(t, judgeSeedRun(t, out, r.rate, ""), "bench.perftest.bandwidth", check.Pass, "healthy", fmt.Sprintf("%g–%g Gb/s", r.lowGbps, r.highGbps), "seed 001")
			}
			for _, us := range []float64{r.lowUs, r.highUs} {
				out := perftestOutput("Send Latency Test", 4096, r.linkType, nil, latHeader, fmt.Sprintf("2       1000          %.2f           8.00         %.2f", us-0.05, us))
				wantOutcome(t, judgeSeedRun(t, out, r.rate, ""), "bench.perftest.latency", check.Pass, "healthy")
			}
			// 20% under the table's low end: the fabric is wrong.
			out := perftestOutput("Send BW Test", 4096, r.linkType, nil, bwHeaderGbits, fmt.Sprintf("65536      5000             %.2f              %.2f                0.3", 0.78*r.lowGbps, 0.78*r.lowGbps))
			wantOutcome(t, judgeSeedRun(t, out, r.rate, ""), "bench.perftest.bandwidth", check.Fail)
		})
	}
	// Over 5 µs through one switch: broken, not slow; between the table
	// and 5 µs: slow.
	broken := perftestOutput("Send Latency Test", 4096, "Ethernet", nil, latHeader, "2       1000          5.10           9.00         5.40")
	wantOutcome(t, judgeSeedRun(t, broken, "200GbE", ""), "bench.perftest.latency", check.Fail, "above 5.0 µs, which is broken")
	slow := perftestOutput("Send Latency Test", 4096, "Ethernet", nil, latHeader, "2       1000          2.00           9.00         2.40")
	wantOutcome(t, judgeSeedRun(t, slow, "200GbE", ""), "bench.perftest.latency", check.Warn, "above what a clean fabric does (0.90–1.30 µs")
	// A RoCE perftest at MTU 1024 is a finding, not healthy.
	mtu := perftestOutput("Send BW Test", 1024, "Ethernet", nil, bwHeaderGbits, "65536      5000             92.00              92.00                0.17")
	wantOutcome(t, judgeSeedRun(t, mtu, "100GbE", ""), "bench.perftest.mtu", check.Warn, "RoCE MTU 1024, not 4096")
}

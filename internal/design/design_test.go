package design

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/design -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended run go test ./internal/design -update\n--- got:\n%s", name, got)
	}
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// Seed 001: "A 70B weight file is ~140 GB; a checkpoint is 2× that. At
// 25 GbE that takes ~90 seconds; at 100 GbE, ~22 seconds."
func TestTransferSeed001(t *testing.T) {
	for _, c := range []struct {
		size, rate         string
		links, streams     int
		lineRate, expected float64 // seconds
		usedLinks          int
		wantNote           string
	}{
		{"280GB", "25GbE", 1, 1, 89.6, 90.5, 1, ""},
		{"280GB", "100GbE", 1, 1, 22.4, 22.6, 1, ""},
		{"140GB", "25GbE", 1, 1, 44.8, 45.2, 1, ""},                 // the weight file: ~45 s
		{"280GB", "100", 4, 1, 22.4, 22.6, 1, "3 link(s) sit idle"}, // one flow, one NIC
		{"280GB", "100", 4, 8, 22.4, 5.66, 4, ""},
		{"280GB", "4X QDR", 1, 1, 56, 70.5, 1, ""}, // 40 Gb/s nominal carries 32 (8b/10b)
	} {
		tr, err := PlanTransfer(TransferOptions{Size: c.size, Rate: c.rate, Links: c.links, Streams: c.streams})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if !near(tr.LineRateSeconds, c.lineRate, 0.005) || !near(tr.Seconds, c.expected, 0.005) || tr.UsedLinks != c.usedLinks {
			t.Errorf("%s at %d× %s, %d streams: line rate %.2f s, expected %.2f s over %d links; want %.2f, %.2f, %d",
				c.size, c.links, c.rate, c.streams, tr.LineRateSeconds, tr.Seconds, tr.UsedLinks, c.lineRate, c.expected, c.usedLinks)
		}
		if c.wantNote != "" && !strings.Contains(strings.Join(tr.Notes, "\n"), c.wantNote) {
			t.Errorf("%+v: notes %q lack %q", c, tr.Notes, c.wantNote)
		}
	}
	// The seed's round figures, within the precision it states them.
	for _, c := range []struct {
		rate    string
		seconds float64
	}{{"25GbE", 90}, {"100GbE", 22}} {
		tr, _ := PlanTransfer(TransferOptions{Size: "280GB", Rate: c.rate, Links: 1, Streams: 1})
		if !near(tr.Seconds, c.seconds, 0.03) || !near(tr.LineRateSeconds, c.seconds, 0.03) {
			t.Errorf("280 GB at %s: %.1f s (line rate %.1f s), seed 001 says ~%g s", c.rate, tr.Seconds, tr.LineRateSeconds, c.seconds)
		}
	}
	tr, _ := PlanTransfer(TransferOptions{Size: "1TB", Rate: "100", Links: 1, Streams: 1, Efficiency: 0.5})
	if !near(tr.Seconds, 160, 1e-9) || tr.EfficiencySource != "--efficiency" {
		t.Errorf("1 TB at 100 Gb/s × 0.5: %v s from %q", tr.Seconds, tr.EfficiencySource)
	}
}

func TestTransferRefuses(t *testing.T) {
	for _, o := range []TransferOptions{
		{Size: "0GB", Rate: "25GbE", Links: 1, Streams: 1},
		{Size: "-1GB", Rate: "25GbE", Links: 1, Streams: 1},
		{Size: "280", Rate: "25GbE", Links: 1, Streams: 1},
		{Size: "280 XB", Rate: "25GbE", Links: 1, Streams: 1},
		{Size: "280GB", Rate: "0", Links: 1, Streams: 1},
		{Size: "280GB", Rate: "fast", Links: 1, Streams: 1},
		{Size: "280GB", Rate: "25GbE", Links: 0, Streams: 1},
		{Size: "280GB", Rate: "25GbE", Links: 1, Streams: 0},
		{Size: "280GB", Rate: "25GbE", Links: 1, Streams: 1, Efficiency: 1.5},
		{Size: "280GB", Rate: "25GbE", Links: 1, Streams: 1, MTUBytes: 100},
	} {
		if _, err := PlanTransfer(o); err == nil {
			t.Errorf("%+v accepted", o)
		} else if _, ok := err.(*InputError); !ok {
			t.Errorf("%+v: %v is not an *InputError", o, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in    string
		bytes float64
	}{
		{"280GB", 280e9}, {"280 gb", 280e9}, {"1.5TiB", 1.5 * (1 << 40)}, {"140 GB", 140e9}, {"4096B", 4096}, {"2 PB", 2e15}, {"10KiB", 10240},
	} {
		s, err := ParseSize(c.in)
		if err != nil || s.Bytes != c.bytes {
			t.Errorf("ParseSize(%q) = %v, %v; want %v bytes", c.in, s.Bytes, err, c.bytes)
		}
	}
	for _, bad := range []string{"", "GB", "280", "0GB", "-5GB", "1e3GB", "5 GiGB", "2EB", "2000PB", "1..2GB", "NaNGB", ".GB"} {
		if s, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted %v", bad, s)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"280GB", "1.5 TiB", "0GB", "280", "1e9GB", "0.000001B", "999PB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sz, err := ParseSize(s)
		if err != nil {
			return
		}
		// Whatever is accepted is a positive, bounded size that reads back
		// from its own text as the same number of bytes.
		if !(sz.Bytes > 0) || sz.Bytes > 1<<62 {
			t.Fatalf("ParseSize(%q) accepted %v bytes", s, sz.Bytes)
		}
		back, err := ParseSize(sz.Text)
		if err != nil || back.Bytes != sz.Bytes {
			t.Fatalf("ParseSize(%q) = %v; its text %q reads back as %v, %v", s, sz.Bytes, sz.Text, back.Bytes, err)
		}
	})
}

// Seed 001's uplink table: each profile lands on the uplink the seed
// recommends, and the explicit 4 nodes × 4 GPUs × ~1 GB/s = 16 GB/s ≈ 128
// Gb/s lands on its image/video row.
func TestUplinkSeed001(t *testing.T) {
	for _, c := range []struct {
		req                 UplinkRequest
		sustainedMax, burst float64
		capLow, capHigh     float64 // the seed's uplink range, Gb/s
		recommended         string
		lagAlternative      bool
	}{
		{UplinkRequest{Profile: "llm-pretrain"}, 4, 20, 25, 25, "1× 25 GbE", false},
		{UplinkRequest{Profile: "image-video"}, 150, 200, 200, 200, "1× 200 GbE", true},
		{UplinkRequest{Profile: "finetune"}, 20, 50, 25, 100, "1× 50 GbE", false},
		{UplinkRequest{Profile: "inference"}, 50, 0, 25, 100, "1× 100 GbE", false},
		{UplinkRequest{GPUs: 16, PerGPUIngestGBps: 1}, 128, 0, 200, 200, "1× 200 GbE", true},
		{UplinkRequest{Profile: "llm-pretrain", GPUs: 64}, 16, 80, 100, 100, "1× 100 GbE", false},
	} {
		c.req.MaxUtilization = 0.8
		u, err := PlanUplink(c.req)
		if err != nil {
			t.Fatalf("%+v: %v", c.req, err)
		}
		if u.SustainedMaxGbps != c.sustainedMax || u.BurstGbps != c.burst {
			t.Errorf("%+v: sustained %v, burst %v; want %v, %v", c.req, u.SustainedMaxGbps, u.BurstGbps, c.sustainedMax, c.burst)
		}
		if got := u.Recommended.CapacityGbps; got < c.capLow || got > c.capHigh || u.Recommended.Name != c.recommended {
			t.Errorf("%+v: recommended %s (%v Gb/s); seed 001 says %v–%v Gb/s, want %s", c.req, u.Recommended.Name, got, c.capLow, c.capHigh, c.recommended)
		}
		hasLAG := false
		for _, a := range u.Alternatives {
			hasLAG = hasLAG || a.Name == "2× 100 GbE LAG"
		}
		if hasLAG != c.lagAlternative {
			t.Errorf("%+v: alternatives %v; 2× 100 GbE LAG expected: %v", c.req, u.Alternatives, c.lagAlternative)
		}
		if c.lagAlternative && !strings.Contains(strings.Join(u.Caveats, "\n"), "one TCP stream") {
			t.Errorf("%+v: no flows-vs-NICs caveat for the LAG: %q", c.req, u.Caveats)
		}
		if !c.lagAlternative && len(u.Caveats) != 0 {
			t.Errorf("%+v: caveats without a LAG: %q", c.req, u.Caveats)
		}
	}
	u, _ := PlanUplink(UplinkRequest{Profile: "llm-pretrain", MaxUtilization: 0.8, FabricRate: "400GbE"})
	if !strings.Contains(strings.Join(u.Reasoning, "\n"), "wrong target") {
		t.Errorf("a 400 GbE fabric with a 25 GbE uplink does not explain why: %q", u.Reasoning)
	}
	for _, bad := range []UplinkRequest{
		{MaxUtilization: 0.8},
		{Profile: "crypto", MaxUtilization: 0.8},
		{Profile: "finetune", PerGPUIngestGBps: 1, MaxUtilization: 0.8},
		{PerGPUIngestGBps: 1, MaxUtilization: 0.8},
		{GPUs: 4, PerGPUIngestGBps: -1, MaxUtilization: 0.8},
		{Profile: "finetune", MaxUtilization: 0},
		{Profile: "finetune", MaxUtilization: 0.8, Burst: "0"},
		{GPUs: 100000, PerGPUIngestGBps: 100, MaxUtilization: 0.8},
	} {
		if _, err := PlanUplink(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

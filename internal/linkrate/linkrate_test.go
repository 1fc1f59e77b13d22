package linkrate

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		gbps float64
		str  string
	}{
		{"200", 200, "200 Gb/s"},
		{"200G", 200, "200 Gb/s"},
		{"200 Gb/s", 200, "200 Gb/s"},
		{"100gbps", 100, "100 Gb/s"},
		{"25GbE", 25, "25GbE"},
		{"100 GbE", 100, "100GbE"},
		{"4X HDR", 200, "4X HDR (200 Gb/s)"},
		{"4x edr", 100, "4X EDR (100 Gb/s)"},
		{"HDR", 200, "4X HDR (200 Gb/s)"},
		{"2X NDR", 200, "2X NDR (200 Gb/s)"},
		{"1X SDR", 2.5, "1X SDR (2.5 Gb/s)"},
		{"12X QDR", 120, "12X QDR (120 Gb/s)"},
		{"0.8T", 800, "800 Gb/s"},
	} {
		r, err := ParseRate(c.in)
		if err != nil {
			t.Errorf("ParseRate(%q): %v", c.in, err)
			continue
		}
		if r.Gbps != c.gbps || r.String() != c.str {
			t.Errorf("ParseRate(%q) = %v %q, want %v %q", c.in, r.Gbps, r.String(), c.gbps, c.str)
		}
	}
	for _, bad := range []string{"", "0", "-100", "-5", "abc", "3X HDR", "4X ZDR", "NaN", "Inf", "200 furlongs", "1e9"} {
		if r, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", bad, r)
		}
	}
}

func TestParseLayer(t *testing.T) {
	for in, want := range map[string]Layer{"IB": InfiniBand, "infiniband": InfiniBand, "RoCE": RoCE, "Ethernet": RoCE, "tcp": TCP} {
		if got, err := ParseLayer(in); err != nil || got != want {
			t.Errorf("ParseLayer(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseLayer("omnipath"); err == nil {
		t.Error("ParseLayer(omnipath) accepted")
	}
}

func TestSpeedBySignal(t *testing.T) {
	for sig, name := range map[string]string{"2.5": "SDR", "10.0": "QDR", "14.0625": "FDR", "10.3125": "FDR10", "25.78125": "EDR", "53.125": "HDR", "106.25": "NDR", "212.5": "XDR"} {
		if s, ok := SpeedBySignal(sig); !ok || s.Name != name {
			t.Errorf("SpeedBySignal(%s) = %v %v, want %s", sig, s.Name, ok, name)
		}
	}
}

func TestCeiling(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.05 }
	for _, c := range []struct {
		l    Link
		want float64
	}{
		// 4X QDR: 32 Gb/s of data, 4096/(4096+26) of it payload.
		{Link{Layer: InfiniBand, RateGbps: 40, Speed: "QDR", MTUBytes: 4096}, 32 * 4096.0 / 4122},
		{Link{Layer: InfiniBand, RateGbps: 200, Speed: "HDR", MTUBytes: 4096}, 200 * 4096.0 / 4122},
		{Link{Layer: RoCE, RateGbps: 25, MTUBytes: 1024}, 25 * 1024.0 / (1024 + 82)},
		{Link{Layer: TCP, RateGbps: 10, MTUBytes: 1500}, 10 * 1448.0 / 1538},
		// HDR on a Gen3 x16 slot: PCIe binds.
		{Link{Layer: InfiniBand, RateGbps: 200, Speed: "HDR", MTUBytes: 4096, PCIeGbps: PCIeUsableGbps(8, 16)}, 8 * 16 * 128.0 / 130 * PCIeUsableShare},
	} {
		if got := c.l.CeilingGbps(); !near(got, c.want) {
			t.Errorf("%s: ceiling %.2f, want %.2f", c.l.Describe(), got, c.want)
		}
	}
	l := Link{Layer: InfiniBand, RateGbps: 200, Speed: "HDR", MTUBytes: 4096, PCIeGbps: PCIeUsableGbps(8, 16)}
	if !l.LimitedByPCIe() || !strings.Contains(l.Describe(), "capped by PCIe") {
		t.Errorf("Describe %q: want the PCIe cap named", l.Describe())
	}
}

func TestRoCEMTU(t *testing.T) {
	for mtu, want := range map[int]int{1500: 1024, 9000: 4096, 4200: 4096, 4000: 2048, 1000: 512, 100: 0} {
		if got := RoCEMTU(mtu); got != want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}

func TestPCIe(t *testing.T) {
	if g := PCIeGen(16); g != 4 {
		t.Errorf("PCIeGen(16) = %d", g)
	}
	if g := PCIeGen(0); g != 0 {
		t.Errorf("PCIeGen(0) = %d", g)
	}
	if got := PCIeGbps(8, 16); math.Abs(got-126.03) > 0.01 {
		t.Errorf("Gen3 x16 = %.2f Gb/s, want 126.03", got)
	}
	if got := PCIeGbps(0, 16); got != 0 {
		t.Errorf("unknown speed gave %v", got)
	}
}

func TestModels(t *testing.T) {
	cx7, ok := ModelOf("0x15b3", "0x1021")
	if !ok || cx7.MaxIBGbps() != 400 || cx7.HasWidth(12) {
		t.Errorf("ConnectX-7: %+v %v", cx7, ok)
	}
	// ibnetdiscover prints the IB vendor id and short devids.
	sib, ok := ModelOf("0x2c9", "0xcb20")
	if !ok || !sib.Switch || sib.MaxSpeed != "EDR" {
		t.Errorf("Switch-IB by IB vendor id: %+v %v", sib, ok)
	}
	if b, ok := BoardOf("MT_2420110034"); !ok || b.MaxGbps != 25 {
		t.Errorf("MCX4121A-ACAT: %+v %v", b, ok)
	}
	if _, ok := BoardOf(""); ok {
		t.Error("empty board id matched")
	}
	seen := map[string]bool{}
	for _, m := range Models {
		if seen[m.Vendor+m.Device] {
			t.Errorf("model %s %s listed twice", m.Vendor, m.Device)
		}
		seen[m.Vendor+m.Device] = true
		if m.MaxSpeed != "" && SpeedRank(m.MaxSpeed) == 0 {
			t.Errorf("%s: unknown speed %q", m.Name, m.MaxSpeed)
		}
	}
}

// TestNoRateMathElsewhere keeps link, bus and rate math in this package:
// no other package may define per-lane rates, speed tables or header sizes.
func TestNoRateMathElsewhere(t *testing.T) {
	forbidden := regexp.MustCompile(`"53\.125"|"25\.78125"|"14\.0625"|\b8 \+ 12 \+ 4 \+ 2\b|"FDR10":\s*10|128\.0 ?/ ?130|"HDR":\s*50`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "internal/linkrate") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if loc := forbidden.FindIndex(b); loc != nil {
			t.Errorf("%s defines link rate math (%q): it belongs in internal/linkrate", p, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"200", "4X HDR", "25GbE", "HDR", "0", "-1", "12X", "1e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		// Whatever is accepted is a usable positive rate, and it reads back
		// as the same rate.
		if !(r.Gbps > 0) || math.IsInf(r.Gbps, 0) || math.IsNaN(r.Gbps) {
			t.Fatalf("ParseRate(%q) accepted %v", s, r.Gbps)
		}
		back := r.String()
		if i := strings.Index(back, " ("); i > 0 {
			back = back[:i]
		}
		r2, err := ParseRate(back)
		if err != nil || math.Abs(r2.Gbps-r.Gbps) > 1e-9*r.Gbps {
			t.Fatalf("ParseRate(%q) = %v; its String %q reads back as %v, %v", s, r.Gbps, back, r2.Gbps, err)
		}
	})
}

func TestBytesPerSecond(t *testing.T) {
	// 4X NDR: 400 Gb/s is 50 GB/s; node_exporter reports the same figure.
	if got := BytesPerSecond(400); got != 50e9 {
		t.Errorf("400 Gb/s = %g B/s, want 5e10", got)
	}
}

// Seed 001's table by rate: its rows exactly; slower links keep the
// 100 Gb/s latency and get no bandwidth range; an unknown rate the
// loosest latency; read and atomic latency is a round trip.
func TestExpectedFor(t *testing.T) {
	for _, c := range []struct {
		rate                   float64
		lowG, highG, lowU, hiU float64
	}{
		{100, 95, 98, 1.0, 1.5}, {200, 188, 197, 0.9, 1.3}, {400, 370, 395, 0.8, 1.1},
		{40, 0, 0, 1.0, 1.5}, {25, 0, 0, 1.0, 1.5}, {0, 0, 0, 1.0, 1.5}, {800, 0, 0, 0.8, 1.1},
	} {
		e := ExpectedFor(c.rate)
		if e.LowGbps != c.lowG || e.HighGbps != c.highG || e.LowUs != c.lowU || e.HighUs != c.hiU || e.BrokenUs != 5 || e.Source == "" {
			t.Errorf("%g Gb/s: %+v", c.rate, e)
		}
	}
	if LatencyRoundTrips("read") != 2 || LatencyRoundTrips("atomic") != 2 || LatencyRoundTrips("write") != 1 || LatencyRoundTrips("send") != 1 {
		t.Error("round trips")
	}
	if NetdevMTUFor(4096) != 4192 || RoCEMTU(NetdevMTUFor(4096)) != 4096 || RoCEMTU(NetdevMTUFor(4096)-1) != 2048 {
		t.Error("netdev MTU for RoCE 4096")
	}
}

// One function turns a rate and layer as users spell them into an
// expectation; its link carries the layer's default MTU.
func TestNewExpect(t *testing.T) {
	e, err := NewExpect("4X HDR", "", 0, "--expect-rate")
	if err != nil || e.Rate.Gbps != 200 || e.Layer != "" || e.Link().Layer != InfiniBand || e.Link().MTUBytes != 4096 || e.String() != "4X HDR (200 Gb/s) (--expect-rate)" {
		t.Errorf("%+v %v %q", e, err, e.String())
	}
	if e, err := NewExpect("25GbE", "", 0, "cluster file"); err != nil || e.Layer != RoCE || e.Link().MTUBytes != 1024 {
		t.Errorf("%+v %v", e, err)
	}
	if e, err := NewExpect("", "IB", 0, ""); err != nil || e.HasRate() || e.Layer != InfiniBand {
		t.Errorf("%+v %v", e, err)
	}
	for _, bad := range [][2]string{{"fast", ""}, {"", "token ring"}, {"-5", ""}} {
		if _, err := NewExpect(bad[0], bad[1], 0, ""); err == nil {
			t.Errorf("%q %q accepted", bad[0], bad[1])
		}
	}
}

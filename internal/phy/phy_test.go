package phy

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// capture reads a shared capture by directory and a unique part of its
// name (../shared/testdata beside the module root; phy cannot import
// testhost, which imports host, which imports phy).
func capture(t testing.TB, dir, part string) ([]byte, string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
			continue
		}
		fs, _ := filepath.Glob(filepath.Join(d, "..", "shared", "testdata", dir, "*"+part+"*"))
		if len(fs) != 1 {
			t.Fatalf("%s/*%s*: %d files", dir, part, len(fs))
		}
		b, err := os.ReadFile(fs[0])
		if err != nil {
			t.Fatal(err)
		}
		return b, filepath.Base(fs[0])
	}
	t.Fatal("no go.mod above the test")
	return nil, ""
}

// one is the single port a parse must give.
func one(ps []Port, err error) func(*testing.T) Port {
	return func(t *testing.T) Port {
		t.Helper()
		if err != nil || len(ps) != 1 {
			t.Fatalf("%d ports, %v", len(ps), err)
		}
		return ps[0]
	}
}

// The MFT 4.34 --json capture of a CX-7 at 400G: link, FEC, counters and
// window, per-lane raw errors and BER, module readings with the module's
// own ranges, speed lists from the masks' names.
func TestMlxlinkJSON400G(t *testing.T) {
	b, name := capture(t, "mlxlink", "cx7-fw28.47_400GbE-DR4")
	if !SniffMlxlink(b) {
		t.Fatal("not sniffed")
	}
	p := one(ParseMlxlink(b, name))(t)
	if p.State != "Active" || p.Speed != "400G" || p.Width != 4 || p.FEC.Kind != FECKP4 {
		t.Errorf("link %s %s %d %+v", p.State, p.Speed, p.Width, p.FEC)
	}
	c := p.Counters
	if c.WindowMin == nil || *c.WindowMin != 2718.1 || !c.EffectiveBER.NoErrors || *c.Effective != 0 || c.RawBER.Text != "5E-10" {
		t.Errorf("counters %+v", c)
	}
	if !slices.Equal(c.RawLane, []uint64{3017647, 15132549, 7368641, 9233545}) || len(c.RawBERLane) != 4 || c.RawBERLane[1].Value != 1e-9 {
		t.Errorf("lanes %v %v", c.RawLane, c.RawBERLane)
	}
	if *c.LinkDown != 0 || *c.Recovery != 0 {
		t.Errorf("link down %v recovery %v", *c.LinkDown, *c.Recovery)
	}
	if !slices.Contains(p.Enabled, "400G_4X") || !slices.Equal(p.Cable, []string{"400G_4X", "200G_2X", "100G_1X"}) {
		t.Errorf("speeds %v / %v", p.Enabled, p.Cable)
	}
	m := p.Module
	if m.Identifier != "OSFP" || m.Passive || m.PartNumber != "OSFP-400G-DR4" {
		t.Errorf("module %+v", m)
	}
	rx := m.Thresholds[RxPower]
	if *rx.AlarmLo != -9.914 || *rx.AlarmHi != 6.999 || rx.Level != "range" {
		t.Errorf("rx range %+v", rx)
	}
	var rx4 *Reading
	for i, r := range m.Readings {
		if r.Quantity == RxPower && r.Lane == 4 {
			rx4 = &m.Readings[i]
		}
	}
	if rx4 == nil || rx4.Value != 2.658 {
		t.Errorf("rx channel 4 %+v", rx4)
	}
	if tmp := m.Thresholds[Temperature]; *tmp.AlarmHi != 80 {
		t.Errorf("temperature range %+v", tmp)
	}
}

// The later capture adds the FEC histogram: JSON keys sort lexically
// (Bin 10 before Bin 2), bins are read by their range, the highest
// non-zero is bin 8.
func TestMlxlinkJSONHistogram(t *testing.T) {
	b, name := capture(t, "mlxlink", "fec-histogram-serdes-eye")
	p := one(ParseMlxlink(b, name))(t)
	h := p.Histogram
	if h == nil || len(h.Bins) != 16 || h.Bins[0].Count != 26766318661536 || h.Bins[2].Lo != 2 || h.Bins[2].Count != 9232 || h.Highest() != 8 {
		t.Fatalf("histogram %+v", h)
	}
	if *p.Counters.WindowMin != 5710.4 {
		t.Errorf("window %v", *p.Counters.WindowMin)
	}
}

// The excerpt cut inside Supported Info: what is whole (Operational Info)
// is read, the device and port come from the command line, and the cut
// is named by its path.
func TestMlxlinkJSONCut(t *testing.T) {
	b, name := capture(t, "mlxlink", "cut-mid-object")
	if !SniffMlxlink(b) {
		t.Fatal("not sniffed")
	}
	p := one(ParseMlxlink(b, name))(t)
	if p.Device != "mt4119_pciconf0" || p.Port != 1 || p.Speed != "IB-EDR" || p.Width != 4 || p.FEC.Kind != FECNone || p.State != "Active" {
		t.Errorf("%+v", p)
	}
	if !strings.Contains(p.Cut, "Supported Info") || !strings.Contains(p.Cut, "Enabled Link Speed") || p.Enabled != nil {
		t.Errorf("cut %q, enabled %v", p.Cut, p.Enabled)
	}
}

// The forum text: blank lines between all lines, padding collapsed to one
// space, two runs (-c, -e) of one device merged, the poster's label line
// named as skipped.
func TestMlxlinkTextForum(t *testing.T) {
	b, name := capture(t, "mlxlink", "nvidia-forum-206063")
	if !SniffMlxlink(b) {
		t.Fatal("not sniffed")
	}
	p := one(ParseMlxlink(b, name))(t)
	if p.Device != "mt4115_pciconf0" || p.Host != "localhost" || p.Speed != "100GbE" || p.FEC.Kind != FECKR4 {
		t.Errorf("%+v", p)
	}
	c := p.Counters
	if *c.WindowMin != 1715.4 || *c.Effective != 0 || !c.EffectiveBER.NoErrors || c.RawBER.Value != 3e-12 || !slices.Equal(c.RawLane, []uint64{26711, 0, 0, 9108}) {
		t.Errorf("counters %+v", c)
	}
	if !slices.ContainsFunc(p.Skipped, func(s string) bool { return strings.Contains(s, "2.Link grade and eye information") }) {
		t.Errorf("skipped %v", p.Skipped)
	}
	if !slices.Equal(p.Cable, []string{"100G", "50G", "40G", "25G", "10G", "1G"}) {
		t.Errorf("cable %v", p.Cable)
	}
}

// The --show_mo text of a passive DAC at NDR: zero readings in [0..0]
// ranges, per-lane flags, the host from the prompt.
func TestMlxlinkTextPassiveDAC(t *testing.T) {
	b, name := capture(t, "ibtools/cx7-ndr-b2b", "mlxlink_show_mo")
	p := one(ParseMlxlink(b, name))(t)
	if p.Host != "csegpu1" || p.Device != "mt4129_pciconf0" || p.Speed != "IB-NDR" || p.FEC.Kind != FECLL {
		t.Errorf("%+v", p)
	}
	m := p.Module
	if !m.Passive || len(m.Flags) == 0 {
		t.Fatalf("module %+v", m)
	}
	for _, f := range m.Flags {
		if f.Name == "Rx LOS" && !slices.Equal(f.Set(), []int{0, 2, 3}) {
			t.Errorf("Rx LOS lanes %v", f.Set())
		}
	}
}

// The GX10 blog's five counters: no header, no indentation; per-lane raw
// errors in lane order, corrected bits; the window unknown.
func TestEthtoolSPerLane(t *testing.T) {
	b, name := capture(t, "ethtool-phy", "asus-gx10")
	if !SniffEthtoolS(b) {
		t.Fatal("not sniffed")
	}
	ps, err := ParseEthtoolS(b, name)
	p := one(ps, err)(t)
	if !slices.Equal(p.Counters.RawLane, []uint64{6, 2, 190, 0}) || *p.Counters.CorrectedBits != 198 || p.Counters.Window != WindowUnknown || p.Counters.WindowMin != nil {
		t.Errorf("%+v", p.Counters)
	}
}

// Paste warts: a `| grep` with no header, a comment after every value,
// the command naming the interface; and no PHY counters in the two
// ethtool-S captures (their judging is RoCE's).
func TestEthtoolSWarts(t *testing.T) {
	paste := "$ ethtool -S eth03 | grep -E 'pause|_phy'\n     rx_pause_ctrl_phy: 10   # from the switch\n     tx_pause_ctrl_phy: 0 <-- none sent\nrx_pcs_symbol_err_phy: 3 # lost frames!\n"
	if !SniffEthtoolS([]byte(paste)) {
		t.Fatal("grep paste not sniffed")
	}
	rs, err := ReadEthtoolS([]byte(paste))
	if err != nil || len(rs) != 1 || rs[0].Netdev != "eth03" || !rs[0].Headerless || rs[0].Counters["rx_pause_ctrl_phy"] != 10 || rs[0].Counters["rx_pcs_symbol_err_phy"] != 3 || len(rs[0].Annotated) != 3 {
		t.Fatalf("%+v %v", rs, err)
	}
	ps, _ := ParseEthtoolS([]byte(paste), "paste")
	if p := one(ps, nil)(t); p.Netdev != "eth03" || *p.Counters.Symbol != 3 {
		t.Errorf("%+v", p)
	}
	for _, part := range []string{"kernel-5.15", "kernel-6.5"} {
		b, name := capture(t, "ethtool-S", part)
		ps, err := ParseEthtoolS(b, name)
		if err != nil || len(ps) != 0 {
			t.Errorf("%s: %d PHY ports, %v", part, len(ps), err)
		}
	}
	// Prose with a colon and a number is no ethtool output.
	if SniffEthtoolS([]byte("Note: 3 hosts\nSee: 4 more\n")) {
		t.Error("prose sniffed")
	}
}

// The Japanese notes: comment, prompt, sudo's password prompt skipped and
// named; RS active, Auto configured, the host from the prompt.
func TestShowFEC(t *testing.T) {
	b, name := capture(t, "ethtool-phy", "show-fec")
	if !SniffShowFEC(b) {
		t.Fatal("not sniffed")
	}
	p := one(ParseShowFEC(b, name))(t)
	if p.Netdev != "enp1s0f1np1" || p.Host != "spark-fb97" || p.FEC.Kind != FECRS || !slices.Equal(p.FEC.Configured, []string{"Auto"}) {
		t.Errorf("%+v %+v", p, p.FEC)
	}
	if len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0], "line 3") {
		t.Errorf("skipped %v", p.Skipped)
	}
	stats := "FEC parameters for eth1:\nSupported/Configured FEC encodings: RS\nActive FEC encoding: RS\nStatistics:\n  corrected_blocks: 256\n    Lane 0: 255\n    Lane 1: 1\n  uncorrectable_blocks: 7\n"
	q := one(ParseShowFEC([]byte(stats), "x"))(t)
	if *q.Counters.CorrectedBlocks != 256 || *q.Counters.Uncorrectable != 7 {
		t.Errorf("stats %+v", q.Counters)
	}
}

// SFF-8472 with the module's own thresholds (8-space mail indentation).
func TestModuleSFF8472(t *testing.T) {
	b, name := capture(t, "ethtool-phy", "sff8472")
	if !SniffModule(b) {
		t.Fatal("not sniffed")
	}
	p := one(ParseModule(b, name))(t)
	m := p.Module
	if p.Netdev != "eth4" || m.Identifier != "SFP" || m.Vendor != "FS" || len(m.Readings) != 5 || len(m.Thresholds) != 5 {
		t.Fatalf("%+v", m)
	}
	rx := m.Thresholds[RxPower]
	if *rx.AlarmLo != -25.53 || *rx.WarnLo != -24.95 || *rx.WarnHi != -2 || *rx.AlarmHi != -1.5 {
		t.Errorf("rx thresholds %+v", rx)
	}
	if v := m.Thresholds[Voltage]; *v.WarnHi != 3.465 {
		t.Errorf("voltage %+v", v)
	}
	if len(m.Flags) != 20 {
		t.Errorf("%d flags", len(m.Flags))
	}
}

// SFF-8636 with the author's "..." cuts: four channels each way, the power
// mode lines, elided named.
func TestModuleQSFP28Elided(t *testing.T) {
	b, name := capture(t, "ethtool-phy", "swp13-qsfp28")
	p := one(ParseModule(b, name))(t)
	m := p.Module
	if p.Netdev != "swp13" || m.Identifier != "QSFP28" || !m.Elided || m.LowPower == nil || *m.LowPower || len(m.Readings) != 8 || m.Thresholds != nil {
		t.Fatalf("%+v", m)
	}
	if r := m.Readings[7]; r.Quantity != RxPower || r.Lane != 4 || r.Value != -0.60 {
		t.Errorf("last reading %+v", r)
	}
	inf := one(ParseModule([]byte("Identifier : 0x11 (QSFP28)\nRcvr signal avg optical power(Channel 2) : 0.0000 mW / -inf dBm\n"), "x"))(t)
	if !math.IsInf(inf.Module.Readings[0].Value, -1) {
		t.Errorf("-inf read as %v", inf.Module.Readings[0].Value)
	}
	// JSON has no -Inf: it travels as no_light and reads back.
	j, err := json.Marshal(inf)
	if err != nil {
		t.Fatal(err)
	}
	var back Port
	if err := json.Unmarshal(j, &back); err != nil || !math.IsInf(back.Module.Readings[0].Value, -1) {
		t.Errorf("round trip %s: %+v %v", j, back.Module, err)
	}
}

// Legacy ibdiagnet 1.5.7: Errors before Warnings by the header, the
// warning kept under its section with the PKey line before it.
func TestIBDiagLegacy(t *testing.T) {
	b, name := capture(t, "ibdiagnet", "archwiki")
	if !SniffIBDiag(b) {
		t.Fatal("not sniffed")
	}
	d, err := ParseIBDiag(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Legacy || d.Version != "1.5.7" || len(d.Stages) != 8 || d.Log != "/tmp/ibdiagnet.log" {
		t.Errorf("%+v", d)
	}
	ip := d.Stages[7]
	if ip.Name != "IPoIB Subnets Check" || ip.Errors != 0 || ip.Warnings != 1 {
		t.Errorf("%+v", ip)
	}
	ms := d.MessagesOf(ip, false)
	if len(ms) != 1 || !strings.Contains(ms[0].Text, "Suboptimal rate") || !strings.Contains(ms[0].Context, "PKey:0x7fff") {
		t.Errorf("%+v", ms)
	}
	// ibdiagnet2 prints Warnings before Errors.
	two := "Summary\n-I- Stage                     Warnings   Errors     Comment   \n-I- Discovery                 0          0          \n-I- Port Counters             2          1          \n"
	d2, err := ParseIBDiag([]byte(two), "x")
	if err != nil || len(d2.Stages) != 2 || d2.Stages[1].Warnings != 2 || d2.Stages[1].Errors != 1 || d2.Legacy {
		t.Errorf("%+v %v", d2, err)
	}
}

// Every reader: no panic, output bounded by the input.
func FuzzReaders(f *testing.F) {
	for _, c := range [][2]string{{"mlxlink", "cx7-fw28.47"}, {"mlxlink", "cut-mid-object"}, {"mlxlink", "forum"}, {"mlxlink", "histogram"},
		{"ethtool-phy", "asus"}, {"ethtool-phy", "show-fec"}, {"ethtool-phy", "swp13"}, {"ethtool-phy", "sff8472"}, {"ibdiagnet", "archwiki"}} {
		b, _ := capture(f, c[0], c[1])
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := strings.Count(string(b), "\n") + 1
		check := func(ps []Port, err error) {
			if err != nil {
				return
			}
			if len(ps) > lines {
				t.Fatalf("%d ports from %d lines", len(ps), lines)
			}
			for _, p := range ps {
				if p.Counters != nil && len(p.Counters.RawLane) > 64 {
					t.Fatalf("%d lanes", len(p.Counters.RawLane))
				}
				if p.Module != nil && len(p.Module.Readings) > lines*8 {
					t.Fatalf("%d readings", len(p.Module.Readings))
				}
			}
		}
		check(ParseMlxlink(b, "f"))
		check(ParseEthtoolS(b, "f"))
		check(ParseShowFEC(b, "f"))
		check(ParseModule(b, "f"))
		if d, err := ParseIBDiag(b, "f"); err == nil && len(d.Stages) > lines {
			t.Fatalf("%d stages", len(d.Stages))
		}
		SniffMlxlink(b)
		SniffEthtoolS(b)
		SniffShowFEC(b)
		SniffModule(b)
		SniffIBDiag(b)
	})
}

// MFT spelling drift: the window in milliseconds, the received bits.
func TestMlxlinkDrift(t *testing.T) {
	j := `{"result": {"output": {"Physical Counters and BER Info": {"Time Since Last Clear [ms]": "600000", "PHY Received Bits": "24000000000000", "PHY Corrected Bits": "12", "Effective Physical Errors": "0", "Effective Physical BER": "15E-255"}}}, "status": {"code": 0, "message": "success"}}`
	p := one(ParseMlxlink([]byte(j), "x"))(t)
	if c := p.Counters; *c.WindowMin != 10 || *c.ReceivedBits != 24e12 || *c.CorrectedBits != 12 {
		t.Errorf("%+v", c)
	}
}

// SFF-8636 per-channel status rows become flags by lane.
func TestModuleLOSRows(t *testing.T) {
	b := " Identifier                                : 0x11 (QSFP28)\n Rx loss of signal                         : [ Yes, No, No, No ]\n Tx loss of signal                         : None\n"
	p := one(ParseModule([]byte(b), "x"))(t)
	if len(p.Module.Flags) != 2 || p.Module.Flags[0].Name != "Rx LOS" || !slices.Equal(p.Module.Flags[0].Set(), []int{0}) || len(p.Module.Flags[1].Set()) != 0 {
		t.Errorf("%+v", p.Module.Flags)
	}
}

// ibdiagnet2's console: a rule, the stage's title, its messages; the
// summary's stage finds them by name.
func TestIBDiag2Sections(t *testing.T) {
	b := "---------------------------------------------\nLinks Check\n-E- Link: S0002c90200409558/U1/P3<-->0002c903000a6571/U1/P1 - Unexpected actual link speed 2.5 (enable_speed1=\"2.5 or 5 or 10\")\n\n---------------------------------------------\nSummary\n-I- Stage                     Warnings   Errors     Comment   \n-I- Discovery                 0          0          \n-I- Links Check               0          1          \n\n-I- You can find detailed errors/warnings in: /var/tmp/ibdiagnet2/ibdiagnet2.log\n"
	if !SniffIBDiag([]byte(b)) {
		t.Fatal("not sniffed")
	}
	d, err := ParseIBDiag([]byte(b), "x")
	if err != nil || len(d.Stages) != 2 || d.Log != "/var/tmp/ibdiagnet2/ibdiagnet2.log" {
		t.Fatalf("%+v %v", d, err)
	}
	if ms := d.MessagesOf(d.Stages[1], true); len(ms) != 1 || !strings.Contains(ms[0].Text, "Unexpected actual link speed") {
		t.Errorf("%+v", d.Messages)
	}
}

// Per-lane corrected bits stand for the lanes when the lane errors are
// not printed; a missing lane leaves the lanes unread, never shifted.
func TestEthtoolSLaneForms(t *testing.T) {
	ps, err := ParseEthtoolS([]byte("rx_corrected_bits_lane0: 5\nrx_corrected_bits_lane1: 900\nrx_corrected_bits_lane2: 3\nrx_corrected_bits_lane3: 1\n"), "x")
	if p := one(ps, err)(t); !slices.Equal(p.Counters.RawLane, []uint64{5, 900, 3, 1}) || p.Counters.RawLaneName != "rx_corrected_bits_lane<N>" {
		t.Errorf("%+v", p.Counters)
	}
	ps, err = ParseEthtoolS([]byte("rx_err_lane_0_phy: 5\nrx_err_lane_2_phy: 900\n"), "x")
	if p := one(ps, err)(t); p.Counters.RawLane != nil {
		t.Errorf("gap read as lanes: %v", p.Counters.RawLane)
	}
}

package phycheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// capture reads a shared capture by directory and a unique part of its
// name, from ../shared/testdata beside the module root.
func capture(t testing.TB, dir, part string) ([]byte, string) {
	t.Helper()
	wd, _ := os.Getwd()
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

// judge reads b with the reader that sniffs it and applies the rules.
func judge(t *testing.T, b []byte, name string) []check.Finding {
	t.Helper()
	var ps []phy.Port
	var err error
	switch {
	case phy.SniffMlxlink(b):
		ps, err = phy.ParseMlxlink(b, name)
	case phy.SniffShowFEC(b):
		ps, err = phy.ParseShowFEC(b, name)
	case phy.SniffIBDiag(b):
		d, err := phy.ParseIBDiag(b, name)
		if err != nil {
			t.Fatal(err)
		}
		return IBDiag(d)
	case phy.SniffModule(b):
		ps, err = phy.ParseModule(b, name)
	case phy.SniffEthtoolS(b):
		ps, err = phy.ParseEthtoolS(b, name)
	default:
		t.Fatalf("%s: no reader sniffs it", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return Ports(ps)
}

// want is one finding a test expects: check, a part of the subject, outcome.
type want struct {
	id      string
	subject string
	out     check.Outcome
}

func (w want) String() string { return fmt.Sprintf("%s %s on %q", w.out, w.id, w.subject) }

// expect asserts every wanted finding is there, that nothing else
// failed or warned, and that every failure and warning says what to do
// (no empty command where the output named no device).
func expect(t *testing.T, fs []check.Finding, ws ...want) {
	t.Helper()
	for _, f := range fs {
		if (f.Outcome == check.Fail || f.Outcome == check.Warn) && (len(f.Fix) == 0 || slices.Contains(f.Fix, "")) {
			t.Errorf("%s %s %s: fix %q", f.Outcome, f.Check, f.Subject, f.Fix)
		}
	}
	for _, w := range ws {
		if !slices.ContainsFunc(fs, func(f check.Finding) bool {
			return f.Check == w.id && f.Outcome == w.out && strings.Contains(f.Subject, w.subject)
		}) {
			t.Errorf("want %v; got:\n%s", w, dump(fs))
		}
	}
	for _, f := range fs {
		if f.Outcome == check.Fail || f.Outcome == check.Warn || f.Outcome == check.Unknown {
			if !slices.ContainsFunc(ws, func(w want) bool {
				return w.id == f.Check && w.out == f.Outcome && strings.Contains(f.Subject, w.subject)
			}) {
				t.Errorf("unexpected %s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
			}
		}
	}
}

func dump(fs []check.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s [%s] %s\n", f.Outcome, f.Check, f.Subject, f.Message)
	}
	return b.String()
}

// Every capture: what it shows, on the right device, port and lane.
func TestCaptures(t *testing.T) {
	for _, tc := range []struct {
		dir, part string
		want      []want
	}{
		// 400G DR4 at 2718 min: healthy, every rule passing on the facts shown.
		{"mlxlink", "cx7-fw28.47_400GbE-DR4", []want{{IDEffectiveBER, "", check.Pass}, {IDRawBER, "", check.Pass}, {IDModuleDDM, "", check.Pass}, {IDLinkSpeed, "", check.Pass}, {IDLane, "", check.Pass}}},
		// The same port at 5710 min with the histogram: worst codeword 8 of 15.
		{"mlxlink", "fec-histogram-serdes-eye", []want{{IDHistogram, "", check.Pass}, {IDEffectiveBER, "", check.Pass}}},
		// Cut inside Supported Info: the cut named, the speed lists unknown, the link up.
		{"mlxlink", "cut-mid-object", []want{{IDCut, "mt4119_pciconf0 port 1", check.Unknown}, {IDLinkSpeed, "mt4119_pciconf0 port 1", check.Unknown}, {IDLinkState, "mt4119_pciconf0 port 1", check.Pass}, {IDFECMode, "mt4119_pciconf0 port 1", check.Pass}}},
		// CX-4 at 100GbE over 1715 min: no errors after FEC, raw errors on two lanes, none ten times the median.
		{"mlxlink", "nvidia-forum-206063", []want{{IDEffectiveBER, "mt4115_pciconf0", check.Pass}, {IDLane, "mt4115_pciconf0", check.Pass}, {IDLinkSpeed, "mt4115_pciconf0", check.Pass}}},
		// Passive DAC at NDR: LOS/LOL bits of a cable with no receiver are no signal indication.
		{"ibtools/cx7-ndr-b2b", "mlxlink_show_mo", []want{{IDModuleFlags, "mt4129_pciconf0", check.Pass}, {IDLinkState, "mt4129_pciconf0", check.Pass}}},
		// GX10: lane 2 holds 190 of 198 raw errors: a bad lane, warned (all
		// corrected); the author dropped rx_pcs_symbol_err_phy, so whether
		// frames were lost is unknown.
		{"ethtool-phy", "asus-gx10", []want{{IDLane, "lane 2", check.Warn}, {IDUncorrectable, "", check.Unknown}}},
		// RS active on enp1s0f1np1.
		{"ethtool-phy", "show-fec", []want{{IDFECMode, "enp1s0f1np1", check.Pass}}},
		// swp13: readings without the thresholds the author cut; high-power mode.
		{"ethtool-phy", "swp13-qsfp28", []want{{IDModuleDDM, "swp13", check.Unknown}, {IDModulePower, "swp13", check.Pass}}},
		// SFP-GE-BX on eth4: every reading inside its own thresholds.
		{"ethtool-phy", "sff8472", []want{{IDModuleDDM, "eth4", check.Pass}}},
		// ibdiagnet 1.5.7: one IPoIB warning (group rate below members').
		{"ibdiagnet", "archwiki", []want{{IDIBDiagStage, "IPoIB Subnets Check", check.Warn}, {IDIBDiagStage, "ibdiagnet stages", check.Pass}}},
	} {
		t.Run(tc.part, func(t *testing.T) {
			b, name := capture(t, tc.dir, tc.part)
			expect(t, judge(t, b, name), tc.want...)
		})
	}
}

// The findings say the limit, its source and the window; fixes name the
// port from the input.
func TestFindingsStateLimitSourceWindow(t *testing.T) {
	b, name := capture(t, "mlxlink", "nvidia-forum-206063")
	fs := judge(t, b, name)
	i := slices.IndexFunc(fs, func(f check.Finding) bool { return f.Check == IDEffectiveBER })
	if i < 0 || !strings.Contains(fs[i].Message, "1e-12") || !strings.Contains(fs[i].Message, "FEC1") || !strings.Contains(fs[i].Message, "1715.4 min") {
		t.Errorf("%+v", fs)
	}
	b, name = capture(t, "ibdiagnet", "archwiki")
	fs = judge(t, b, name)
	i = slices.IndexFunc(fs, func(f check.Finding) bool { return f.Outcome == check.Warn })
	if i < 0 || len(fs[i].Fix) != 1 || !strings.Contains(fs[i].Fix[0], "rate=6") || !strings.Contains(fs[i].Fix[0], "0x7fff") {
		t.Errorf("fix %+v", fs[i].Fix)
	}
	b, name = capture(t, "ethtool-phy", "asus-gx10")
	fs = judge(t, b, name)
	if !strings.Contains(fs[0].Message, "since the driver loaded") || !strings.Contains(fs[0].Message, "190") {
		t.Errorf("%s", fs[0].Message)
	}
}

// Healthy twins: the same formats, synthesised healthy, report nothing wrong.
func TestHealthyTwins(t *testing.T) {
	yuuki, _ := capture(t, "mlxlink", "cx7-fw28.47_400GbE-DR4")
	forum, _ := capture(t, "mlxlink", "nvidia-forum-206063")
	cut, _ := capture(t, "mlxlink", "cut-mid-object")
	ibd, _ := capture(t, "ibdiagnet", "archwiki")
	swp, _ := capture(t, "ethtool-phy", "swp13-qsfp28")
	for name, b := range map[string]string{
		"mlxlink json": string(yuuki),
		"mlxlink text": string(forum),
		// The lshca excerpt closed where it was cut: nothing cut, EDR on an EDR port and cable.
		"mlxlink json whole": string(cut) + `               "values" : [ "EDR", "FDR", "QDR" ]
            },
            "Supported Cable Speed" : { "mask" : "0x0000003f", "values" : [ "EDR", "FDR" ] }
         }
      }
   },
   "status" : { "code" : 0, "message" : "success" }
}
`,
		"ethtool -S lanes":  "$ ethtool -S enp1s0f0np0 | grep lane\nrx_err_lane_0_phy: 6\nrx_err_lane_1_phy: 2\nrx_err_lane_2_phy: 9\nrx_err_lane_3_phy: 4\nrx_pcs_symbol_err_phy: 0\n",
		"show-fec":          "FEC parameters for enp1s0f0np0:\nSupported/Configured FEC encodings: Auto\nActive FEC encoding: RS\n",
		"ibdiagnet legacy":  strings.Replace(strings.Replace(string(ibd), "IPoIB Subnets Check                      0      1", "IPoIB Subnets Check                      0      0", 1), "-W- Suboptimal rate", "-I- Optimal rate", 1),
		"ibdiagnet2":        "-I- Stage                     Warnings   Errors     Comment\n-I- Discovery                 0          0\n-I- Links Check               0          0\n",
		"ethtool -m QSFP28": strings.ReplaceAll(string(swp), " ...\n", "") + qsfpThresholds,
	} {
		t.Run(name, func(t *testing.T) {
			fs := judge(t, []byte(b), name)
			expect(t, fs)
			if len(fs) == 0 {
				t.Error("no finding at all: a healthy twin is judged, not ignored")
			}
		})
	}
}

const qsfpThresholds = ` Laser output power high alarm threshold   : 3.1623 mW / 5.00 dBm
 Laser output power low alarm threshold    : 0.1000 mW / -10.00 dBm
 Laser output power high warning threshold : 2.5119 mW / 4.00 dBm
 Laser output power low warning threshold  : 0.1585 mW / -8.00 dBm
 Laser rx power high alarm threshold       : 3.1623 mW / 5.00 dBm
 Laser rx power low alarm threshold        : 0.0631 mW / -12.00 dBm
 Laser rx power high warning threshold     : 2.5119 mW / 4.00 dBm
 Laser rx power low warning threshold      : 0.1000 mW / -10.00 dBm
`

// Faults synthesised from the real captures: each found on the right
// port, lane or channel, with the right outcome.
func TestFaults(t *testing.T) {
	yuuki, _ := capture(t, "mlxlink", "cx7-fw28.47_400GbE-DR4")
	hist, _ := capture(t, "mlxlink", "fec-histogram-serdes-eye")
	sfp, _ := capture(t, "ethtool-phy", "sff8472")
	y := func(old, new string) string {
		if !strings.Contains(string(yuuki), old) {
			t.Fatalf("%q not in the capture", old)
		}
		return `# mlxlink -d mlx5_2 --json` + "\n" + strings.Replace(string(yuuki), old, new, 1)
	}
	s := func(pairs ...string) string {
		out := string(sfp)
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(out, pairs[i]) {
				t.Fatalf("%q not in the capture", pairs[i])
			}
			out = strings.Replace(out, pairs[i], pairs[i+1], 1)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		b    string
		want []want
	}{
		{"errors after FEC", y(`"Effective Physical Errors" : "0"`, `"Effective Physical Errors" : "400000"`), []want{{IDEffectiveBER, "mlx5_2", check.Fail}}},
		{"window too short", y(`"Time Since Last Clear [Min]" : "2718.1"`, `"Time Since Last Clear [Min]" : "0.05"`), []want{{IDEffectiveBER, "mlx5_2", check.Unknown}}},
		{"raw BER at the FEC limit", y(`"Raw Physical BER" : "5E-10"`, `"Raw Physical BER" : "3E-4"`), []want{{IDRawBER, "mlx5_2", check.Fail}}},
		{"bad lane", y(`"3017647"`, `"993017647"`), []want{{IDLane, "mlx5_2 lane 0", check.Warn}}},
		{"rx power below the module's range", y(`"3.583,3.253,3.233,2.658 [-9.914..6.999]"`, `"3.583,3.253,-12.5,2.658 [-9.914..6.999]"`), []want{{IDModuleDDM, "mlx5_2 channel 3", check.Fail}}},
		{"contradicting range", y(`"61 [-10..80]"`, `"61 [80..-10]"`), []want{{IDModuleReading, "mlx5_2", check.Warn}}},
		{"speed downshift", y(`"Speed" : "400G"`, `"Speed" : "200G"`), []want{{IDLinkSpeed, "mlx5_2", check.Fail}}},
		{"FEC off on PAM4", y(`"FEC" : "Standard_RS-FEC - (544,514)"`, `"FEC" : "No FEC"`), []want{{IDFECMode, "mlx5_2", check.Fail}}},
		// No "# mlxlink -d" line: no device to name, so the catalog's fix, never "".
		{"port disabled, no device named", strings.Replace(string(yuuki), `"State" : "Active"`, `"State" : "Disabled"`, 1), []want{{IDLinkState, "", check.Warn}}},
		{"port polling", y(`"State" : "Active"`, `"State" : "Polling"`), []want{{IDLinkState, "mlx5_2", check.Fail}}},
		{"link drops", y(`"Link Down Counter" : "0"`, `"Link Down Counter" : "3"`), []want{{IDLinkDown, "mlx5_2", check.Warn}}},
		{"histogram at the limit", strings.Replace(string(hist), "\"[15]\",\n\t\t\t\t\t\t\"0\"", "\"[15]\",\n\t\t\t\t\t\t\"4\"", 1), []want{{IDHistogram, "", check.Warn}}},
		{"rx power in the warning band", s("0.2740 mW / -5.62 dBm", "0.0030 mW / -25.20 dBm"), []want{{IDModuleDDM, "eth4", check.Warn}}},
		{"rx power below the alarm", s("0.2740 mW / -5.62 dBm", "0.0010 mW / -30.00 dBm"), []want{{IDModuleDDM, "eth4", check.Fail}}},
		{"no light is a reading error", s("0.2740 mW / -5.62 dBm", "0.0000 mW / -inf dBm"), []want{{IDModuleReading, "eth4", check.Warn}}},
		{"thresholds out of order", s("Module voltage low alarm threshold        : 2.8050 V", "Module voltage low alarm threshold        : 3.9000 V"), []want{{IDModuleReading, "eth4", check.Warn}}},
		{"module's own alarm flag", s("Module temperature high alarm             : Off", "Module temperature high alarm             : On"), []want{{IDModuleFlags, "eth4", check.Fail}}},
		{"uncorrectable symbols", "$ ethtool -S ens3f0np0\nNIC statistics:\n     rx_pcs_symbol_err_phy: 12\n     rx_corrected_bits_phy: 4000\n", []want{{IDUncorrectable, "ens3f0np0", check.Fail}}},
		{"FEC off, speed unknown", "FEC parameters for eth2:\nConfigured FEC encodings: Off\nActive FEC encoding: Off\n", []want{{IDFECMode, "eth2", check.Unknown}}},
		{"low power", "# ethtool -m swp1\nIdentifier : 0x11 (QSFP28)\nPower set : On\nPower override : On\n", []want{{IDModulePower, "swp1", check.Fail}}},
		{"ibdiagnet2 errors", "-I- Stage                     Warnings   Errors     Comment\n-I- Links Check               0          2\n", []want{{IDIBDiagStage, "Links Check", check.Fail}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := judge(t, []byte(tc.b), tc.name)
			expect(t, fs, tc.want...)
			for _, f := range fs {
				if f.Outcome == check.Fail && len(f.Fix) == 0 {
					t.Errorf("%s fails without a fix", f.Check)
				}
			}
		})
	}
}

// Fixes name the device and port the input named, never a placeholder
// the input could fill.
func TestFixesNameThePort(t *testing.T) {
	b, _ := capture(t, "mlxlink", "cx7-fw28.47_400GbE-DR4")
	bad := strings.Replace("# mlxlink -d mlx5_2 -p 1 --json\n"+string(b), `"3017647"`, `"993017647"`, 1)
	for _, f := range judge(t, []byte(bad), "x") {
		if f.Check == IDLane && (len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "mlxlink -d mlx5_2 -p 1")) {
			t.Errorf("fix %q", f.Fix)
		}
	}
}

// Every check the rules report is in the catalog, and every entry says
// what it needs and when it is unknown.
func TestCatalog(t *testing.T) {
	ids := map[string]bool{}
	for _, e := range Catalog {
		if e.Title == "" || e.Why == "" || e.Needs == "" || e.UnknownWhen == "" || e.Source == "" || len(e.Fixes) == 0 {
			t.Errorf("%s: incomplete entry", e.ID)
		}
		ids[e.ID] = true
	}
	for _, id := range []string{IDEffectiveBER, IDRawBER, IDUncorrectable, IDHistogram, IDFECMode, IDLane, IDLinkState, IDLinkDown, IDLinkSpeed, IDModuleDDM, IDModuleReading, IDModuleFlags, IDModulePower, IDTrouble, IDCut, IDIBDiagStage} {
		if !ids[id] {
			t.Errorf("%s not in the catalog", id)
		}
	}
}

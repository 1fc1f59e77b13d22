package fabriccheck

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Node descriptions a node may give itself (issue 35), as far as ibsim's
// netlist carries them: its parser ends a description at the next double
// quote, so quotes are tested on recorded output instead
// (fabric.TestParseIBLinkInfoForgedDescriptions). These hold iblinkinfo's
// link syntax, ibnetdiscover's syntax, backslashes, an escape spelt out and
// a real ESC and tab, which the tools print as spaces (infiniband-diags
// blanks every unprintable byte of a description).
const (
	forgedSwitch = "x 3 1[ ] ==(12X 10.0 Gbps Active/ LinkUp)==> 1 2[ ] y\x1b[8m\tz"
	forgedCA     = `S-000 [1] # lid 4 lmc 0 \e[8m q\te 9 9[  ] ==( 1X 2.5 Gbps`
)

func forge(dump string) string {
	dump = strings.ReplaceAll(dump, `"SwitchIB Mellanox Technologies"`, `"`+forgedSwitch+`"`)
	return strings.ReplaceAll(dump, `"HCA-1"`, `"`+forgedCA+`"`)
}

// linkRates is every link by its ends' GUIDs and ports, with its rate:
// the structure a scan read.
func linkRates(s *fabric.Snapshot) map[string]string {
	m := map[string]string{}
	for _, l := range s.Links() {
		m[l.A.Key().String()+" ↔ "+l.B.Key().String()] = l.A.Width + " " + l.A.Speed + " " + l.B.Width + " " + l.B.Speed
	}
	return m
}

// A fabric under ibsim whose every node describes itself with the tools'
// own syntax is read and judged exactly as its plain twin: the same links
// at the same rates, the degraded link found naming both GUIDs, no other
// link finding, nothing unreadable; healthy passes (exit 0), degraded
// fails (exit 1).
func TestForgedDescriptionsOnIBSim(t *testing.T) {
	dump := testhost.EDRDump(1, 2, 3)
	bad := testhost.Degrade(dump, 2, 3, "1xEDR") // leaf 2's third HCA
	scanOf := func(netlist string) *fabric.Snapshot {
		sim := testhost.StartIBSim(t, netlist)
		sim.StartSM("", 0)
		sim.WaitUp(60 * time.Second)
		s := scan(t, sim, 0)
		sim.StopSMs()
		return s
	}
	plainBad, forgedBad, forgedGood := scanOf(bad), scanOf(forge(bad)), scanOf(forge(dump))
	if len(forgedBad.Unreadable) > 0 || len(forgedGood.Unreadable) > 0 {
		t.Fatalf("unreadable lines: %+v %+v", forgedBad.Unreadable, forgedGood.Unreadable)
	}
	want, got := linkRates(plainBad), linkRates(forgedBad)
	if len(want) != 8 || len(got) != len(want) {
		t.Fatalf("%d links forged, %d plain, want 8", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q with forged descriptions, %q plain", k, got[k], v)
		}
	}
	// The descriptions are still shown, whole.
	if n := forgedBad.Node(0x7cfe900300b60020); n == nil || n.Desc != strings.NewReplacer("\x1b", " ", "\t", " ").Replace(forgedSwitch) {
		t.Errorf("leaf 2's description: %+v", n)
	}

	fs := mustRun(t, forgedBad, Options{})
	lf := linkFindings(fs)
	if len(lf) != 1 || lf[0].Check != "fabric.link.width" || lf[0].Outcome != check.Fail {
		t.Fatalf("degraded: want one failing fabric.link.width, got %+v", lf)
	}
	for _, g := range []string{"0x248a070300c70206", "0x7cfe900300b60020"} {
		if !strings.Contains(lf[0].Subject, g) {
			t.Errorf("the degraded link's subject %q lacks %s", lf[0].Subject, g)
		}
	}
	if !strings.Contains(lf[0].Message, "runs at 1X EDR") {
		t.Errorf("degraded: %s", text(lf[0]))
	}
	if !check.Failed(fs) {
		t.Error("degraded fabric does not fail (exit 1)")
	}
	for _, f := range fs {
		if f.Check == "fabric.parse.unreadable" {
			t.Errorf("unreadable: %s", text(f))
		}
	}

	good := mustRun(t, forgedGood, Options{})
	for _, f := range good {
		if f.Outcome != check.Pass && f.Check != "fabric.port.errors" {
			t.Errorf("healthy twin: %s %s", f.Check, text(f))
		}
	}
	if check.Failed(good) {
		t.Error("healthy twin fails")
	}
}

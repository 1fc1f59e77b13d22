package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// An SR-IOV VF whose physical link is up while an SM answers (SM lid 1) is
// the SM not activating the virtual port, not a missing SM. The input is
// the real VF ibstat (ConnectX-5 VF, MT4120) with only its port lines
// edited to the InfiniBand case; the PF (MT4119) and no-SM cases keep
// "run opensm", and the Active VF passes.
func TestVFNotActivated(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ibtools/roce-cx5-sriov-vf-k8s/ibstat_vf_port_down.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ib := strings.NewReplacer("Physical state: Disabled", "Physical state: LinkUp", "SM lid: 0", "SM lid: 1", "Link layer: Ethernet", "Link layer: InfiniBand", "Base lid: 0", "Base lid: 7").Replace(string(b))
	for _, c := range []struct {
		name, text string
		outcome    check.Outcome
		msg, fix   string
	}{
		{"vf, SM answers", ib, check.Fail, "the SM has not activated this virtual port", "virt_enabled 2"},
		{"vf, no SM", strings.Replace(ib, "SM lid: 1", "SM lid: 0", 1), check.Fail, "virtual function Down", "sminfo"},
		{"pf, no SM", strings.Replace(strings.Replace(ib, "SM lid: 1", "SM lid: 0", 1), "MT4120", "MT4119", 1), check.Fail, "no subnet manager has configured it", "opensm"},
		{"pf, SM answers", strings.Replace(ib, "MT4120", "MT4119", 1), check.Fail, "although an SM answers at LID 1", "opensm.log"},
		{"vf active", strings.Replace(ib, "State: Down", "State: Active", 1), check.Pass, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := One("ibstat.txt", []byte(c.text), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got *check.Finding
			for i, f := range r.Findings {
				if f.Check == "port.state" && f.Subject == "mlx5_1 port 1" {
					got = &r.Findings[i]
				}
			}
			if c.outcome == check.Pass {
				for _, f := range r.Findings {
					if f.Check == "port.state" && f.Outcome != check.Pass {
						t.Errorf("%s %s: %s", f.Outcome, f.Subject, f.Message)
					}
				}
				return
			}
			if got == nil || got.Outcome != c.outcome || !strings.Contains(got.Message, c.msg) || !strings.Contains(strings.Join(got.Fix, " "), c.fix) {
				t.Fatalf("%+v", got)
			}
		})
	}
}

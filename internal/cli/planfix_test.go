package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// plan check prints real fixes (issue 37: it printed an empty "fix:" and
// "fix": [""]): on a real domain against seed 000's VM host, every failure
// and warning carries a fix, no line of it empty, naming the domain or the
// host's CPUs rather than VM, NODES or HOUSEKEEPING-CPUS.
func TestPlanCheckPrintsRealFixes(t *testing.T) {
	dom := filepath.Join(testhost.SharedTestdata(t), "libvirt", "sotigr-kvm-notes_brive-fedora-vm_q35_vcpupin-smt-pairs_emulatorpin-iothreadpin_3-pci-hostdev-gpu-audio-usb_no-numatune.xml.txt")
	text, errOut, code := run(t, "plan", "check", "--snapshot", "example:seed000-epyc", dom)
	if code != ExitFindings {
		t.Fatalf("exit %d %s\n%s", code, errOut, text)
	}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.TrimSpace(l); f == "fix:" || strings.HasPrefix(f, "fix: ") && (strings.Contains(f, " VM ") || strings.Contains(f, "NODES") || strings.Contains(f, "HOUSEKEEPING")) {
			t.Errorf("text: %q", l)
		}
	}
	out, errOut, _ := run(t, "plan", "check", "--snapshot", "example:seed000-epyc", dom, "-o", "json")
	var env struct {
		Findings []check.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("%v %s\n%s", err, errOut, out)
	}
	bad := 0
	for _, f := range env.Findings {
		if f.Outcome != check.Fail && f.Outcome != check.Warn {
			continue
		}
		bad++
		fix := strings.Join(f.Fix, "\n")
		if len(f.Fix) == 0 || strings.Contains("\n"+fix+"\n", "\n\n") || !strings.Contains(fix, "brive") && !strings.Contains(fix, "isolcpus=") {
			t.Errorf("%s %s: fix %q", f.Check, f.Subject, f.Fix)
		}
	}
	if bad == 0 {
		t.Errorf("no failure in %s", out)
	}
}

package cli

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// What a partial capture cannot show is said, not stated as a fact; two
// inputs naming two hosts are refused; demo takes the names every other
// command takes.
func TestOperatorHabits(t *testing.T) {
	ib := testhost.Captures(t)["sys-class-infiniband-h100.0"].Root
	out, _, code := run(t, "inventory", "--root", ib)
	if code != ExitOK || !strings.Contains(out, "CPUs: not in this capture") || !strings.Contains(out, "IOMMU: not in this capture") || strings.Contains(out, "0 package(s)") {
		t.Errorf("inventory of /sys/class/infiniband alone: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, "doctor", "--root", ib, "--snapshot", "example:hgx-h200"); code != ExitUsage || !strings.Contains(errOut, "name two different hosts") {
		t.Errorf("--root beside --snapshot: exit %d %q", code, errOut)
	}
	for _, name := range []string{"example:qdr-lab", "qdr-lab", "example:r730-qdr"} {
		if out, errOut, code := run(t, "demo", "--host", name); code != ExitOK || !strings.Contains(out, "example host r730-qdr") {
			t.Errorf("demo --host %s: exit %d %q", name, code, errOut)
		}
	}
}

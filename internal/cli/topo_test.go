package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// `judge FILE --snapshot S`: a saved nvidia-smi topo -m of the host in the
// snapshot agrees with it; one with a level changed is named; an hwloc
// tar.bz2 capture is a --snapshot source too.
func TestJudgeTopoWithSnapshot(t *testing.T) {
	s, err := examples.Load("hgx-h200")
	if err != nil {
		t.Fatal(err)
	}
	text := host.TopoOf(s).Format()
	p := filepath.Join(t.TempDir(), "topo.txt")
	os.WriteFile(p, []byte(text), 0o644)
	out, _, code := run(t, "judge", p, "--snapshot", "example:hgx-h200", "-v")
	if code != 0 || !strings.Contains(out, "topo.vs-snapshot") || !strings.Contains(out, "agrees with the snapshot on 8 GPU(s), 8 NIC(s)") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if f := strings.Split(l, "\t"); f[0] == "GPU0" {
			f[9] = "SYS" // GPU0 ↔ NIC0, PIX in the PCI tree
			lines[i] = strings.Join(f, "\t")
		}
	}
	os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
	out, _, _ = run(t, "judge", p, "--snapshot", "example:hgx-h200")
	if !strings.Contains(out, "topo.vs-snapshot") || !strings.Contains(out, "GPU0 ↔ mlx5_0: nvidia-smi says SYS, rdmalab's reading of the PCI tree says PIX") {
		t.Errorf("changed level not named:\n%s", out)
	}
	bz := filepath.Join(testhost.SharedTestdata(t), "sysfs", "hwloc", "32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2")
	out, errOut, code := run(t, "inventory", "--root", bz)
	if code != 0 || !strings.Contains(out, "mlx4_0") {
		t.Errorf("inventory --root %s: exit %d\n%s%s", bz, code, out, errOut)
	}
}

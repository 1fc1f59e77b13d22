package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// nccl run probes every node before any size runs, as bench does: nodes
// ssh cannot reach are exit 2, each named with why, and nothing is run
// (no results log, no output directory).
func TestNCCLRunPreflight(t *testing.T) {
	testhost.RequireTool(t, "ssh")
	dir := testhost.TempDir(t)
	cl := filepath.Join(dir, "cluster.yaml")
	// Port 9 on loopback: nothing listens, ssh is refused at once.
	os.WriteFile(cl, []byte(`nodes:
  - {name: n1, ssh: root@127.0.0.1, data: 127.0.0.1}
  - {name: n2, ssh: root@127.0.0.2, data: 127.0.0.2}
link: {layer: RoCE, rate_gbps: 100, mtu_bytes: 1024}
launcher:
  type: ssh
  ssh_options: ["-F", "/dev/null", "-p", "9"]
`), 0o644)
	runs := filepath.Join(dir, "runs")
	_, errOut, code := run(t, "nccl", "run", "--cluster", cl, "--nodes", "2", "--dir", runs)
	if code != ExitUsage || !strings.Contains(errOut, "2 of 2 node(s) not ready, nothing was run") || !strings.Contains(errOut, "n1: ") || !strings.Contains(errOut, "n2: ") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(runs); err == nil {
		t.Errorf("%s was made: something ran", runs)
	}
}

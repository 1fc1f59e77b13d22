package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestExporterTextfile(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	out := filepath.Join(t.TempDir(), "rdmalab.prom")
	if _, stderr, code := run(t, "exporter", "--root", root, "--textfile", out, "--expect-rate", "400"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_7",port="1"}`, `rdmalab_findings{outcome="fail",source="host"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile lacks %s", want)
		}
	}
	for _, bad := range [][]string{
		{"exporter", "--root", filepath.Join(root, "nope"), "--textfile", out},
		{"exporter", "--root", root, "--textfile", filepath.Join(t.TempDir(), "x.txt")},
		{"exporter", "--root", root, "--expect-link-layer", "ethernett"},
		{"exporter", "--root", root, "--listen", "256.0.0.1:1"},
	} {
		if _, stderr, code := run(t, bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, want 2 and one line: %q", bad, code, stderr)
		}
	}
}

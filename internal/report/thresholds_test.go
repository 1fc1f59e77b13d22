package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

// One threshold table: the defaults docs/cluster-file.md prints are the
// ones the code judges with (cluster.DefaultThresholds), and the HTML
// legend reads (it was 0.95/0.80 in the docs against 0.93/0.75 in code).
func TestThresholdsDocIsTheCodes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cluster-file.md"))
	if err != nil {
		t.Fatal(err)
	}
	d := cluster.DefaultThresholds
	for name, want := range map[string]float64{"healthy": d.Healthy, "degraded": d.Degraded, "bandwidth": d.Bandwidth,
		"latency": d.Latency, "above_ceiling": d.AboveCeiling, "spread": d.Spread} {
		m := regexp.MustCompile(`(?m)^  ` + name + `: ([0-9.]+) +# (.*)$`).FindSubmatch(b)
		if m == nil {
			t.Errorf("docs/cluster-file.md's thresholds block has no %s", name)
			continue
		}
		got, _ := strconv.ParseFloat(string(m[1]), 64)
		if got != want {
			t.Errorf("docs/cluster-file.md says %s: %g, the code uses %g", name, got, want)
		}
		pct := strconv.FormatFloat(100*want, 'f', 0, 64) + "%"
		if name != "latency" && !regexp.MustCompile(regexp.QuoteMeta(pct)).Match(m[2]) {
			t.Errorf("docs/cluster-file.md's comment on %s (%q) does not say %s", name, m[2], pct)
		}
	}
}

package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// An older perftest prints no percentile columns: the finding says what
// was printed, never "p99 0.00 µs". The real capture, with its two
// percentile columns cut from the header and every row.
func TestLatencyWithoutPercentiles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "perftest/azure-hbv3_ib_send_lat_all_server.txt"))
	if err != nil {
		t.Fatal(err)
	}
	header := regexp.MustCompile(`\s+99% percentile\[usec\]\s+99\.9% percentile\[usec\]`)
	row := regexp.MustCompile(`(?m)^(\s*\d+\s+\d+(?:\s+[\d.]+){5})\s+[\d.]+\s+[\d.]+\s*$`)
	old := row.ReplaceAllString(header.ReplaceAllString(string(b), ""), "$1")
	if old == string(b) {
		t.Fatal("the capture's percentile columns were not cut")
	}
	for _, c := range []struct{ text, want, not string }{
		{string(b), "p99 1.62 µs, p99.9 3.49 µs", "p99 0.00"},
		{old, "typical 1.60 µs", "p99"},
	} {
		fs, _, err := JudgePerftestFile("azure-hbv3_ib_send_lat_all_server.txt", []byte(c.text), nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range fs {
			if f.Check == "bench.perftest.latency" {
				found = true
				if !strings.Contains(f.Message, c.want) || strings.Contains(f.Message, c.not) {
					t.Errorf("%s: %q, want %q and no %q", f.Check, f.Message, c.want, c.not)
				}
			}
		}
		if !found {
			t.Errorf("no latency finding")
		}
	}
}

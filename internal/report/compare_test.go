package report

import (
	"bytes"
	"os"
	"testing"

	"github.com/rdmalab/rdmalab/internal/compare"
)

// Seed 000's optimised run against its CPU-contention run, rendered.
func TestCompareGolden(t *testing.T) {
	a, err := os.ReadFile("../compare/testdata/seed000-optimised.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../compare/testdata/seed000-contention.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r, err := compare.Run("optimised", a, "contention", b)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Compare(&out, r)
	golden(t, "compare-seed000.txt", out.Bytes())
}

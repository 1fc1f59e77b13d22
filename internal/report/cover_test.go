package report

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/judge"
)

// A cover run's terminal report says, before the tables, how many rounds
// ran and what the localiser named.
func TestBenchCoverLine(t *testing.T) {
	in, err := judge.Load([]string{"testdata/bench-cover/cover.json"})
	if err != nil || len(in.Bench) != 1 {
		t.Fatalf("%v, %d bench runs", err, len(in.Bench))
	}
	var b strings.Builder
	Bench(&b, in.Bench[0].Report)
	want := "Cover: 1 round(s) planned from the routes (fattree-2x4x4.net; routes fattree-2x4x4-ftree.opensm-lfts.dump), 1 follow-up round(s); confirmed: the cable leaf02 port 5 ↔ spine01 port 2 (confidence high)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("no cover line %q in:\n%s", want, b.String())
	}
}

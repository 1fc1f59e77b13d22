package nccl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// fromHeader cuts a real output to what a blog or ticket pastes: from the
// column header on, and without the "#  Rank" lines; end, when set, is the
// last line kept (a paste that stops inside the table).
func fromHeader(t *testing.T, file, end string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "#       size")
	if i < 0 {
		t.Fatal("no header")
	}
	s = s[i:]
	if end != "" {
		s = s[:strings.Index(s, end)+len(end)]
	}
	return []byte(s)
}

func finding(fs []check.Finding, id string) check.Finding {
	for _, f := range fs {
		if f.Check == id {
			return f
		}
	}
	return check.Finding{}
}

// A table pasted from its column header is read, and busbw/algbw says how
// many ranks ran (2(n−1)/n for all_reduce: 122.57/70.04 = 1.75 → 8), not
// "single rank … by definition".
func TestPastedTableRanksInferred(t *testing.T) {
	const alps = "nccl-tests/alps-gh200-slingshot/2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt"
	b := fromHeader(t, alps, "")
	if !Sniff(b) {
		t.Fatal("a table from its header is not recognised")
	}
	fs, res, err := JudgeFile("pasted.txt", b, JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if runs := res.(*FileResult).Runs; len(runs) != 1 || len(runs[0].Rows) != 25 {
		t.Fatalf("runs %+v", runs)
	}
	f := finding(fs, "nccl.tests.busbw")
	if f.Outcome != check.Unknown || f.Subject != "pasted.txt" || !strings.Contains(f.Message, "over 8 ranks (8 ranks inferred: busbw/algbw = 122.57/70.04 = 1.75 = 2(n−1)/n for all_reduce") || strings.Contains(f.Message, "single rank") {
		t.Errorf("%s %s: %s", f.Outcome, f.Subject, f.Message)
	}
	if c := finding(fs, "nccl.tests.complete"); c.Outcome != check.Pass {
		t.Errorf("complete: %s %s", c.Outcome, c.Message)
	}
	// cut inside the table: whether it concluded is not in the paste
	fs, _, _ = JudgeFile("pasted.txt", fromHeader(t, alps, "33554432       8388608     float     sum      -1    686.5   48.88   85.54      0    686.6   48.87   85.52      0"), JudgeOptions{})
	if c := finding(fs, "nccl.tests.complete"); c.Outcome != check.Unknown || !strings.Contains(c.Message, "pasted from its column header") {
		t.Errorf("cut paste: %s %s", c.Outcome, c.Message)
	}
	// reduce_scatter over 8 GPUs of one process: (n−1)/n = 0.875
	fs, _, err = JudgeFile("rs.txt", fromHeader(t, "nccl-tests/superbench/nccl_reducescatter.log", ""), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// reduce_scatter's count is one rank's share: size / (count × 4 bytes) = 8, exact
	if f := finding(fs, "nccl.tests.busbw"); !strings.Contains(f.Message, "8 ranks from the size and count columns: 8589934592 B / (268435456 × 4-byte float) = 8") {
		t.Errorf("reduce_scatter: %s", f.Message)
	}
}

// The healthy real outputs with their "#  Rank" lines keep their rank count
// from them: nothing is inferred.
func TestRanksFromRankLinesNotInferred(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-tests/superbench/nccl_allreduce.log"))
	fs, _, _ := JudgeFile("nccl_allreduce.log", b, JudgeOptions{})
	for _, f := range fs {
		for _, e := range f.Evidence {
			if strings.Contains(e.Value, "inferred") {
				t.Errorf("%s: %s", f.Check, e.Value)
			}
		}
	}
}

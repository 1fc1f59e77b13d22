package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// outcomes are the findings as "outcome check subject"; a failure without
// a fix (or with an empty line in it) is an error of its own.
func outcomes(t *testing.T, r *Result) []string {
	t.Helper()
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Outcome)+" "+f.Check+" "+f.Subject)
		if f.Outcome == check.Fail && (len(f.Fix) == 0 || slices.Contains(f.Fix, "")) {
			t.Errorf("%s %q fails with fix %q", f.Check, f.Subject, f.Fix)
		}
	}
	return out
}

// tcpLog is the real 6-node TCP loopback results log report's tests use.
func tcpLog(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "report", "testdata", "bench-tcp-loopback", "bw.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate rewrites the record of one direction (its first line) with
// the replacer's pairs.
func mutate(t *testing.T, log []byte, dir string, pairs ...string) []byte {
	t.Helper()
	lines := bytes.Split(log, []byte("\n"))
	from, to, _ := strings.Cut(dir, ">")
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"from":"`+from+`","to":"`+to+`"`)) {
			lines[i] = []byte(strings.NewReplacer(pairs...).Replace(string(l)))
			return bytes.Join(lines, []byte("\n"))
		}
	}
	t.Fatalf("no direction %s", dir)
	return nil
}

// The case on the real log: a direction that fell to 0 fails
// (it was "5 direction(s) compared, 0 fail"); one that vanished or failed
// in the newer run fails, named; the healthy twin (a later run with the
// same figures but its own start times) passes, exit 0.
func TestCompareFellToZeroOrVanished(t *testing.T) {
	base := tcpLog(t)
	twin := bytes.ReplaceAll(base, []byte(`"started":"2026-11-23T02:41:`), []byte(`"started":"2026-11-24T02:41:`))
	r, err := Run("before", base, "after", twin)
	if err != nil {
		t.Fatal(err)
	}
	if c := check.Count(r.Findings); c[check.Fail]+c[check.Unknown] > 0 || r.Self {
		t.Fatalf("healthy twin: %v", outcomes(t, r))
	}
	zero := mutate(t, twin, "node01>node06", `"samples_gbps":[9.720771708799214],"gbps":9.720771708799214`, `"samples_gbps":[0],"gbps":0`)
	r, err = Run("before", base, "after", zero)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(t, r); !slices.Contains(got, "fail compare.direction node01 → node06") {
		t.Errorf("fell to 0: %v", got)
	}
	if !check.Failed(r.Findings) {
		t.Errorf("fell to 0 must fail: %v", outcomes(t, r))
	}
	failed := mutate(t, twin, "node01>node06", `"samples_gbps":[9.720771708799214],"gbps":9.720771708799214`, `"error":"ib_write_bw: Couldn't connect to 10.0.0.6:18515"`)
	r, err = Run("before", base, "after", failed)
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(t, r)
	if !slices.Contains(got, "fail compare.missing node01 → node06 (tcp bw)") {
		t.Errorf("failed in the newer run: %v", got)
	}
	for _, f := range r.Findings {
		if f.Check == "compare.missing" && !strings.Contains(f.Message, "Couldn't connect") {
			t.Errorf("the newer run's error is named: %s", f.Message)
		}
	}
	var kept [][]byte
	for _, l := range bytes.Split(twin, []byte("\n")) {
		if !bytes.Contains(l, []byte(`"from":"node01","to":"node06"`)) {
			kept = append(kept, l)
		}
	}
	r, err = Run("before", base, "after", bytes.Join(kept, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(t, r); !slices.Contains(got, "fail compare.missing node01 → node06 (tcp bw)") {
		t.Errorf("vanished: %v", got)
	}
}

// Absurd values are no measurement: 9,999,999 Gb/s on one direction.
func TestCompareAbsurdValues(t *testing.T) {
	base := tcpLog(t)
	twin := bytes.ReplaceAll(base, []byte(`"started":"2026-11-23T02:41:`), []byte(`"started":"2026-11-24T02:41:`))
	huge := mutate(t, twin, "node03>node04", `"samples_gbps":[11.0679101000691],"gbps":11.0679101000691`, `"samples_gbps":[9999999],"gbps":9999999`)
	r, err := Run("before", base, "after", huge)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(t, r); !slices.Contains(got, "fail compare.absurd after") {
		t.Errorf("absurd: %v", got)
	}
}

// nccl-tests through compare: a busbw of inf or 9,999,999 GB/s fails; a
// plateau that fell to 0 is worse; a run missing from the newer output
// fails; the real output against itself is unproven.
func TestCompareNCCLAbsurdAndVanished(t *testing.T) {
	dir := filepath.Join(testhost.SharedTestdata(t), "nccl-tests", "rtx3090-inc")
	good, err := os.ReadFile(filepath.Join(dir, "2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The busbw of the largest size (out of place) becomes inf, then huge.
	lines := strings.Split(string(good), "\n")
	last := -1
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 8 && f[0] != "#" && strings.Contains(l, "float") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no result row")
	}
	for _, bad := range []string{"inf", "9999999"} {
		f := strings.Fields(lines[last])
		// size count type redop root time algbw busbw #wrong …
		f[7] = bad
		mut := slices.Clone(lines)
		mut[last] = strings.Join(f, " ")
		r, err := Run("before", good, "after", []byte(strings.Join(mut, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(t, r); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "fail compare.absurd") }) {
			t.Errorf("%s busbw: %v", bad, got)
		}
	}
	r, err := Run("a", good, "b", good)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(t, r); check.Failed(r.Findings) || !slices.Contains(got, "unknown compare.self b") {
		t.Errorf("self: %v", got)
	}
}

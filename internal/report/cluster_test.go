package report

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/intake"
)

const benchDir = "testdata/bench-tcp-loopback"

// The verdict: fail decides; with no fail, an unknown leaves it unproven;
// each deciding check is listed once.
func TestVerdict(t *testing.T) {
	f := func(id string, o check.Outcome) check.Finding {
		return check.Finding{Check: id, Outcome: o, Subject: "s"}
	}
	for _, c := range []struct {
		fs       []check.Finding
		want     VerdictState
		deciding int
	}{
		{nil, Unproven, 0},
		{[]check.Finding{f("a", check.Pass), f("b", check.Warn)}, Ready, 0},
		{[]check.Finding{f("a", check.Pass), f("b", check.Unknown)}, Ready, 0}, // b decides nothing
		{[]check.Finding{f("a", check.Pass), f("port.state", check.Unknown)}, Unproven, 1},
		{[]check.Finding{f("a", check.Fail), f("a", check.Fail), f("b", check.Fail), f("c", check.Unknown)}, NotReady, 2},
	} {
		v := NewClusterView(&intake.Inputs{Findings: c.fs})
		if v.Verdict.State != c.want || len(v.Verdict.Deciding) != c.deciding {
			t.Errorf("%v: %s with %d deciding, want %s with %d", c.fs, v.Verdict.State, len(v.Verdict.Deciding), c.want, c.deciding)
		}
	}
}

// The cluster view of the recorded run: a directed matrix (one cell per
// ordered pair, none on the diagonal), each judged as the bench document
// says; the results log alone is judged here against the peers and says so.
func TestBenchView(t *testing.T) {
	in, err := intake.Load([]string{benchDir})
	if err != nil {
		t.Fatal(err)
	}
	v := NewClusterView(in)
	if len(v.Benches) != 2 || len(in.Derived) != 0 || len(in.Skipped) != 2 {
		t.Fatalf("%d bench views (want bw and lat from the documents), derived %q, skipped %q", len(v.Benches), in.Derived, in.Skipped)
	}
	bw := v.Benches[0]
	if bw.Latency || !bw.RateDeclared || len(bw.Cells) != 30 || bw.Counts[CellMissing] != 0 || len(bw.Summaries) != 6 {
		t.Errorf("bw: latency %v, rate %v, %d cells, %v, %d summaries", bw.Latency, bw.RateDeclared, len(bw.Cells), bw.Counts, len(bw.Summaries))
	}
	seen := map[[2]string]bool{}
	for _, c := range bw.Cells {
		if c.Row == c.Col || c.From == c.To || seen[[2]string{c.From, c.To}] {
			t.Errorf("cell %+v: on the diagonal or twice", c)
		}
		seen[[2]string{c.From, c.To}] = true
		if !c.Failed() && (c.ShareOf != "link ceiling" || c.CeilingGbps < 11 || c.CeilingGbps > 12 || c.Share <= 0) {
			t.Errorf("cell %+v: want a share of the 12 Gb/s TCP link's ceiling", c)
		}
	}
	// The recorded run named node01's receive side, and its retests
	// against nodes healthy both ways did not confirm it.
	if len(bw.Suspects) != 1 || bw.Suspects[0].Node != "node01" || bw.Suspects[0].Side != "receive" || bw.Suspects[0].Confirmed != "no" || len(bw.Suspects[0].Retests) != 2 {
		t.Errorf("suspects %+v", bw.Suspects)
	}
	lat := v.Benches[1]
	if !lat.Latency || len(lat.Cells) != 30 || lat.Counts[CellGood]+lat.Counts[CellBad] != 30 || lat.Cells[0].P999Us <= 0 {
		t.Errorf("lat: %v %+v", lat.Counts, lat.Cells[0])
	}

	in, err = intake.Load([]string{filepath.Join(benchDir, "bw.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	v = NewClusterView(in)
	if len(v.Benches) != 1 || len(in.Derived) != 1 || !strings.Contains(in.Derived[0], "peers' median only") {
		t.Fatalf("results log alone: %d views, derived %q", len(v.Benches), in.Derived)
	}
	for _, c := range v.Benches[0].Cells {
		if !c.Failed() && (c.CeilingGbps != 0 || c.ShareOf == "link ceiling") {
			t.Errorf("cell %+v: a ceiling without a declared rate", c)
		}
	}
	if !strings.Contains(v.Benches[0].Against, "no link rate declared") {
		t.Errorf("against %q", v.Benches[0].Against)
	}
}

func TestClusterTextGolden(t *testing.T) {
	in, err := intake.Load([]string{"example:seed000-epyc", "example:hgx-h200", "example:qdr-lab", benchDir})
	if err != nil {
		t.Fatal(err)
	}
	v := NewClusterView(in)
	for _, width := range []int{60, 100, 200} {
		var buf bytes.Buffer
		Cluster(&Terminal{Writer: &buf, Style: Style{Width: width}}, v)
		golden(t, "term/cluster-"+itoa(width)+".txt", buf.Bytes())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

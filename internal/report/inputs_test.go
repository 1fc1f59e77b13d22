package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const benchDir = "testdata/bench-tcp-loopback"

// Every kind of input, in envelopes and bare, is told apart and read.
func TestLoadInputsKinds(t *testing.T) {
	dir := t.TempDir()
	h, err := examples.Load("seed000-epyc")
	if err != nil {
		t.Fatal(err)
	}
	fab, err := examples.LoadFabric("qdr-lab")
	if err != nil {
		t.Fatal(err)
	}
	var bareHost, bareFabric, hostDoc, doctorDoc, fabricDoc, benchDoc bytes.Buffer
	h.Encode(&bareHost)
	fab.Encode(&bareFabric)
	envelope.Write(&hostDoc, envelope.HostSnapshot, nil, h)
	doctor := hostcheck.Run(h, hostcheck.Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 100}, Source: "--expect-rate"}})
	envelope.Write(&doctorDoc, envelope.Doctor, doctor, nil)
	fabricFs, err := fabriccheck.Run(fab, fabriccheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	envelope.Write(&fabricDoc, envelope.FabricCheck, fabricFs, fab)
	bw, err := os.ReadFile(filepath.Join(benchDir, "bw.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	benchDoc.Write(must(os.ReadFile(filepath.Join(benchDir, "bw.json"))))

	for _, c := range []struct {
		name                     string
		file                     []byte
		hosts, fabrics, results  int
		judged                   envelope.Kind
		wantDerived, wantFinding bool
	}{
		{name: "bare host", file: bareHost.Bytes(), hosts: 1, wantDerived: true, wantFinding: true},
		{name: "bare fabric", file: bareFabric.Bytes(), fabrics: 1, wantDerived: true, wantFinding: true},
		{name: "host envelope", file: hostDoc.Bytes(), hosts: 1, wantDerived: true, wantFinding: true},
		{name: "doctor envelope", file: doctorDoc.Bytes(), judged: envelope.Doctor, wantFinding: true},
		{name: "fabric check envelope", file: fabricDoc.Bytes(), fabrics: 1, judged: envelope.FabricCheck, wantFinding: true},
		{name: "bench envelope", file: benchDoc.Bytes(), results: 1, judged: envelope.Bench, wantFinding: true},
		{name: "bench results log", file: bw, results: 1, wantDerived: true, wantFinding: true},
		{name: "bench results log cut short", file: append(bytes.Clone(bw), []byte(`{"from":"node01","to":"node0`)...), results: 1, wantDerived: true, wantFinding: true},
		{name: "doctor json before envelopes", file: mustJSON(t, map[string]any{"findings": doctor, "counts": check.Count(doctor)}), judged: envelope.Doctor, wantFinding: true},
		{name: "fabric check json before envelopes", file: mustJSON(t, fabricFs), judged: envelope.FabricCheck, wantFinding: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, dir, strings.ReplaceAll(c.name, " ", "-")+".json", c.file)
			in, err := LoadInputs([]string{p})
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Hosts) != c.hosts || len(in.Fabrics) != c.fabrics || len(in.Bench) != c.results {
				t.Errorf("%d hosts, %d fabrics, %d results; want %d, %d, %d", len(in.Hosts), len(in.Fabrics), len(in.Bench), c.hosts, c.fabrics, c.results)
			}
			if c.judged != "" && !in.Judged[c.judged] {
				t.Errorf("not marked as judged by a %s document", c.judged)
			}
			if (len(in.Derived) > 0) != c.wantDerived {
				t.Errorf("derived judgements %q, want some = %v", in.Derived, c.wantDerived)
			}
			if (len(in.Findings) > 0) != c.wantFinding {
				t.Errorf("%d findings", len(in.Findings))
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A doctor document is not judged twice: its findings are the host's.
func TestDoctorDocumentIsNotRejudged(t *testing.T) {
	dir := t.TempDir()
	h, _ := examples.Load("seed000-epyc")
	var snap, doc bytes.Buffer
	h.Encode(&snap)
	fs := hostcheck.Run(h, hostcheck.Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 100}, Source: "--expect-rate"}})
	envelope.Write(&doc, envelope.Doctor, fs, nil)
	in, err := LoadInputs([]string{write(t, dir, "h.json", snap.Bytes()), write(t, dir, "d.json", doc.Bytes())})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Findings) != len(fs) || len(in.Derived) != 0 {
		t.Errorf("%d findings (want the document's %d), derived %q", len(in.Findings), len(fs), in.Derived)
	}
}

func TestLoadInputsErrors(t *testing.T) {
	dir := t.TempDir()
	junk := write(t, dir, "d/notes.json", []byte(`{"hello": "world"}`))
	write(t, dir, "d/README.md", []byte("not looked at"))
	write(t, dir, "d/h.json", func() []byte {
		h, _ := examples.Load("r730-qdr")
		var b bytes.Buffer
		h.Encode(&b)
		return b.Bytes()
	}())
	// A directory skips what is not rdmalab output and says so.
	in, err := LoadInputs([]string{filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Hosts) != 1 || len(in.Skipped) != 1 || !strings.Contains(in.Skipped[0], "notes.json") {
		t.Errorf("hosts %d, skipped %q", len(in.Hosts), in.Skipped)
	}
	// Named on its own, the same file is an error naming it.
	_, err = LoadInputs([]string{junk})
	var unknown *UnknownInputError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "notes.json") {
		t.Errorf("junk file: %v", err)
	}
	for _, c := range []struct{ arg, want string }{
		{"example:nope", "hgx-h200"},
		{filepath.Join(dir, "missing.json"), "missing.json"},
		// Bench results from before directions are named, not guessed at.
		{write(t, dir, "old.jsonl", []byte("{\"a\":\"x\",\"b\":\"y\",\"engine\":\"tcp\",\"test\":\"bw\"}\n{\"a\":\"x\",\"b\":\"z\"}\n")), "older rdmalab"},
		{write(t, dir, "old-array.json", []byte(`[{"a":"x","b":"y","engine":"tcp","test":"bw"}]`)), "older rdmalab"},
		{write(t, dir, "old-doc.json", []byte(`{"kind":"bench","schema_version":1,"findings":[],"payload":{"results":[{"a":"x","b":"y"}]}}`)), "older rdmalab"},
		// A results log with a garbled line before good ones is refused.
		{write(t, dir, "bad.jsonl", func() []byte {
			log := must(os.ReadFile(filepath.Join(benchDir, "bw.jsonl")))
			head, rest, _ := bytes.Cut(log, []byte("\n"))
			return append(append(head, []byte("\nnot json\n")...), rest...)
		}()), "line 2"},
	} {
		if _, err := LoadInputs([]string{c.arg}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.arg, err, c.want)
		}
	}
	if _, err := LoadInputs(nil); err == nil {
		t.Error("no inputs accepted")
	}
}

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
		{[]check.Finding{f("a", check.Pass), f("b", check.Unknown)}, Unproven, 1},
		{[]check.Finding{f("a", check.Fail), f("a", check.Fail), f("b", check.Fail), f("c", check.Unknown)}, NotReady, 2},
	} {
		v := NewClusterView(&Inputs{Findings: c.fs})
		if v.Verdict.State != c.want || len(v.Verdict.Deciding) != c.deciding {
			t.Errorf("%v: %s with %d deciding, want %s with %d", c.fs, v.Verdict.State, len(v.Verdict.Deciding), c.want, c.deciding)
		}
	}
}

// The cluster view of the recorded run: a directed matrix (one cell per
// ordered pair, none on the diagonal), each judged as the bench document
// says; the results log alone is judged here against the peers and says so.
func TestBenchView(t *testing.T) {
	in, err := LoadInputs([]string{benchDir})
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

	in, err = LoadInputs([]string{filepath.Join(benchDir, "bw.jsonl")})
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
	in, err := LoadInputs([]string{"example:seed000-epyc", "example:hgx-h200", "example:qdr-lab", benchDir})
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

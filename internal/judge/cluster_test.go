package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
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

const benchDir = "../report/testdata/bench-tcp-loopback"

// load is report's road: intake reads, the judge step judges once.
func load(args []string) (*intake.Inputs, error) {
	in, err := intake.Load(args)
	if err != nil {
		return nil, err
	}
	if err := Cluster(in); err != nil {
		return nil, err
	}
	return in, nil
}

// Every kind of input, in envelopes and bare, is told apart and read.
func TestLoadKinds(t *testing.T) {
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
			in, err := load([]string{p})
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
	in, err := load([]string{write(t, dir, "h.json", snap.Bytes()), write(t, dir, "d.json", doc.Bytes())})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Findings) != len(fs) || len(in.Derived) != 0 {
		t.Errorf("%d findings (want the document's %d), derived %q", len(in.Findings), len(fs), in.Derived)
	}
}

func TestLoadErrors(t *testing.T) {
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
	in, err := load([]string{filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Hosts) != 1 || len(in.Skipped) != 1 || !strings.Contains(in.Skipped[0], "notes.json") {
		t.Errorf("hosts %d, skipped %q", len(in.Hosts), in.Skipped)
	}
	// Named on its own, the same file is an error naming it.
	_, err = load([]string{junk})
	var unknown *intake.UnknownInputError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "notes.json") {
		t.Errorf("junk file: %v", err)
	}
	for _, c := range []struct{ arg, want string }{
		{"example:nope", "hgx-h200"},
		// A saved tool output that claims a format but does not read is
		// named with its format.
		{write(t, dir, "check.txt", []byte("#warn: counter SymbolErrors = 5 (threshold 1)\n")), "check.txt (ibcheckerrors output): no FAILED port and no summary"},
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
		if _, err := load([]string{c.arg}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.arg, err, c.want)
		}
	}
	if _, err := load(nil); err == nil {
		t.Error("no inputs accepted")
	}
}

// A host tree or capture given to report is read as inventory --root
// reads it and judged by the doctor rules; a directory holding no host is
// one of outputs.
func TestLoadHostSources(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	capture := filepath.Join(testhost.SharedTestdata(t), "sysfs", "gpud", "sys-class-infiniband-h100.0.tar.gz")
	in, err := load([]string{root, capture, root})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Hosts) != 2 || in.Hosts[0].Hostname != "columbia.lab" || len(in.Hosts[1].RDMADevices) == 0 {
		t.Fatalf("%d hosts", len(in.Hosts))
	}
	if len(in.Derived) != 1 || !strings.Contains(in.Derived[0], "doctor rules") || len(in.Findings) == 0 {
		t.Errorf("derived %q, %d findings", in.Derived, len(in.Findings))
	}
	if len(in.Skipped) != 1 || !strings.Contains(in.Skipped[0], "given 2 times; read once") {
		t.Errorf("skipped %q", in.Skipped)
	}
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "sys"), 0o755)
	if _, err := load([]string{empty}); err == nil || !strings.Contains(err.Error(), "sys/ is empty") {
		t.Errorf("an empty sys/: %v", err)
	}
}

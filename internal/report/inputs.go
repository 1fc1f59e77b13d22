package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
)

// Inputs is everything a cluster report is made of: host snapshots,
// fabric snapshots, bench results and the findings of any rdmalab document.
type Inputs struct {
	Sources  []string // what the user named, in order
	Skipped  []string // files in named directories that are no rdmalab output, with why
	Hosts    []*host.Snapshot
	Fabrics  []*fabric.Snapshot
	Bench    []BenchResult
	Findings []check.Finding
	// Judged lists the kinds of document whose findings were given; for
	// inputs without them, the report runs the same rules itself (Derived).
	Judged  map[envelope.Kind]bool
	Derived []string
}

// BenchResult is one bench record, read leniently: the fields bench writes
// today plus those it is growing (direction, per-size rows).
type BenchResult struct {
	bench.Result
	Direction string `json:"direction,omitempty"`
	// Rows are per-message-size measurements (perftest -a); Samples is
	// accepted as another name for them.
	Rows    []bench.PerftestRow `json:"rows,omitempty"`
	Samples []bench.PerftestRow `json:"samples,omitempty"`
	Source  string              `json:"-"`
}

// maxInputBytes bounds one input file: rdmalab documents are far smaller.
const maxInputBytes = 256 << 20

// UnknownInputError says an input is no rdmalab output rdmalab can read.
type UnknownInputError struct {
	Path, Why string
}

func (e *UnknownInputError) Error() string {
	return fmt.Sprintf("%s: %s (want a host or fabric snapshot, an rdmalab --output json document or a bench results file)", e.Path, e.Why)
}

// LoadInputs reads every input: files, directories of them (recursively;
// files that are not rdmalab output are skipped and listed) and
// example:NAME. Host and fabric snapshots without findings of their kind
// are judged by the doctor and fabric rules with default options, so the
// verdict never rests on unjudged data.
func LoadInputs(args []string) (*Inputs, error) {
	in := &Inputs{Judged: map[envelope.Kind]bool{}}
	if len(args) == 0 {
		return nil, errors.New("no inputs: name host snapshots, rdmalab documents, bench results, directories or example:NAME")
	}
	for _, a := range args {
		in.Sources = append(in.Sources, a)
		if name, ok := strings.CutPrefix(a, "example:"); ok {
			if err := in.example(name); err != nil {
				return nil, err
			}
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", a, err)
		}
		if !st.IsDir() {
			if err := in.file(a); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl")) {
				return nil
			}
			var unknown *UnknownInputError
			if err := in.file(p); errors.As(err, &unknown) {
				in.Skipped = append(in.Skipped, unknown.Path+": "+unknown.Why)
				return nil
			} else if err != nil {
				return err
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", a, err)
		}
	}
	in.judge()
	return in, nil
}

func (in *Inputs) example(name string) error {
	if slices.Contains(examples.Names(), name) {
		s, err := examples.Load(name)
		if err != nil {
			return err
		}
		in.Hosts = append(in.Hosts, s)
		return nil
	}
	if slices.Contains(examples.FabricNames(), name) {
		s, err := examples.LoadFabric(name)
		if err != nil {
			return err
		}
		in.Fabrics = append(in.Fabrics, s)
		return nil
	}
	return fmt.Errorf("no example %q (hosts: %s; fabrics: %s)", name, strings.Join(examples.Names(), ", "), strings.Join(examples.FabricNames(), ", "))
}

func (in *Inputs) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("input %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInputBytes+1))
	if err != nil {
		return fmt.Errorf("input %s: %w", path, err)
	}
	if len(b) > maxInputBytes {
		return fmt.Errorf("input %s: larger than %d MiB, not an rdmalab output", path, maxInputBytes>>20)
	}
	return in.parse(path, b)
}

// parse tells what the bytes are: an envelope by its kind; else a bare
// host or fabric snapshot by its keys, a JSON array of bench results, or
// JSON lines of them.
func (in *Inputs) parse(path string, b []byte) error {
	kind, err := envelope.Peek(b)
	switch {
	case err == nil:
		return in.document(path, kind, b)
	case errors.Is(err, envelope.ErrNotEnvelope):
		return in.bare(path, b)
	case bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")):
		return in.array(path, b)
	case strings.HasPrefix(err.Error(), "not JSON"):
		return in.benchLines(path, b)
	}
	return fmt.Errorf("input %s: %w", path, err)
}

func (in *Inputs) document(path string, kind envelope.Kind, b []byte) error {
	var doc struct {
		Findings []check.Finding `json:"findings"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("input %s: %w", path, err)
	}
	in.Findings = append(in.Findings, doc.Findings...)
	if kind != envelope.HostSnapshot && kind != envelope.FabricSnapshot { // snapshots carry no judgement
		in.Judged[kind] = true
	}
	switch kind {
	case envelope.HostSnapshot:
		s, err := host.Decode(bytes.NewReader(doc.Payload))
		if err != nil {
			return fmt.Errorf("input %s: %w", path, err)
		}
		in.Hosts = append(in.Hosts, s)
	case envelope.FabricSnapshot, envelope.FabricCheck:
		if s, err := fabric.Decode(bytes.NewReader(doc.Payload)); err == nil {
			in.Fabrics = append(in.Fabrics, s)
		} else if kind == envelope.FabricSnapshot {
			return fmt.Errorf("input %s: %w", path, err)
		}
	case envelope.Bench:
		// The payload is results, or an object holding them.
		var wrapped struct {
			Results json.RawMessage `json:"results"`
		}
		raw := doc.Payload
		if json.Unmarshal(raw, &wrapped) == nil && len(wrapped.Results) > 0 {
			raw = wrapped.Results
		}
		if len(raw) > 0 && raw[0] == '[' {
			return in.benchArray(path, raw)
		}
	}
	return nil
}

func (in *Inputs) bare(path string, b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return &UnknownInputError{path, "JSON but not an object"}
	}
	_, hasPorts := keys["ports"]
	_, hasSMs := keys["subnet_managers"]
	_, hasHost := keys["hostname"]
	_, hasPCI := keys["pci_devices"]
	switch {
	case hasPorts && hasSMs:
		s, err := fabric.Decode(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("input %s: %w", path, err)
		}
		in.Fabrics = append(in.Fabrics, s)
	case hasHost || hasPCI:
		s, err := host.Decode(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("input %s: %w", path, err)
		}
		in.Hosts = append(in.Hosts, s)
	case keys["a"] != nil && keys["b"] != nil:
		return in.benchLines(path, b)
	case keys["findings"] != nil:
		// doctor --output json before envelopes: {"findings": [...], "counts": {...}}
		var doc struct {
			Findings []check.Finding `json:"findings"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return &UnknownInputError{path, "findings that do not read as findings: " + err.Error()}
		}
		in.addFindings(doc.Findings)
	default:
		return &UnknownInputError{path, "a JSON object of no kind rdmalab writes"}
	}
	return nil
}

// array is bench --output json (results) or, from before envelopes,
// fabric check --output json (findings).
func (in *Inputs) array(path string, b []byte) error {
	var head []map[string]json.RawMessage
	if err := json.Unmarshal(b, &head); err != nil {
		return &UnknownInputError{path, "a JSON array of no kind rdmalab writes"}
	}
	if len(head) > 0 && head[0]["check"] != nil && head[0]["outcome"] != nil {
		var fs []check.Finding
		if err := json.Unmarshal(b, &fs); err != nil {
			return &UnknownInputError{path, "findings that do not read as findings: " + err.Error()}
		}
		in.addFindings(fs)
		return nil
	}
	return in.benchArray(path, b)
}

// addFindings takes findings from a file without a kind, and marks the
// kinds of judgement they are by their check ids.
func (in *Inputs) addFindings(fs []check.Finding) {
	for _, f := range fs {
		switch {
		case strings.HasPrefix(f.Check, "fabric."):
			in.Judged[envelope.FabricCheck] = true
		case strings.HasPrefix(f.Check, "bench."):
			in.Judged[envelope.Bench] = true
		default:
			in.Judged[envelope.Doctor] = true
		}
	}
	in.Findings = append(in.Findings, fs...)
}

func (in *Inputs) benchArray(path string, b []byte) error {
	var rs []BenchResult
	if err := json.Unmarshal(b, &rs); err != nil {
		return &UnknownInputError{path, "a JSON array that is not bench results: " + err.Error()}
	}
	return in.addBench(path, rs)
}

// benchLines reads a bench --results file: one JSON object a line; a last
// line cut short by an interrupted run is ignored, as bench --resume does.
func (in *Inputs) benchLines(path string, b []byte) error {
	var rs []BenchResult
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var r BenchResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			if i == len(lines)-1 && i > 0 {
				break
			}
			return &UnknownInputError{path, fmt.Sprintf("line %d is not a bench result: %v", i+1, err)}
		}
		rs = append(rs, r)
	}
	return in.addBench(path, rs)
}

func (in *Inputs) addBench(path string, rs []BenchResult) error {
	for i := range rs {
		if rs[i].A == "" || rs[i].B == "" {
			return &UnknownInputError{path, fmt.Sprintf("record %d names no pair (a, b)", i+1)}
		}
		if len(rs[i].Rows) == 0 {
			rs[i].Rows = rs[i].Samples
		}
		rs[i].Samples = nil
		rs[i].Source = path
	}
	in.Bench = append(in.Bench, rs...)
	return nil
}

// judge runs the doctor and fabric rules on snapshots whose judgement was
// not given, and turns bench verdicts into findings when no bench document
// carried them, so the verdict rests on every input.
func (in *Inputs) judge() {
	if len(in.Hosts) > 0 && !in.Judged[envelope.Doctor] {
		in.Findings = append(in.Findings, hostcheck.Doctor(in.Hosts, hostcheck.Options{})...)
		rate := "no expected rate with one host: ports are judged against their NIC's maximum; a doctor document made with --expect-rate says more"
		if len(in.Hosts) > 1 {
			rate = "expected rate: the fleet's majority, where there is one"
		}
		in.Derived = append(in.Derived, "doctor rules on the host snapshots (no doctor results given; "+rate+")")
	}
	if len(in.Fabrics) > 0 && !in.Judged[envelope.FabricCheck] {
		for _, s := range in.Fabrics {
			fs, err := fabriccheck.Run(s, fabriccheck.Options{})
			if err != nil { // only a topology plan can fail, and none is given
				panic(err)
			}
			in.Findings = append(in.Findings, fs...)
		}
		in.Derived = append(in.Derived, "fabric check rules on the fabric snapshots (no fabric check results given; default thresholds)")
	}
	if len(in.Bench) > 0 && !in.Judged[envelope.Bench] {
		in.Findings = append(in.Findings, benchFindings(in.Bench)...)
		in.Derived = append(in.Derived, "bench verdicts as findings (each result's own verdict)")
	}
	check.Sort(in.Findings)
}

// benchFindings states each first-round pair's verdict as bench itself
// decides its exit code: degraded, broken and failed pairs fail; a pair
// without an expected link is unknown. A retest names a suspect node.
func benchFindings(rs []BenchResult) []check.Finding {
	var out []check.Finding
	for _, r := range rs {
		subject := r.A + " ↔ " + r.B
		ev := []check.Evidence{{What: "result", Value: r.Judgment, Source: r.Source}}
		f := check.Finding{Check: "bench.pair", Subject: subject, Evidence: ev}
		if r.Retest {
			f.Check, f.Subject = "bench.retest", r.B
		}
		switch {
		case r.Error != "":
			f.Outcome, f.Message = check.Fail, fmt.Sprintf("%s %s failed: %s", r.Engine, r.Test, r.Error)
		case r.Verdict == bench.Healthy:
			f.Outcome, f.Message = check.Pass, r.Judgment
		case r.Verdict == bench.Degraded || r.Verdict == bench.Broken:
			f.Outcome, f.Message = check.Fail, r.Judgment
		case r.Gbps == 0 && r.P50Us > 0:
			continue // latency has no verdict; the heatmap shows it
		default:
			f.Outcome, f.Message = check.Unknown, "no verdict: "+r.Judgment
		}
		if r.Retest {
			if f.Outcome == check.Pass {
				f.Message = fmt.Sprintf("fine against known-good %s: %s", r.A, r.Judgment)
			} else {
				f.Message = fmt.Sprintf("still %s against known-good %s: %s", f.Outcome, r.A, f.Message)
			}
		}
		out = append(out, f)
	}
	return out
}

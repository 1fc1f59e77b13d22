package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/intake"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Inputs is everything a cluster report is made of: host snapshots,
// fabric snapshots, bench results and the findings of any rdmalab document.
type Inputs struct {
	Sources []string // what the user named, in order
	Skipped []string // files in named directories that are no rdmalab output, with why; files given more than once
	Hosts   []*host.Snapshot
	Fabrics []*fabric.Snapshot
	Bench   []BenchRun
	// logs are results logs judged here, kept apart until judge() knows
	// whether a bench document of the same run was given too.
	logs     []BenchRun
	Findings []check.Finding
	// Judged lists the kinds of document whose findings were given; for
	// inputs without them, the report runs the same rules itself (Derived).
	Judged  map[envelope.Kind]bool
	Derived []string
	dups    []dupFile
	// RunLogs are the results logs given, as read: two of them are also
	// compared (the compare section).
	RunLogs []RunLog
}

// RunLog is one results log given to the report.
type RunLog struct {
	Path string
	Data []byte
}

// BenchRun is one judged bench test (one engine and test over a cluster):
// the payload of a bench document, or a results log judged here. Findings
// are the run's own (the document's, or those Analyze made here).
type BenchRun struct {
	*bench.Report
	Source string
	// FromLog is set when the report judged a results log itself, against
	// the peers only (no cluster file, so no declared rate).
	FromLog  bool
	Findings []check.Finding
}

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
		if x, ok, err := intake.Example(a); ok {
			if err != nil {
				return nil, err
			}
			if x.Host != nil {
				in.Hosts = append(in.Hosts, x.Host)
			} else {
				in.Fabrics = append(in.Fabrics, x.Fabric)
			}
			continue
		}
		st, err := userfile.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("input %w", err)
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
			var refused *userfile.Error
			if err := in.file(p); errors.As(err, &unknown) {
				in.Skipped = append(in.Skipped, unknown.Path+": "+unknown.Why)
				return nil
			} else if errors.As(err, &refused) && refused.Path == p {
				// A FIFO, device or oversized file inside a named
				// directory is listed, like any file that is no output.
				in.Skipped = append(in.Skipped, refused.Error())
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
	if len(in.Hosts)+len(in.Fabrics)+len(in.Bench)+len(in.logs)+len(in.Findings) == 0 && len(in.Judged) == 0 {
		// A report of nothing would read as a verdict on nothing.
		why := "no rdmalab output in " + strings.Join(quoted(args), ", ")
		if len(in.Skipped) > 0 {
			why += fmt.Sprintf(" (%d file(s) skipped: %s)", len(in.Skipped), in.Skipped[0])
		}
		return nil, errors.New(why)
	}
	for _, d := range in.dups {
		if d.n > 1 {
			in.Skipped = append(in.Skipped, fmt.Sprintf("%s: given %d times; read once", userfile.Name(d.path), d.n))
		}
	}
	in.judge()
	return in, nil
}

// dupFile is a file and how many times the inputs named it.
type dupFile struct {
	path string
	info os.FileInfo
	n    int
}

// seen reports a file already read (the same file by another name, a
// directory and a file in it), counting it.
func (in *Inputs) seen(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	for i := range in.dups {
		if os.SameFile(in.dups[i].info, st) {
			in.dups[i].n++
			return true
		}
	}
	in.dups = append(in.dups, dupFile{path, st, 1})
	return false
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = userfile.Name(n)
	}
	return out
}

func (in *Inputs) file(path string) error {
	if in.seen(path) {
		return nil
	}
	b, err := userfile.ReadFile(path, userfile.Document)
	if err != nil {
		return fmt.Errorf("input %w", err)
	}
	return in.parse(path, b)
}

// parse tells what the bytes are: an envelope by its kind; else a bare
// host or fabric snapshot by its keys, a bench results log by its header
// line, or findings from before envelopes.
func (in *Inputs) parse(path string, b []byte) error {
	if isResultsLog(b) {
		return in.benchLog(path, b)
	}
	kind, err := envelope.Peek(b)
	switch {
	case err == nil:
		return in.document(path, kind, b)
	case errors.Is(err, envelope.ErrNotEnvelope):
		return in.bare(path, b)
	case bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")):
		return in.array(path, b)
	case strings.HasPrefix(err.Error(), "not JSON"):
		if oldBenchLines(b) {
			return &UnknownInputError{path, oldBenchWhy}
		}
		return &UnknownInputError{path, "not JSON, and not a bench results log (no header line)"}
	}
	return fmt.Errorf("input %s: %w", path, err)
}

// oldBenchWhy: results from before bench measured directions (pairs a/b,
// no header line) carry neither direction nor samples; judging them again
// would invent both, so they are named, not read.
const oldBenchWhy = "bench results from an older rdmalab (one record per pair a/b, no header line): this rdmalab judges measured directions; run rdmalab bench again (its --results log or --output json)"

// isResultsLog: the first line is a results log header.
func isResultsLog(b []byte) bool {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var h bench.Header
	return json.Unmarshal(first, &h) == nil && h.Format == bench.Format
}

// oldBenchLines: the first line is an old pair record ({"a": …, "b": …}).
func oldBenchLines(b []byte) bool {
	first, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	var keys map[string]json.RawMessage
	return json.Unmarshal(first, &keys) == nil && keys["a"] != nil && keys["b"] != nil
}

func (in *Inputs) document(path string, kind envelope.Kind, b []byte) error {
	var doc struct {
		Findings []check.Finding `json:"findings"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("input %s: %w", path, err)
	}
	var rep bench.Report
	if kind == envelope.Bench {
		// Older bench documents held pair results, not a judged report.
		if err := json.Unmarshal(doc.Payload, &rep); err != nil || rep.Engine == "" {
			return &UnknownInputError{path, oldBenchWhy}
		}
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
		var mine []check.Finding
		for _, f := range doc.Findings {
			if strings.HasPrefix(f.Check, "bench.") {
				mine = append(mine, f)
			}
		}
		in.Bench = append(in.Bench, BenchRun{Report: &rep, Source: path, Findings: mine})
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
		return &UnknownInputError{path, oldBenchWhy}
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

// array is, from before envelopes, fabric check --output json (findings)
// or bench --output json (pair results, no longer read).
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
	if len(head) > 0 && head[0]["a"] != nil && head[0]["b"] != nil {
		return &UnknownInputError{path, oldBenchWhy}
	}
	return &UnknownInputError{path, "a JSON array of no kind rdmalab writes"}
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

// benchLog reads a bench --results log and judges each of its tests with
// bench.Analyze against a cluster made of the nodes it names: no cluster
// file, so no declared rate and default thresholds (peers only). A torn
// last line (an interrupted run) is left out, as bench --resume does.
func (in *Inputs) benchLog(path string, b []byte) error {
	h, recs, _, err := bench.ParseLog(b)
	if err != nil {
		return &UnknownInputError{path, err.Error()}
	}
	in.RunLogs = append(in.RunLogs, RunLog{path, b})
	type test struct{ engine, test string }
	var order []test
	byTest := map[test][]bench.Record{}
	for _, r := range recs {
		k := test{r.Engine, r.Test}
		if _, ok := byTest[k]; !ok {
			order = append(order, k)
		}
		byTest[k] = append(byTest[k], r)
	}
	for _, k := range order {
		rs := byTest[k]
		var names []string
		latency := k.test == "lat" || strings.HasSuffix(k.test, "_lat")
		for _, r := range rs {
			for _, n := range []string{r.From, r.To} {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			if !r.Failed() && r.P50Us > 0 && r.Gbps == 0 {
				latency = true
			}
		}
		slices.Sort(names)
		c := &cluster.Cluster{Thresholds: cluster.DefaultThresholds}
		for _, n := range names {
			c.Nodes = append(c.Nodes, cluster.Node{Name: n})
		}
		rep := bench.Analyze(c, k.engine, k.test, latency, rs, nil, nil)
		run := BenchRun{Report: rep, Source: path, FromLog: true, Findings: rep.Findings}
		if h.Nodes > len(names) {
			run.Findings = append(run.Findings, check.Finding{Check: "bench.run", Outcome: check.Unknown, Subject: "cluster",
				Message:  fmt.Sprintf("the results log's cluster has %d nodes but its %s %s records name %d: the others were never measured (an interrupted run?)", h.Nodes, k.engine, k.test, len(names)),
				Evidence: []check.Evidence{{What: "header", Value: fmt.Sprintf("%d nodes, cluster %s", h.Nodes, h.Cluster), Source: path}}})
		}
		in.logs = append(in.logs, run)
	}
	if len(order) == 0 {
		in.logs = append(in.logs, BenchRun{Report: &bench.Report{Engine: "?", Test: "?"}, Source: path, FromLog: true,
			Findings: []check.Finding{{Check: "bench.run", Outcome: check.Unknown, Subject: "cluster", Message: "the results log holds no result: nothing was measured",
				Evidence: []check.Evidence{{What: "header", Value: fmt.Sprintf("%d nodes, cluster %s", h.Nodes, h.Cluster), Source: path}}}}})
	}
	return nil
}

// sameRun: a results log's test is the run a bench document reports when
// every direction is the same measurement (ends and start time).
func sameRun(a, b *bench.Report) bool {
	if a.Engine != b.Engine || a.Test != b.Test || len(a.Directions) != len(b.Directions) {
		return false
	}
	key := func(d bench.Direction) string { return d.From + ">" + d.To + "@" + d.Started.String() }
	seen := map[string]bool{}
	for _, d := range a.Directions {
		seen[key(d)] = true
	}
	for _, d := range b.Directions {
		if !seen[key(d)] {
			return false
		}
	}
	return true
}

// judge runs the doctor and fabric rules on snapshots whose judgement was
// not given, and adds the verdicts of the results logs judged here (unless
// a bench document of the same run was given), so the verdict rests on
// every input.
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
	for _, l := range in.logs {
		dup := ""
		for _, d := range in.Bench {
			if !d.FromLog && sameRun(d.Report, l.Report) {
				dup = d.Source
			}
		}
		if dup != "" {
			in.Skipped = append(in.Skipped, fmt.Sprintf("%s: %s %s is the run the bench document %s reports (judged there, with its cluster file)", l.Source, l.Engine, l.Test, dup))
			continue
		}
		in.Bench = append(in.Bench, l)
		in.Findings = append(in.Findings, l.Findings...)
		in.Derived = append(in.Derived, fmt.Sprintf("bench verdicts for %s %s from the results log %s: judged here against the peers' median only (no cluster file given, so no declared link rate; default thresholds)", l.Engine, l.Test, l.Source))
	}
	in.logs = nil
	check.Sort(in.Findings)
}

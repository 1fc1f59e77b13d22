package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/host"
)

// OldBenchWhy: results from before bench measured directions (pairs a/b,
// no header line) carry neither direction nor samples; judging them again
// would invent both, so they are named, not read.
const OldBenchWhy = "bench results from an older rdmalab (one record per pair a/b, no header line): this rdmalab judges measured directions; run rdmalab bench again (its --results log or --output json)"

// Classify says what the bytes of the file called name are: a bench
// results log by its header line; an rdmalab envelope by its kind; a bare
// host or fabric snapshot by its keys; findings from before envelopes; a
// saved tool output by the format registry (internal/formats); else Unknown with why. A snapshot
// or document that does not decode is an error naming the file.
func Classify(name string, b []byte) (*Input, error) {
	in := &Input{Name: name, Data: b}
	if bench.Results.Is(b) { // before Peek, which would scan the whole log
		in.resultsLog()
		return in, nil
	}
	var err error
	switch kind, perr := envelope.Peek(b); {
	case perr == nil:
		err = in.document(kind)
	case errors.Is(perr, envelope.ErrNotEnvelope):
		err = in.bare()
	case bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")):
		in.array()
	case strings.HasPrefix(perr.Error(), "not JSON"):
		in.unknown("not JSON, and not a bench results log (no header line)")
		if oldBenchLines(b) {
			in.Why = OldBenchWhy
		}
	default: // an envelope this rdmalab cannot read (a newer schema)
		err = perr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return in, nil
}

// unknown marks an input no rdmalab output claims; the format registry may
// still know it as a saved tool output.
func (in *Input) unknown(why string) {
	in.What, in.Why = Unknown, why
	if in.Why == OldBenchWhy {
		return
	}
	b := formats.LF(in.Data)
	if f := formats.Recognise(b); f != nil {
		in.What, in.Why, in.Format, in.Data = ToolOutput, "", f, b
		if f.Name == formats.NCCLFormat {
			in.What = NCCLResults
		}
	}
}

// resultsLog checks the log reads (a torn last line is left out, as bench
// --resume does); a garbled one is Unknown, naming the line.
func (in *Input) resultsLog() {
	h, recs, _, err := bench.Results.Parse(in.Data)
	if err != nil {
		in.What, in.Why = Unknown, err.Error()
		return
	}
	in.What, in.Log = ResultsLog, &Log{h, recs}
}

// oldBenchLines: the first line is an old pair record ({"a": …, "b": …}).
func oldBenchLines(b []byte) bool {
	first, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	var keys map[string]json.RawMessage
	return json.Unmarshal(first, &keys) == nil && keys["a"] != nil && keys["b"] != nil
}

func (in *Input) document(kind envelope.Kind) error {
	var doc struct {
		Findings []check.Finding `json:"findings"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(in.Data, &doc); err != nil {
		return err
	}
	in.What, in.Kind, in.Findings = Document, kind, doc.Findings
	switch kind {
	case envelope.HostSnapshot:
		// The whole document, so errors name its lines.
		s, err := host.DecodeBytes(in.Data)
		if err != nil {
			return err
		}
		in.What, in.Host = HostSnapshot, s
	case envelope.FabricSnapshot:
		s, err := fabric.Decode(bytes.NewReader(in.Data))
		if err != nil {
			return err
		}
		in.What, in.Fabric = FabricSnapshot, s
	case envelope.FabricCheck:
		// The scan travels with its findings when there was one.
		if s, err := fabric.Decode(bytes.NewReader(doc.Payload)); err == nil {
			in.Fabric = s
		}
	case envelope.Bench:
		// Older bench documents held pair results, not a judged report.
		var rep bench.Report
		if err := json.Unmarshal(doc.Payload, &rep); err != nil || rep.Engine == "" {
			in.What, in.Kind, in.Findings, in.Why = Unknown, "", nil, OldBenchWhy
			return nil
		}
		in.Bench = &rep
	}
	return nil
}

// bare tells a JSON object without a kind by its keys: a snapshot or
// findings from before envelopes.
func (in *Input) bare() error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(in.Data, &keys); err != nil {
		in.unknown("JSON but not an object")
		return nil
	}
	_, hasPorts := keys["ports"]
	_, hasSMs := keys["subnet_managers"]
	_, hasHost := keys["hostname"]
	_, hasPCI := keys["pci_devices"]
	switch {
	case hasPorts && hasSMs:
		s, err := fabric.Decode(bytes.NewReader(in.Data))
		if err != nil {
			return err
		}
		in.What, in.Fabric = FabricSnapshot, s
	case hasHost || hasPCI:
		s, err := host.DecodeBytes(in.Data)
		if err != nil {
			return err
		}
		in.What, in.Host = HostSnapshot, s
	case keys["a"] != nil && keys["b"] != nil:
		in.unknown(OldBenchWhy)
	case keys["findings"] != nil:
		// doctor --output json before envelopes: {"findings": [...], "counts": {...}}
		var doc struct {
			Findings []check.Finding `json:"findings"`
		}
		if err := json.Unmarshal(in.Data, &doc); err != nil {
			in.unknown("findings that do not read as findings: " + err.Error())
			return nil
		}
		in.What, in.Kind, in.Findings = OldFindings, envelope.Doctor, doc.Findings
	default:
		in.unknown("a JSON object of no kind rdmalab writes")
	}
	return nil
}

// array is, from before envelopes, fabric check --output json (findings)
// or bench --output json (pair results, no longer read).
func (in *Input) array() {
	var head []map[string]json.RawMessage
	if err := json.Unmarshal(in.Data, &head); err != nil {
		in.unknown("a JSON array of no kind rdmalab writes")
		return
	}
	switch {
	case len(head) > 0 && head[0]["check"] != nil && head[0]["outcome"] != nil:
		var fs []check.Finding
		if err := json.Unmarshal(in.Data, &fs); err != nil {
			in.unknown("findings that do not read as findings: " + err.Error())
			return
		}
		in.What, in.Kind, in.Findings = OldFindings, envelope.FabricCheck, fs
	case len(head) > 0 && head[0]["a"] != nil && head[0]["b"] != nil:
		in.unknown(OldBenchWhy)
	default:
		in.unknown("a JSON array of no kind rdmalab writes")
	}
}

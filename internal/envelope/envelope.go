// Package envelope is the one JSON document every rdmalab command writes
// with --output json and every reader of rdmalab files accepts: what kind
// of document it is, its schema version, the counts a script checks first,
// the findings, then the command's own payload. docs/json.md describes it.
package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rdmalab/rdmalab/internal/buildinfo"
	"github.com/rdmalab/rdmalab/internal/check"
)

// Version is the envelope's own schema version.
const Version = 1

// Kind names what a document holds; readers refuse the wrong kind.
type Kind string

// Kinds of document. A payload's own schema_version travels inside it.
const (
	HostSnapshot   Kind = "host-snapshot"   // inventory: a host.Snapshot
	Doctor         Kind = "doctor"          // findings over one or more hosts
	FabricSnapshot Kind = "fabric-snapshot" // fabric scan: a fabric.Snapshot
	FabricCheck    Kind = "fabric-check"    // findings over a fabric
	Plan           Kind = "plan"            // plan vms: a plan or a refusal
	Bench          Kind = "bench"           // bench: results, verdicts, suspects
	Judge          Kind = "judge"           // judge: findings over saved tool outputs
	NCCL           Kind = "nccl"            // nccl env / run / judge
	Design         Kind = "design"          // design calculators
	Schedule       Kind = "schedule"        // bench schedule
	BenchPlan      Kind = "bench-plan"      // bench --dry-run: rounds, wall time, memory
	Compare        Kind = "compare"         // compare: two runs side by side
	Report         Kind = "report"          // report: the cluster's readiness over every input
)

// Summary is what a script reads first.
type Summary struct {
	Fail    int `json:"fail"`
	Warn    int `json:"warn"`
	Unknown int `json:"unknown"`
	Pass    int `json:"pass"`
	// Failed is true when any finding failed: the same predicate that
	// makes the command exit 1.
	Failed bool `json:"failed"`
}

// Summarize counts findings by outcome.
func Summarize(fs []check.Finding) Summary {
	c := check.Count(fs)
	return Summary{Fail: c[check.Fail], Warn: c[check.Warn], Unknown: c[check.Unknown], Pass: c[check.Pass], Failed: check.Failed(fs)}
}

// Document is the envelope.
type Document struct {
	Kind          Kind `json:"kind"`
	SchemaVersion int  `json:"schema_version"`
	// Rdmalab names the build that wrote the document (absent from a
	// build that knows neither its version nor its commit, as in tests).
	Rdmalab *Producer `json:"rdmalab,omitempty"`
	Summary Summary   `json:"summary"`
	// Verdict is the run's one answer to its command's question (absent
	// on documents that judge nothing: snapshots, designs, plans).
	Verdict  *check.Verdict  `json:"verdict,omitempty"`
	Findings []check.Finding `json:"findings"`
	Payload  any             `json:"payload,omitempty"`
}

// Write encodes one document that judges nothing, indented, findings
// worst first.
func Write(w io.Writer, kind Kind, fs []check.Finding, payload any) error {
	return write(w, Document{Kind: kind, Findings: fs, Payload: payload})
}

// WriteJudged encodes one document with the run's verdict: the same
// verdict the command's text, exit code and NHC line give.
func WriteJudged(w io.Writer, kind Kind, v check.Verdict, fs []check.Finding, payload any) error {
	return write(w, Document{Kind: kind, Verdict: &v, Findings: fs, Payload: payload})
}

// Producer is the build that wrote a document.
type Producer struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
}

func write(w io.Writer, d Document) error {
	if b := buildinfo.Get(); b.Commit != "" || b.Version != "dev" {
		d.Rdmalab = &Producer{Version: b.Version, Commit: b.Commit}
	}
	if d.Findings == nil {
		d.Findings = []check.Finding{}
	}
	check.Sort(d.Findings)
	d.SchemaVersion, d.Summary = Version, Summarize(d.Findings)
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(d)
}

// ErrNotEnvelope means the bytes are JSON but not an rdmalab envelope (a
// bare snapshot from before envelopes existed, say).
var ErrNotEnvelope = errors.New("not an rdmalab document")

// WrongKindError is returned when a document holds another kind than the
// reader wants.
type WrongKindError struct {
	Got, Want Kind
}

func (e *WrongKindError) Error() string {
	return fmt.Sprintf("this is a %s document, not a %s", e.Got, e.Want)
}

// Peek reports the kind of an envelope, or ErrNotEnvelope.
func Peek(b []byte) (Kind, error) {
	var head struct {
		Kind          Kind            `json:"kind"`
		SchemaVersion int             `json:"schema_version"`
		Payload       json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	if head.Kind == "" {
		return "", ErrNotEnvelope
	}
	if head.SchemaVersion > Version {
		return "", fmt.Errorf("document schema_version %d is newer than this rdmalab understands (%d): upgrade rdmalab", head.SchemaVersion, Version)
	}
	return head.Kind, nil
}

// Payload returns the raw payload of an envelope of kind want. Bytes that
// are not an envelope are returned as they are, so files written before
// envelopes existed still load; an envelope of another kind is a
// *WrongKindError.
func Payload(b []byte, want Kind) ([]byte, error) {
	kind, err := Peek(b)
	if errors.Is(err, ErrNotEnvelope) {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	if kind != want {
		return nil, &WrongKindError{Got: kind, Want: want}
	}
	var doc struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		return nil, err
	}
	if len(doc.Payload) == 0 {
		return nil, fmt.Errorf("%s document has no payload", kind)
	}
	return doc.Payload, nil
}

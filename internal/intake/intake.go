// Package intake opens anything a user hands rdmalab (a host tree or
// capture, a host or fabric snapshot, an rdmalab document, a bench results
// log, a saved tool output, example:NAME) and says what it is, once, for
// every command and for report. Host trees are read by inventory and saved
// tool outputs recognised by the format registry (internal/formats);
// everything else is told apart here. Intake reads; it judges nothing
// (internal/judge does).
package intake

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/capture"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/resultslog"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// What an input is.
type What string

const (
	// HostSource is a tree holding sys/, a copy of /sys/class/infiniband
	// or a capture archive: inventory reads it into Host.
	HostSource What = "host source"
	// HostSnapshot is rdmalab inventory's output, bare or in its envelope.
	HostSnapshot What = "host snapshot"
	// FabricSnapshot is rdmalab fabric scan's output, bare or in its envelope.
	FabricSnapshot What = "fabric snapshot"
	// Document is any other rdmalab envelope: Kind says which command
	// wrote it, Findings are its judgement.
	Document What = "rdmalab document"
	// OldFindings are findings from before envelopes; Kind is what their
	// shape says wrote them (an object: doctor; an array: fabric check).
	OldFindings What = "findings"
	// ResultsLog is a bench --results log.
	ResultsLog What = "bench results log"
	// NCCLResults is a saved nccl-tests output or NCCL_DEBUG log.
	NCCLResults What = "nccl results"
	// ToolOutput is a saved output of a tool judge reads (Format).
	ToolOutput What = "saved tool output"
	// Unknown is nothing rdmalab reads; Why says why.
	Unknown What = "unknown"
)

// Input is one thing a user named, opened and classified.
type Input struct {
	Name    string // as given; "(stdin)" for standard input
	What    What
	Example bool            // a built-in example:NAME
	Why     string          // Unknown: why nothing claims it
	Kind    envelope.Kind   // Document, OldFindings, enveloped snapshots: the document's kind
	Format  *formats.Format // ToolOutput, NCCLResults: its format
	Data    []byte          // the bytes read (files and standard input)
	Host    *host.Snapshot
	Fabric  *fabric.Snapshot
	// Findings are the judgement a Document or OldFindings carries.
	Findings []check.Finding
	// Bench is a bench Document's judged report.
	Bench *bench.Report
	// Log is a ResultsLog as read (a torn last line left out).
	Log *Log
}

// Log is a bench results log's header and records.
type Log struct {
	Header  resultslog.Header
	Records []bench.Record
}

// String says what the input is, for messages and tests.
func (in *Input) String() string {
	switch {
	case in.What == Document:
		return fmt.Sprintf("%s (%s)", in.What, in.Kind)
	case in.Format != nil:
		return fmt.Sprintf("%s (%s)", in.What, in.Format.Name)
	case in.What == Unknown:
		return fmt.Sprintf("%s: %s", in.What, in.Why)
	}
	return string(in.What)
}

// ExamplePrefix names a built-in example where a file is expected.
const ExamplePrefix = "example:"

// example resolves example:NAME, the one place it is read; want is what
// the caller reads (HostSnapshot, FabricSnapshot, or "" for either). ok is
// false for any other argument.
func example(arg string, want What) (in *Input, ok bool, err error) {
	name, ok := strings.CutPrefix(arg, ExamplePrefix)
	if !ok {
		return nil, false, nil
	}
	isHost, isFabric := slices.Contains(examples.Names(), name), slices.Contains(examples.FabricNames(), name)
	in = &Input{Name: arg, Example: true}
	switch {
	case want == HostSnapshot && isFabric:
		return nil, true, fmt.Errorf("%s is a fabric example; this reads a host (fabric check --fabric %s)", arg, arg)
	case want == FabricSnapshot && isHost:
		return nil, true, fmt.Errorf("%s is a host example; this reads a fabric", arg)
	case want == HostSnapshot || isHost:
		// An unknown name where a host is wanted: Load lists the hosts.
		in.What = HostSnapshot
		in.Host, err = examples.Load(name)
	case want == FabricSnapshot || isFabric:
		in.What = FabricSnapshot
		in.Fabric, err = examples.LoadFabric(name)
	default:
		err = fmt.Errorf("no example %q (hosts: %s; fabrics: %s)", name, strings.Join(examples.Names(), ", "), strings.Join(examples.FabricNames(), ", "))
	}
	if err != nil {
		return nil, true, err
	}
	return in, true, nil
}

// Example resolves example:NAME where a host or a fabric will do; ok is
// false for any other argument.
func Example(arg string) (in *Input, ok bool, err error) { return example(arg, "") }

// Host opens name where a host is expected: example:NAME, a host snapshot
// file, or any tree inventory.Open reads (the live host "/", a directory
// holding sys/, a copy of /sys/class/infiniband, a capture).
func Host(name string) (*host.Snapshot, error) {
	if in, ok, err := example(name, HostSnapshot); ok {
		if err != nil {
			return nil, err
		}
		return in.Host, nil
	}
	st, err := userfile.Stat(name)
	if name == "" || err != nil || st.IsDir() || capture.IsReadable(name) {
		return inventory.Open(name, inventory.Options{})
	}
	in, err := Read(nil, name, userfile.HostSnapshot)
	if err != nil {
		return nil, err
	}
	switch {
	case in.What == HostSnapshot:
		return in.Host, nil
	case in.What == FabricSnapshot && in.Kind == "":
		return nil, &host.WrongKindError{Path: name, Got: envelope.FabricSnapshot}
	case in.Kind != "":
		return nil, &host.WrongKindError{Path: name, Got: in.Kind}
	case in.Format != nil:
		return nil, &inventory.SourceError{Source: name, Err: fmt.Errorf("a saved %s output, not a host: rdmalab judge reads it", in.Format.Name)}
	case in.What == Unknown && bytes.HasPrefix(bytes.TrimSpace(in.Data), []byte("{")):
		// An object of no kind: say what a snapshot lacks.
		if _, err := host.DecodeBytes(in.Data); err != nil {
			return nil, &inventory.SourceError{Source: name, Err: err}
		}
	}
	return nil, &inventory.SourceError{Source: name, Err: inventory.ErrNotHost}
}

// Fabric opens name where a fabric snapshot is expected: example:NAME, a
// snapshot file (fabric scan --output json) or a saved fabric tool output
// (iblinkinfo, ibnetdiscover, ibqueryerrors: what judge reads them into);
// any other kind is refused naming the file and what it is.
func Fabric(name string) (*fabric.Snapshot, error) {
	if in, ok, err := example(name, FabricSnapshot); ok {
		if err != nil {
			return nil, err
		}
		return in.Fabric, nil
	}
	in, err := Read(nil, name, userfile.FabricSnapshot)
	if err != nil {
		return nil, err
	}
	if in.What == FabricSnapshot {
		return in.Fabric, nil
	}
	if in.Format != nil {
		// A saved iblinkinfo, ibnetdiscover or ibqueryerrors output is
		// read into a fabric snapshot by its format's reader.
		saved, err := in.Format.ReadAs(in.Name, in.Data)
		if err != nil {
			return nil, err
		}
		if s, ok := saved.Model.(*fabric.Snapshot); ok {
			return s, nil
		}
		return nil, fmt.Errorf("%s: a saved %s output, not a fabric: rdmalab judge reads it", name, in.Format.Name)
	}
	// fabric's reader says what the file is instead (a host snapshot, a
	// fabric check's findings, not JSON).
	if _, err := fabric.Decode(bytes.NewReader(in.Data)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return nil, fmt.Errorf("%s: not a fabric snapshot: %s", name, in)
}

// Stdin is the name that reads standard input.
const Stdin = "-"

// Read reads the file named (or standard input, for "-" or /dev/stdin,
// which the file door would refuse as a pipe or a terminal; stdin nil: no
// standard input) up to k's
// bound and says what it is. An error is a file that cannot be read, or
// one that claims to be an rdmalab document and does not decode as one;
// a file nothing claims is What Unknown.
func Read(stdin io.Reader, name string, k userfile.Kind) (*Input, error) {
	var b []byte
	var err error
	if stdin != nil && (name == Stdin || name == "/dev/stdin") {
		name = "(stdin)"
		b, err = userfile.ReadAll(stdin, name, k)
	} else {
		b, err = userfile.ReadFile(name, k)
	}
	if err != nil {
		return nil, err
	}
	return Classify(name, b)
}

// Open opens anything a user can name and says what it is: example:NAME,
// a directory or capture (a host source, read by inventory), or a file
// (read as an rdmalab output, with its bound).
func Open(name string) (*Input, error) {
	if in, ok, err := example(name, ""); ok {
		return in, err
	}
	st, err := userfile.Stat(name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() || capture.IsReadable(name) {
		s, err := inventory.Open(name, inventory.Options{})
		if err != nil {
			return nil, err
		}
		return &Input{Name: name, What: HostSource, Host: s}, nil
	}
	return Read(nil, name, userfile.Document)
}

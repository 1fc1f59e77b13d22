package intake

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/capture"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Inputs is everything a cluster report is made of: host snapshots,
// fabric snapshots, bench runs, saved tool outputs and the findings of
// every input, those given (Judged says of which kinds) and, once the
// judge step (judge.Cluster) ran, those the same rules made for inputs
// given without them (Derived says which).
type Inputs struct {
	Sources []string // what the user named, in order
	Skipped []string // files in named directories that are no rdmalab output, with why; files given more than once
	Hosts   []*host.Snapshot
	Fabrics []*fabric.Snapshot
	Bench   []BenchRun
	// Findings are every input's, sorted: what the report renders.
	Findings []check.Finding
	// Judged lists the kinds of document whose findings were given; for
	// inputs without them, the same rules ran here (Derived).
	Judged  map[envelope.Kind]bool
	Derived []string
	// Compare is the two results logs given set side by side (nil unless
	// exactly two were given and they compare).
	Compare *compare.Result

	// Logs are the results logs, and Saved the saved tool outputs, read
	// but not judged: the judge step (judge.Cluster) judges them once.
	Logs  []*Input
	Saved []*Input
	dups  []dupFile
}

// BenchRun is one judged bench test (one engine and test over a cluster):
// the payload of a bench document, or a results log the judge step
// judged. Findings are the run's own (the document's, or those
// bench.Analyze made).
type BenchRun struct {
	*bench.Report
	Source string
	// FromLog is set when a results log was judged by the judge step,
	// against the peers only (no cluster file, so no declared rate).
	FromLog  bool
	Findings []check.Finding
}

// UnknownInputError says an input is no rdmalab output report reads.
type UnknownInputError struct {
	Path, Why string
}

func (e *UnknownInputError) Error() string {
	return fmt.Sprintf("%s: %s (want a host or fabric snapshot, an rdmalab --output json document, a bench results file or a saved tool output rdmalab judge reads)", e.Path, e.Why)
}

// Load reads every input for report: files, host trees and captures (read
// as inventory --root reads them), directories of files (recursively,
// .json and .jsonl; files that are no rdmalab output are skipped and
// listed), each file once however often named, and example:NAME, and
// says what each is. It judges nothing: judge.Cluster does, once.
func Load(args []string) (*Inputs, error) {
	in := &Inputs{Judged: map[envelope.Kind]bool{}}
	if len(args) == 0 {
		return nil, errors.New("no inputs: name host snapshots, rdmalab documents, bench results, directories or example:NAME")
	}
	for _, a := range args {
		in.Sources = append(in.Sources, a)
		if x, ok, err := Example(a); ok {
			if err != nil {
				return nil, err
			}
			if err := in.add(x); err != nil {
				return nil, err
			}
			continue
		}
		st, err := userfile.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("input %w", err)
		}
		switch {
		case !st.IsDir() && !capture.IsReadable(a):
			err = in.file(a)
		case in.seen(a):
		default:
			// A host tree or capture is read as inventory --root
			// reads it; a directory holding no host is one of outputs.
			var x *Input
			if x, err = Open(a); err == nil {
				err = in.add(x)
			} else if errors.Is(err, inventory.ErrNoSys) {
				if err = in.dir(a); err != nil {
					err = fmt.Errorf("input %s: %w", a, err)
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if len(in.Hosts)+len(in.Fabrics)+len(in.Bench)+len(in.Logs)+len(in.Saved)+len(in.Findings) == 0 && len(in.Judged) == 0 {
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
	return in, nil
}

// dir reads every .json and .jsonl under a named directory; what is no
// rdmalab output is listed, not fatal.
func (in *Inputs) dir(a string) error {
	return filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
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
		} else if errors.As(err, &refused) && refused.Path == p {
			// A FIFO, device or oversized file inside a named
			// directory is listed, like any file that is no output.
			in.Skipped = append(in.Skipped, refused.Error())
		} else if err != nil {
			return err
		}
		return nil
	})
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
	x, err := Read(nil, path, userfile.Document)
	if err != nil {
		return fmt.Errorf("input %w", err)
	}
	return in.add(x)
}

// add takes one classified input; what report does not read is an
// *UnknownInputError naming it.
func (in *Inputs) add(x *Input) error {
	switch x.What {
	case HostSnapshot, HostSource:
		in.Hosts = append(in.Hosts, x.Host)
	case FabricSnapshot:
		in.Fabrics = append(in.Fabrics, x.Fabric)
	case ResultsLog:
		in.Logs = append(in.Logs, x)
		return nil
	case ToolOutput, NCCLResults:
		in.Saved = append(in.Saved, x)
		return nil
	case Document, OldFindings:
		in.Judged[x.Kind] = true
		if x.Fabric != nil {
			in.Fabrics = append(in.Fabrics, x.Fabric)
		}
		if x.Bench != nil {
			var mine []check.Finding
			for _, f := range x.Findings {
				if strings.HasPrefix(f.Check, "bench.") {
					mine = append(mine, f)
				}
			}
			in.Bench = append(in.Bench, BenchRun{Report: x.Bench, Source: x.Name, Findings: mine})
		}
	default:
		return &UnknownInputError{x.Name, x.Why}
	}
	// Snapshots carry no judgement, but their envelope may hold findings.
	in.Findings = append(in.Findings, x.Findings...)
	return nil
}

// Package resultslog owns the results log of every rdmalab command that
// measures for hours (bench, nccl run): JSON lines, a header that names the
// tool's format and schema version and binds the file to its cluster, then
// one record per line. It is the only record of hours of measurement, so it
// is never truncated unless asked, never mixed with another cluster's
// results, written by one run at a time (an flock held for the run, its
// holder's PID named to a second run), never resumed past a line that does
// not parse (a torn write is named by line for the user to cut), and every
// append is synced and its error returned.
package resultslog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Header is the first line of a results log.
type Header struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Cluster string    `json:"cluster"` // the cluster's fingerprint
	Nodes   int       `json:"nodes"`
	Created time.Time `json:"created"`
}

// Kind is one tool's results log: the format its header names, the newest
// schema version this rdmalab writes and reads, and what makes a line one
// of its records.
type Kind[R any] struct {
	Format  string // "rdmalab-bench-results"
	Version int
	Tool    string // "bench", for messages
	// Valid says a line that parsed as R is a record (not some other
	// JSON that happens to unmarshal).
	Valid func(R) bool
}

// Is reports whether b starts with this kind's header line.
func (k Kind[R]) Is(b []byte) bool {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var h Header
	return json.Unmarshal(first, &h) == nil && h.Format == k.Format
}

// Mode says what may happen to an existing results file.
type Mode int

// Modes of opening a results log.
const (
	// Create refuses an existing file that holds results.
	Create Mode = iota
	// Resume continues a log of the same cluster.
	Resume
	// Overwrite replaces an earlier results log (never another kind of file).
	Overwrite
)

// ErrContradict is --resume and --overwrite given together.
var ErrContradict = errors.New("--resume and --overwrite contradict each other")

// ModeOf is the mode the --resume and --overwrite flags ask for.
func ModeOf(resume, overwrite bool) (Mode, error) {
	switch {
	case resume && overwrite:
		return Create, ErrContradict
	case resume:
		return Resume, nil
	case overwrite:
		return Overwrite, nil
	}
	return Create, nil
}

// RefusedError is a results path a run will not write, with the reason.
type RefusedError struct {
	Path, Reason string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("results file %s: %s", e.Path, e.Reason) }

// Target is the run a log is opened for.
type Target struct {
	// ClusterFile is refused as a results path (empty: none).
	ClusterFile string
	// Cluster is the cluster's fingerprint: a log of another is not resumed.
	Cluster string
	Nodes   int
	Mode    Mode
}

// Log appends records to a results file.
type Log[R any] struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// Open opens path for a run on t's cluster and returns the records it
// already holds (Resume only).
func (k Kind[R]) Open(path string, t Target) (*Log[R], []R, error) {
	if path == "" {
		return nil, nil, &RefusedError{path, "no path given"}
	}
	if a, err := os.Stat(path); err == nil {
		if b, err := os.Stat(t.ClusterFile); t.ClusterFile != "" && err == nil && os.SameFile(a, b) {
			return nil, nil, &RefusedError{path, "it is the cluster file; give --results another path"}
		}
		if !a.Mode().IsRegular() {
			return nil, nil, &RefusedError{path, "not a regular file"}
		}
	}
	// Opened without truncating, locked, and only then read: a second run
	// on the same log is refused before it reads or changes a byte.
	f, err := userfile.OpenLocked(path, os.O_RDWR, userfile.ResultsLog)
	if err != nil {
		return nil, nil, fmt.Errorf("results file %w", err)
	}
	l, prior, err := k.openLocked(f, path, t)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return l, prior, nil
}

// openLocked decides what happens to a locked results file: parsed,
// refused, cut to its valid records or started with a header.
func (k Kind[R]) openLocked(f *os.File, path string, t Target) (*Log[R], []R, error) {
	b, err := io.ReadAll(io.LimitReader(f, userfile.ResultsLog.Max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("results file %s: %w", path, err)
	}
	if int64(len(b)) > userfile.ResultsLog.Max {
		return nil, nil, &RefusedError{path, "more than " + userfile.ResultsLog.MiB() + ", the bound for a results log"}
	}
	var prior []R
	keep := int64(0) // bytes of the file that stay
	if len(b) > 0 {
		h, recs, valid, err := k.Parse(b)
		if err != nil {
			return nil, nil, &RefusedError{path, err.Error()}
		}
		switch t.Mode {
		case Create:
			if len(recs) == 0 {
				break
			}
			return nil, nil, &RefusedError{path, fmt.Sprintf("it already holds %d result(s); --resume continues it, --overwrite replaces it", len(recs))}
		case Resume:
			if h.Cluster != t.Cluster {
				return nil, nil, &RefusedError{path, fmt.Sprintf("it was measured on another cluster (fingerprint %s, this cluster file is %s: nodes, addresses, devices or ports differ); use another --results", h.Cluster, t.Cluster)}
			}
			if valid < len(b) && len(bytes.TrimSpace(b[valid:])) > 0 {
				// Never skipped silently: a line that does not parse is
				// a result lost, and the user decides what to do with it.
				line := bytes.Count(b[:valid], []byte("\n")) + 1
				return nil, nil, &RefusedError{path, fmt.Sprintf("line %d is not a complete result (a write cut short?); delete it (sed -i '%d,$d' %s) to resume from the %d result(s) before it", line, line, userfile.Name(path), len(recs))}
			}
			prior, keep = recs, int64(valid)
		}
	}
	l := &Log[R]{path: path, f: f}
	if keep > 0 {
		// Blank lines after the last record go, so records stay one a line.
		if err := f.Truncate(keep); err != nil {
			return nil, nil, fmt.Errorf("results file %s: %w", path, err)
		}
		if _, err := f.Seek(keep, io.SeekStart); err != nil {
			return nil, nil, err
		}
		return l, prior, nil
	}
	if err := f.Truncate(0); err != nil {
		return nil, nil, fmt.Errorf("results file %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	if err := l.write(Header{Format: k.Format, Version: k.Version, Cluster: t.Cluster, Nodes: t.Nodes, Created: time.Now().UTC()}); err != nil {
		return nil, nil, err
	}
	return l, prior, nil
}

// Append writes one record and syncs it to disk.
func (l *Log[R]) Append(r R) error { return l.write(r) }

func (l *Log[R]) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("results file %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("results file %s: sync: %w", l.path, err)
	}
	return nil
}

// Close closes the file (and so releases its lock).
func (l *Log[R]) Close() error { return l.f.Close() }

// Parse reads a results log of this kind: the header, every record, and
// how many leading bytes are valid (the rest is a torn or garbled tail
// that may be cut). A bad line followed by good ones is an error: cutting
// it would lose the good ones.
func (k Kind[R]) Parse(b []byte) (Header, []R, int, error) {
	var h Header
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 || json.Unmarshal(b[:nl], &h) != nil || h.Format != k.Format {
		return h, nil, 0, fmt.Errorf("not an rdmalab %s results log (no header line); refusing to touch it", k.Tool)
	}
	if h.Version > k.Version {
		return h, nil, 0, fmt.Errorf("results log version %d is newer than this rdmalab (%d)", h.Version, k.Version)
	}
	valid := nl + 1
	var recs []R
	badAt := 0
	sc := bufio.NewScanner(bytes.NewReader(b[valid:]))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	at, line := valid, 1
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		end := at + len(raw) + 1
		complete := end <= len(b) // the last line may lack its newline: torn
		var r R
		if complete && json.Unmarshal(raw, &r) == nil && k.Valid(r) {
			if badAt > 0 {
				return h, nil, 0, fmt.Errorf("line %d is not a result but later lines are; fix or move the file", badAt)
			}
			recs = append(recs, r)
			valid = end
		} else if len(bytes.TrimSpace(raw)) > 0 && badAt == 0 {
			badAt = line
		}
		at = end
	}
	if err := sc.Err(); err != nil {
		return h, nil, 0, err
	}
	return h, recs, valid, nil
}

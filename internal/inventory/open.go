package inventory

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/capture"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// SourceError is a source that cannot be read as a host: the CLI prints it
// as one line naming the source and exits 2.
type SourceError struct {
	Source string
	Err    error
}

func (e *SourceError) Error() string {
	var ue *userfile.Error
	if errors.As(e.Err, &ue) && ue.Path == e.Source {
		return ue.Error() // already names the source
	}
	return userfile.Name(e.Source) + ": " + e.Err.Error()
}
func (e *SourceError) Unwrap() error { return e.Err }

// Why a source is refused; test with errors.Is.
var (
	// ErrNoSys: a directory without sys/ (and not a copy of
	// /sys/class/infiniband) holds no host to read: reading it would give
	// an empty host that every rule passes.
	ErrNoSys = errors.New("no sys/ inside; point it at the directory that holds sys/ and proc/, or at a copy of /sys/class/infiniband")
	// ErrEmptySys: sys/ exists but holds nothing.
	ErrEmptySys = errors.New("sys/ is empty: nothing to read")
	// ErrUnreadableSys: sys/ has entries but none of them leads anywhere.
	ErrUnreadableSys = errors.New("nothing under sys/ can be read")
	// ErrNotHost: a regular file that is neither a capture archive nor a
	// snapshot.
	ErrNotHost = errors.New("not a directory, a capture (.tar.gz, .tar.bz2) or a host snapshot (.json)")
)

// Open reads a host from a source that is a tree: the live host ("/" or
// ""), a directory holding sys/ (and proc/), a copy of
// /sys/class/infiniband alone, or a capture archive from 'rdmalab gather'
// (or any tar.gz, tar.bz2 or tar.xz of a root tree). A snapshot file is
// intake's (intake.Host reads any of these and snapshots). Errors are
// *SourceError. opt.Recorder, when set, records every path read (live or
// directory sources only).
func Open(source string, opt Options) (*host.Snapshot, error) {
	if source == "" {
		source = "/"
	}
	st, err := userfile.Stat(source)
	if err != nil {
		return nil, &SourceError{source, err}
	}
	if !st.IsDir() {
		// Checked before anything opens it: a FIFO or device must not
		// block or exhaust the reading below.
		if err := userfile.Check(source, st, userfile.Capture); err != nil {
			return nil, &SourceError{source, err}
		}
		if !capture.IsReadable(source) {
			return nil, &SourceError{source, ErrNotHost}
		}
		if opt.Recorder != nil {
			return nil, &SourceError{source, errors.New("already a capture; use it as it is")}
		}
		return openArchive(source, opt)
	}
	return openDir(source, source, opt)
}

// looksLikeJSON reports a file whose first non-blank byte opens a JSON
// object, whatever its name.
func looksLikeJSON(p string) bool {
	f, err := userfile.Open(p, userfile.HostSnapshot)
	if err != nil {
		return strings.HasSuffix(p, ".json")
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, _ := f.Read(buf)
	t := strings.TrimSpace(string(buf[:n]))
	return strings.HasPrefix(t, "{")
}

// openDir reads a root directory; name is what errors call it.
func openDir(dir, name string, opt Options) (*host.Snapshot, error) {
	fsys, err := dirFS(dir, name, opt)
	if err != nil {
		return nil, err
	}
	s := Collect(fsys, opt)
	s.Source = name
	return s, nil
}

// dirFS opens a root directory for reading: a tree holding sys/, or a copy
// of /sys/class/infiniband alone mounted where it belongs.
func dirFS(dir, name string, opt Options) (*hostfs.FS, error) {
	fsys, err := hostfs.New(dir)
	if err != nil {
		return nil, &SourceError{name, err}
	}
	// The check walks sys/ before the recorder is on: a capture holds what
	// inventory reads, not what the check looked at.
	if err := checkRoot(fsys, dir, name); err != nil {
		return nil, err
	}
	if opt.Recorder != nil {
		fsys.Record(opt.Recorder)
	}
	return fsys, nil
}

// checkRoot refuses a directory that holds no host: reading it would give
// an empty host every rule passes. A copy of /sys/class/infiniband alone
// is mounted where it belongs.
func checkRoot(fsys *hostfs.FS, dir, name string) error {
	if _, err := os.ReadDir(dir); err != nil {
		// Unreadable is not empty: say so, not "no sys/ inside".
		return &SourceError{name, userfile.Wrap(name, err)}
	}
	switch {
	case fsys.IsDir("/sys"):
		ents, err := fsys.ReadDir("/sys")
		if err == nil && len(ents) == 0 {
			return &SourceError{name, ErrEmptySys}
		}
		if err == nil && !anyResolves(fsys, "/sys", ents) {
			// Every entry a symlink loop or a dangling link.
			return &SourceError{name, fmt.Errorf("%w (%d entries, all symlink loops or dangling links)", ErrUnreadableSys, len(ents))}
		}
		budget := 20000
		if readable, broken := walkSys(fsys, "/sys", 0, &budget); err == nil && !readable && broken > 0 {
			// Directories that lead only to loops and dangling links.
			return &SourceError{name, fmt.Errorf("%w (no file under it, %d symlink loops or dangling links)", ErrUnreadableSys, broken)}
		}
	case isIBClassDir(dir):
		// A copy of /sys/class/infiniband alone (as gpud and others keep
		// them): read it as that directory of an otherwise empty host.
		if err := fsys.Mount("/sys/class/infiniband", dir); err != nil {
			return &SourceError{name, err}
		}
	case fsys.Exists("/proc"):
		return &SourceError{name, fmt.Errorf("has proc/ but %w", ErrNoSys)}
	default:
		return &SourceError{name, ErrNoSys}
	}
	return nil
}

// anyResolves reports whether any entry of dir resolves to a file or a
// directory.
func anyResolves(fsys *hostfs.FS, dir string, ents []string) bool {
	for _, e := range ents {
		if fsys.Exists(dir + "/" + e) {
			return true
		}
	}
	return false
}

// walkSys looks under dir for one file that can be read, counting the
// entries that lead nowhere (loops, dangling links) on the way. It stops at
// the first file, and says readable once the budget of entries is spent
// (a tree that large is a real one; a real sysfs has files near its top).
func walkSys(fsys *hostfs.FS, dir string, depth int, budget *int) (readable bool, broken int) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return false, 0
	}
	for _, e := range ents {
		if *budget--; *budget <= 0 {
			return true, broken
		}
		p := dir + "/" + e
		switch {
		case fsys.IsDir(p):
			if depth < 8 {
				r, b := walkSys(fsys, p, depth+1, budget)
				if broken += b; r {
					return true, broken
				}
			}
		case fsys.Exists(p):
			return true, broken
		default:
			broken++
		}
	}
	return false, broken
}

// OpenFS opens a source that is a tree to be read again and again (the
// exporter's): the live host, a directory holding sys/, a copy of
// /sys/class/infiniband alone, or a capture archive, which is unpacked into
// a scratch directory that cleanup removes. It accepts what Open accepts
// except a snapshot, which has no files to re-read. Errors are
// *SourceError.
func OpenFS(source string) (fsys *hostfs.FS, cleanup func(), err error) {
	if source == "" {
		source = "/"
	}
	st, err := os.Stat(source)
	if err != nil {
		return nil, nil, &SourceError{source, err}
	}
	if st.IsDir() {
		fsys, err := dirFS(source, source, Options{})
		return fsys, func() {}, err
	}
	if !capture.IsReadable(source) {
		if looksLikeJSON(source) {
			return nil, nil, &SourceError{source, errors.New("a snapshot holds no files to re-read; give the tree or capture it was made from")}
		}
		return nil, nil, &SourceError{source, errors.New("not a directory or a capture (.tar.gz, .tar.bz2, .tar.xz)")}
	}
	tmp, refused, err := unpack(source)
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	if fsys, err = dirFS(treeRoot(tmp), source, Options{}); err != nil {
		cleanup()
		if len(refused) > 0 {
			return nil, nil, &SourceError{source, fmt.Errorf("%s (%s)", refusedText(refused), errors.Unwrap(err))}
		}
		return nil, nil, err
	}
	return fsys, cleanup, nil
}

// unpack extracts a capture into a new scratch directory.
func unpack(archive string) (string, capture.Refused, error) {
	tmp, err := os.MkdirTemp("", "rdmalab-capture-")
	if err != nil {
		return "", nil, &SourceError{archive, err}
	}
	refused, err := capture.Extract(archive, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, &SourceError{archive, errors.Unwrap(err)}
	}
	return tmp, refused, nil
}

// openArchive unpacks a capture into a scratch directory and reads it.
// Entries refused for escaping the root are reported in the snapshot's
// errors (and in the error, if nothing readable is left).
func openArchive(archive string, opt Options) (*host.Snapshot, error) {
	tmp, refused, err := unpack(archive)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s, err := openDir(treeRoot(tmp), archive, opt)
	if err != nil {
		if len(refused) > 0 {
			return nil, &SourceError{archive, fmt.Errorf("%s (%s)", refusedText(refused), errors.Unwrap(err))}
		}
		return nil, err
	}
	if len(refused) > 0 {
		s.Errors = append(s.Errors, host.CollectError{Subject: "capture", Path: archive, Error: refusedText(refused)})
	}
	return s, nil
}

func refusedText(r capture.Refused) string {
	names := r
	more := ""
	if len(names) > 3 {
		names, more = names[:3], fmt.Sprintf(" and %d more", len(r)-3)
	}
	return fmt.Sprintf("%d archive entries refused for escaping the capture's root: %s%s", len(r), strings.Join(names, ", "), more)
}

// treeRoot finds the root inside an unpacked archive: the directory itself,
// or its single subdirectory when the archive wraps the tree in one (as
// hwloc-gather-topology does).
func treeRoot(dir string) string {
	if exists(filepath.Join(dir, "sys")) || exists(filepath.Join(dir, "proc")) {
		return dir
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return dir
	}
	var subdirs []string
	for _, e := range ents {
		if e.IsDir() {
			subdirs = append(subdirs, e.Name())
		}
	}
	if len(subdirs) == 1 {
		return filepath.Join(dir, subdirs[0])
	}
	return dir
}

// isIBClassDir reports a directory that looks like /sys/class/infiniband:
// every entry has a ports/ directory.
func isIBClassDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if !exists(filepath.Join(dir, e.Name(), "ports")) {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Gather reads the host under root with a recorder and writes exactly what
// it read to out, a tar.gz capture, under a temporary name renamed into
// place (userfile.WriteAtomic) so an interrupted gather never leaves a
// truncated capture. It returns the snapshot and the number of paths
// captured.
func Gather(root, out string, now time.Time) (*host.Snapshot, int, error) {
	if !capture.IsArchive(out) {
		return nil, 0, &SourceError{out, errors.New("the output name must end in .tar.gz")}
	}
	rec := hostfs.NewRecorder()
	s, err := Open(root, Options{Recorder: rec})
	if err != nil {
		return nil, 0, err
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		return nil, 0, &SourceError{root, err}
	}
	entries := rec.Entries()
	err = userfile.WriteAtomic(out, 0o644, func(w io.Writer) error {
		return capture.Write(w, fsys, entries, capture.Manifest{Hostname: s.Hostname, CapturedAt: now.UTC(), Root: root, Files: len(entries)})
	})
	if err != nil {
		return nil, 0, err
	}
	return s, len(entries), nil
}

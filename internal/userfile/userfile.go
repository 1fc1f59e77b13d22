// Package userfile opens the files a user hands rdmalab, the same way for
// every command: regular files only (a FIFO, socket or device is refused by
// name without blocking on it), a size bound per kind of input checked
// before reading and enforced while reading, and one clear line for a
// missing file, a symlink loop, a permission error or a directory. Names
// reach the terminal through Name, with control characters escaped.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"
)

// Kind is a kind of input and the most bytes rdmalab reads of one. The
// bounds sit well above the largest real input of the kind (a 10,000-node
// fabric's iblinkinfo is tens of MB) and far below what would exhaust a
// small host.
type Kind struct {
	Name string
	Max  int64
}

// The kinds of file rdmalab reads; docs/inputs.md lists them.
var (
	HostSnapshot   = Kind{"host snapshot", 64 << 20}
	FabricSnapshot = Kind{"fabric snapshot", 256 << 20}
	Capture        = Kind{"capture archive", 1 << 30}
	ResultsLog     = Kind{"results log", 256 << 20}
	Document       = Kind{"rdmalab output", 256 << 20}
	ToolOutput     = Kind{"tool output", 128 << 20}
	ClusterFile    = Kind{"cluster file", 16 << 20}
	Topology       = Kind{"topology file", 64 << 20}
	Rounds         = Kind{"rounds file", 64 << 20}
	Routes         = Kind{"routing dump", 256 << 20}
	Config         = Kind{"configuration file", 1 << 20}
	// Real domains are a few KiB, a dumpxml with hundreds of hostdevs well
	// under a MiB.
	Domain = Kind{"libvirt domain", 4 << 20}
)

// Kinds lists every kind, for docs/inputs.md (a test keeps it equal).
var Kinds = []Kind{HostSnapshot, FabricSnapshot, Capture, ResultsLog, Document, ToolOutput, ClusterFile, Topology, Rounds, Routes, Config, Domain}

// MiB renders a bound for messages.
func (k Kind) MiB() string { return fmt.Sprintf("%d MiB", k.Max>>20) }

// Error is a user's file that cannot be read as asked: Path is the name as
// given, Why one line a user can act on. Err is the system error, if any.
type Error struct {
	Path string
	Why  string
	Err  error
}

func (e *Error) Error() string { return Name(e.Path) + ": " + e.Why }
func (e *Error) Unwrap() error { return e.Err }

// Why a file is refused; test with errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than the bound for its kind")
	ErrIsDir      = errors.New("is a directory")
	ErrNotDir     = errors.New("not a directory")
)

// Open opens path for reading as a k. It never blocks on a FIFO (the open is
// non-blocking and the type is checked on the descriptor, so a file swapped
// between a stat and the open is still caught) and refuses a file larger
// than k.Max. Reads from the returned reader stop with an error past the
// bound, for files that grow while read.
func Open(path string, k Kind) (*File, error) {
	if path == "" {
		return nil, &Error{Path: path, Why: "empty file name"}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, openError(path, err)
	}
	if err := regular(path, st, k); err != nil {
		f.Close()
		return nil, err
	}
	// A regular file never blocks; clear the flag so reads behave plainly.
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
	return &File{f: f, path: path, kind: k, left: k.Max}, nil
}

// ReadFile reads all of path as a k (see Open).
func ReadFile(path string, k Kind) ([]byte, error) {
	f, err := Open(path, k)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReadAll reads r (standard input, say) up to k.Max; name is what errors
// call it.
func ReadAll(r io.Reader, name string, k Kind) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, k.Max+1))
	if err != nil {
		return nil, &Error{Path: name, Why: "read: " + errText(err), Err: err}
	}
	if int64(len(b)) > k.Max {
		return nil, &Error{Path: name, Why: fmt.Sprintf("more than %s, the bound for a %s", k.MiB(), k.Name), Err: ErrTooLarge}
	}
	return b, nil
}

// File is an opened user file whose reads stop at its kind's bound.
type File struct {
	f    *os.File
	path string
	kind Kind
	left int64
}

func (f *File) Read(p []byte) (int, error) {
	if f.left <= 0 {
		// One byte past the bound tells a file that grew from one that
		// ends exactly on it.
		var one [1]byte
		if n, _ := f.f.Read(one[:]); n > 0 {
			return 0, &Error{Path: f.path, Why: fmt.Sprintf("grew past %s while read, the bound for a %s", f.kind.MiB(), f.kind.Name), Err: ErrTooLarge}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.f.Read(p)
	f.left -= int64(n)
	if err != nil && err != io.EOF {
		err = &Error{Path: f.path, Why: "read: " + errText(err), Err: err}
	}
	return n, err
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Name is the path as given.
func (f *File) Name() string { return f.path }

// OS is the underlying file, for callers that need to seek (archives).
func (f *File) OS() *os.File { return f.f }

// Stat stats path following symlinks, with the errors worded as Open words
// them.
func Stat(path string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, openError(path, err)
	}
	return st, nil
}

// Check says why a file that exists is not one rdmalab reads as a k, or nil.
func Check(path string, st fs.FileInfo, k Kind) error { return regular(path, st, k) }

func regular(path string, st fs.FileInfo, k Kind) error {
	m := st.Mode()
	switch {
	case m.IsDir():
		return &Error{Path: path, Why: "a directory; a " + k.Name + " is a file", Err: ErrIsDir}
	case !m.IsRegular():
		return &Error{Path: path, Why: typeName(m) + ", not a regular file; save the " + k.Name + " to a file and name that", Err: ErrNotRegular}
	case st.Size() > k.Max:
		return &Error{Path: path, Why: fmt.Sprintf("%d MiB, more than %s, the bound for a %s", st.Size()>>20, k.MiB(), k.Name), Err: ErrTooLarge}
	}
	return nil
}

// typeName names a file type the way a user knows it.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// Wrap words a failed open or stat of a user's file as Open does.
func Wrap(path string, err error) error { return openError(path, err) }

// openError words a failed open or stat.
func openError(path string, err error) error {
	return &Error{Path: path, Why: errText(err), Err: err}
}

// errText is one line for a system error, without repeating the path.
func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return "no such file or directory"
		case syscall.ELOOP:
			return "a symlink loop (too many levels of symbolic links)"
		case syscall.EACCES, syscall.EPERM:
			return fmt.Sprintf("permission denied (rdmalab runs as uid %d)", os.Getuid())
		case syscall.ENOTDIR:
			return "a component of the path is not a directory"
		case syscall.EISDIR:
			return "a directory, not a file"
		case syscall.ENAMETOOLONG:
			return "name too long"
		}
		return errno.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Name is a user-given name fit for a terminal: as it is when every
// character is printable, else Go-quoted with control characters escaped
// (so a file named with ESC sequences cannot drive the terminal).
func Name(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// Escape escapes control and unprintable characters (but tab and newline)
// inside a message that carries a user's name, and leaves the rest as is.
func Escape(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r == '\t' || r == '\n' || unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func printable(s string) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

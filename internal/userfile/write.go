package userfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// How rdmalab writes a file a user names (a report, a capture, a plan's
// files, a textfile for node_exporter), the one way, for a root process in
// a directory other users may write:
//
//   - A new or regular target is written to a temporary file created beside
//     it with O_CREAT|O_EXCL|O_NOFOLLOW under a random name and mode 0600,
//     given its final mode, synced and renamed over the target: nothing
//     half-written ever stands under the name, and no name another user can
//     guess is ever opened (a symlink or a 0666 file planted there is never
//     written through).
//   - A character device or a FIFO that exists (/dev/null, /dev/stdout on a
//     terminal or a pipe, a named pipe being read) is written in place: opened
//     for writing without O_CREAT, never renamed over or replaced. A FIFO
//     nobody reads is refused at once rather than blocked on. So is a regular
//     file reached through /proc (/dev/stdout of a shell redirected to a file:
//     the shell's descriptor is that file), truncated as `>` would.
//   - A block device, a socket or a directory is refused with one line.
//   - A symlink is followed as the shell follows it: what it points to is
//     written (a file atomically, replaced under its own name; a device in
//     place) and the link stays a link. A dangling link is refused (rdmalab
//     never creates a file through a link), and so is a link in a sticky
//     world-writable directory (/tmp) owned by someone other than rdmalab's
//     user and the directory's owner, the kernel's protected_symlinks rule,
//     applied whatever the sysctl says.

// Writer is an output being written. Write to it, then Commit to put it in
// place or Abort to leave the target as it was; Abort after Commit does
// nothing, so `defer w.Abort()` is always safe.
type Writer struct {
	f      *os.File
	path   string // the name as the user gave it, for messages
	target string // where the temporary file is renamed to; "" when in place
	mode   fs.FileMode
	done   bool
}

// ErrDangling is a target that is a symlink to nothing.
var ErrDangling = errors.New("a dangling symlink")

// ErrUntrustedLink is a symlink another user planted in a shared directory.
var ErrUntrustedLink = errors.New("a symlink another user owns in a shared directory")

// Create starts writing path with the given final mode (see the rules
// above). Errors are *Error: one line naming the file.
func Create(path string, mode fs.FileMode) (*Writer, error) {
	if path == "" {
		return nil, &Error{Path: path, Why: "empty file name"}
	}
	lst, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return createBeside(path, path, mode)
	case err != nil:
		return nil, openError(path, err)
	}
	target := path
	st := lst
	if lst.Mode()&fs.ModeSymlink != 0 {
		if err := trustLink(path, lst); err != nil {
			return nil, err
		}
		st, err = os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			dest, _ := os.Readlink(path)
			return nil, &Error{Path: path, Why: "a symlink to " + Name(dest) + ", which does not exist; rdmalab does not create files through links (remove the link or name the file itself)", Err: ErrDangling}
		case err != nil:
			return nil, openError(path, err)
		}
		if st.Mode().IsRegular() {
			if viaProc(path) {
				// /dev/stdout of a shell redirected to a file: the shell's
				// descriptor is the file, so write it in place as `>` would.
				return inPlace(path, st, mode, true)
			}
			if target, err = filepath.EvalSymlinks(path); err != nil {
				return nil, openError(path, err)
			}
		}
	}
	m := st.Mode()
	switch {
	case m.IsDir():
		return nil, &Error{Path: path, Why: "a directory; name a file to write", Err: ErrIsDir}
	case m.IsRegular():
		return createBeside(path, target, mode)
	case m&fs.ModeCharDevice != 0 || m&fs.ModeNamedPipe != 0:
		return inPlace(path, st, mode, false)
	}
	return nil, &Error{Path: path, Why: typeName(m) + "; rdmalab writes to a file, a character device or a named pipe", Err: ErrNotRegular}
}

// createBeside opens a fresh temporary file in target's directory.
func createBeside(path, target string, mode fs.FileMode) (*Writer, error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return nil, &Error{Path: path, Why: "a directory; name a file to write", Err: ErrIsDir}
	}
	for range 100 {
		var r [8]byte
		rand.Read(r[:])
		// Dot-named so a directory listing or a glob such as *.prom
		// (node_exporter's textfile collector) never picks it up.
		tmp := filepath.Join(dir, "."+truncate(base, 64)+"."+hex.EncodeToString(r[:])+".rdmalab-tmp")
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, &Error{Path: path, Why: "cannot create a file in " + Name(filepath.Clean(dir)) + ": " + errText(err), Err: err}
		}
		return &Writer{f: f, path: path, target: target, mode: mode.Perm()}, nil
	}
	return nil, &Error{Path: path, Why: "no free temporary name in " + Name(dir)}
}

// inPlace opens an existing device, FIFO (or, through /proc, a shell's
// redirect) for writing without creating or replacing anything.
func inPlace(path string, st fs.FileInfo, mode fs.FileMode, regularOK bool) (*Writer, error) {
	flag := os.O_WRONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if regularOK {
		flag |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0)
	if errors.Is(err, syscall.ENXIO) && st.Mode()&fs.ModeNamedPipe != 0 {
		return nil, &Error{Path: path, Why: "a named pipe (FIFO) nobody is reading; start the reader first", Err: err}
	}
	if err != nil {
		return nil, openError(path, err)
	}
	// What was opened is what was checked: a name swapped for a regular
	// file between the stat and the open would otherwise be overwritten
	// in place.
	now, err := f.Stat()
	if err == nil && (now.Mode().IsRegular() && !regularOK || now.Mode().Type() != st.Mode().Type()) {
		err = &Error{Path: path, Why: "changed while opened (" + typeName(now.Mode()) + "); not written"}
	}
	if err != nil {
		f.Close()
		var ue *Error
		if errors.As(err, &ue) {
			return nil, ue
		}
		return nil, openError(path, err)
	}
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
	return &Writer{f: f, path: path, mode: mode.Perm()}, nil
}

// trustLink refuses a symlink the kernel's protected_symlinks would not
// let this process follow: in a sticky, world-writable directory, a link
// owned neither by this user nor by the directory's owner.
func trustLink(path string, lst fs.FileInfo) error {
	ls, ok := lst.Sys().(*syscall.Stat_t)
	if !ok || int(ls.Uid) == os.Geteuid() {
		return nil
	}
	dst, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return openError(path, err)
	}
	ds, ok := dst.Sys().(*syscall.Stat_t)
	if !ok || dst.Mode()&fs.ModeSticky == 0 || dst.Mode().Perm()&0o002 == 0 || ds.Uid == ls.Uid {
		return nil
	}
	return &Error{Path: path, Why: fmt.Sprintf("a symlink owned by uid %d in the shared directory %s; not followed (name the file it points to)", ls.Uid, Name(filepath.Dir(path))), Err: ErrUntrustedLink}
}

// viaProc reports a symlink chain that passes through /proc (/dev/stdout →
// /proc/self/fd/1): a descriptor of this process, not a name to replace.
func viaProc(path string) bool {
	p := path
	for range 40 {
		dest, err := os.Readlink(p)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		if dest == "/proc" || strings.HasPrefix(dest, "/proc/") {
			return true
		}
		p = dest
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &Error{Path: w.path, Why: "write: " + errText(err), Err: err}
	}
	return n, err
}

// Name is the path as the user gave it.
func (w *Writer) Name() string { return w.path }

// File is the open file, to hand a child process as its output (an
// io.Writer would make exec copy through a pipe that a lingering
// grandchild keeps open). Commit or Abort still finish it.
func (w *Writer) File() *os.File { return w.f }

// Commit finishes the file: a temporary file gets its mode, is synced and
// renamed over the target (and the directory synced); a device or FIFO is
// closed.
func (w *Writer) Commit() error {
	if w.done {
		return &Error{Path: w.path, Why: "written twice"}
	}
	w.done = true
	if w.target == "" {
		if err := w.f.Close(); err != nil {
			return &Error{Path: w.path, Why: "close: " + errText(err), Err: err}
		}
		return nil
	}
	tmp := w.f.Name()
	err := w.f.Chmod(w.mode)
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, w.target)
	}
	if err != nil {
		os.Remove(tmp)
		return &Error{Path: w.path, Why: "write: " + errText(err), Err: err}
	}
	if d, err := os.Open(filepath.Dir(w.target)); err == nil {
		d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return nil
}

// Abort leaves the target as it was (a device or FIFO keeps what was
// already written to it) and removes the temporary file.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	if w.target != "" {
		os.Remove(w.f.Name())
	}
}

// WriteAtomic writes path (see Create) with what fill writes; the target
// changes only if fill and the write succeed.
func WriteAtomic(path string, mode fs.FileMode, fill func(io.Writer) error) error {
	w, err := Create(path, mode)
	if err != nil {
		return err
	}
	defer w.Abort()
	if err := fill(w); err != nil {
		var ue *Error
		if errors.As(err, &ue) {
			return ue
		}
		return &Error{Path: path, Why: errText(err), Err: err}
	}
	return w.Commit()
}

// WriteFile writes data to path (see Create).
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	return WriteAtomic(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// ErrNotWritable is an output directory no file can be created in.
var ErrNotWritable = errors.New("not writable")

// OutDir checks, before any work is done, that dir can take the files
// rdmalab names in it (plan vms --dir, design frr --dir): a directory, or
// missing with an existing parent (a mistyped path never grows a tree
// under /), refused with one line otherwise, and proven writable by
// creating and removing a temporary file the way CreateIn will. Nothing is
// left behind; MakeOutDir makes the directory.
func OutDir(dir string) error {
	_, err := outDir(dir)
	return err
}

// MakeOutDir is OutDir, then makes dir (mode 0755) when missing.
func MakeOutDir(dir string) error {
	missing, err := outDir(dir)
	if err != nil || !missing {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return openError(dir, err)
	}
	return nil
}

func outDir(dir string) (missing bool, err error) {
	if dir == "" {
		return false, &Error{Path: dir, Why: "a directory is required", Err: ErrNotDir}
	}
	probe := dir
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return false, &Error{Path: dir, Why: "not a directory (" + typeName(st.Mode()) + ")", Err: ErrNotDir}
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(filepath.Clean(dir))
		if pst, perr := os.Stat(parent); perr != nil || !pst.IsDir() {
			return false, &Error{Path: dir, Why: "parent directory " + Name(parent) + " does not exist", Err: fs.ErrNotExist}
		}
		missing, probe = true, parent
	case err != nil:
		return false, openError(dir, err)
	}
	w, err := createBeside(dir, filepath.Join(probe, "probe"), 0o600)
	if err != nil {
		why, cause := err.Error(), err
		if ue := (*Error)(nil); errors.As(err, &ue) && ue.Err != nil {
			why, cause = errText(ue.Err), ue.Err
		}
		return false, &Error{Path: dir, Why: "not writable: " + why, Err: errors.Join(ErrNotWritable, cause)}
	}
	w.Abort()
	return missing, nil
}

// CreateIn starts one file rdmalab names (a plain file name, nothing with
// a path in it) in dir, to land there and nowhere else: whatever stands at
// that name is replaced by Commit's rename, never followed (a symlink
// planted there stays pointing at an untouched file); a directory, device,
// FIFO or socket there is refused with one line.
func CreateIn(dir, name string, mode fs.FileMode) (*Writer, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, &Error{Path: name, Why: "not a plain file name; refused"}
	}
	path := filepath.Join(dir, name)
	if lst, err := os.Lstat(path); err == nil && !lst.Mode().IsRegular() && lst.Mode()&fs.ModeSymlink == 0 {
		return nil, &Error{Path: path, Why: typeName(lst.Mode()) + " stands where rdmalab writes its file; move it away", Err: ErrNotRegular}
	}
	return createBeside(path, path, mode)
}

// WriteIn writes data as name in dir (see CreateIn).
func WriteIn(dir, name string, data []byte, mode fs.FileMode) error {
	w, err := CreateIn(dir, name, mode)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Commit()
}

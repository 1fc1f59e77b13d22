// Package hostfs is the only code that reads a host's root: sysfs, procfs and
// /etc, under a root directory that is "/" on a live host or a captured tree.
//
// Paths are given as absolute host paths ("/sys/class/infiniband"); symlinks
// are followed one component at a time and re-rooted, so a capture whose links
// are absolute still resolves inside its root. Every file, directory and link
// a reader touches can be recorded, so that `rdmalab gather` copies exactly
// what inventory read.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// maxFileBytes caps a single read: sysfs attributes are one page, and the
// largest procfs files read here (/proc/modules, /proc/cpuinfo) are well below.
const maxFileBytes = 4 << 20

// maxLinkHops bounds symlink resolution so a looping capture cannot hang us.
const maxLinkHops = 64

// FS reads a host tree rooted at Root.
type FS struct {
	root   string
	rec    *Recorder
	mounts map[string]string // host path -> directory on this machine
	// dirs caches resolved directories (host path → resolvedDir): sysfs
	// paths are deep and share prefixes, and resolving each component is
	// one lstat. Forget empties it when the tree may have changed.
	dirs sync.Map
}

// resolvedDir is a directory with every symlink followed: its path under
// the root and where that is on this machine.
type resolvedDir struct{ path, host string }

// New returns an FS rooted at root ("/" for the live host).
func New(root string) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", root, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("root %s: not a directory", root)
	}
	return &FS{root: abs}, nil
}

// Root is the directory this FS reads under.
func (f *FS) Root() string { return f.root }

// IsLive reports whether the FS reads the running host rather than a capture.
func (f *FS) IsLive() bool { return f.root == "/" }

// Record makes the FS note every path it touches into r.
func (f *FS) Record(r *Recorder) { f.rec = r }

// Mount serves host path at (e.g. /sys/class/infiniband) from dir on this
// machine, for partial captures that hold one sysfs directory and nothing else.
func (f *FS) Mount(at, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("mount %s: %w", dir, err)
	}
	if f.mounts == nil {
		f.mounts = map[string]string{}
	}
	f.mounts[path.Clean(at)] = abs
	return nil
}

// aboveMount reports whether p is a proper ancestor of a mount point (it
// then exists as a directory whatever the root holds).
func (f *FS) aboveMount(p string) bool {
	for at := range f.mounts {
		if strings.HasPrefix(at, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// hostPath turns a root-relative path into the path on this machine.
func (f *FS) hostPath(p string) string {
	for at, dir := range f.mounts {
		if p == at {
			return dir
		}
		if rest, ok := strings.CutPrefix(p, at+"/"); ok {
			return filepath.Join(dir, filepath.FromSlash(rest))
		}
	}
	return filepath.Join(f.root, filepath.FromSlash(p))
}

// resolve follows symlinks in p component by component and returns the
// resolved host path (absolute, slash-separated, inside the root).
func (f *FS) resolve(p string) (string, error) {
	p = path.Clean("/" + p)
	if p == "/" {
		return p, nil
	}
	dir, base := path.Split(p)
	rdir, err := f.resolveDir(path.Clean(dir))
	if err != nil {
		return "", err
	}
	return f.walk(base, rdir.path)
}

// resolveDir resolves a clean directory path once and caches it: from its
// parent's resolution (itself cached), so each directory costs one lstat of
// its own name, however deep.
func (f *FS) resolveDir(dir string) (resolvedDir, error) {
	if v, ok := f.dirs.Load(dir); ok {
		return v.(resolvedDir), nil
	}
	parent := "/"
	if dir != "/" {
		p, err := f.resolveDir(path.Dir(dir))
		if err != nil {
			return resolvedDir{}, err
		}
		parent = p.path
	}
	r := parent
	if dir != "/" {
		var err error
		if r, err = f.walk(path.Base(dir), parent); err != nil {
			return resolvedDir{}, err
		}
	}
	d := resolvedDir{path: r, host: f.hostPath(r)}
	f.dirs.Store(dir, d)
	return d, nil
}

// Forget drops the resolved directories, for a live tree whose devices
// may have moved (a NIC replaced, a driver rebound).
func (f *FS) Forget() { f.dirs.Clear() }

// walk resolves the relative path p from the resolved directory cur.
func (f *FS) walk(p, cur string) (string, error) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	hops := 0
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		if f.aboveMount(next) {
			cur = next
			continue
		}
		// A link's target often runs through directories already resolved
		// (../../devices/pci0000:00/...): take them from the cache.
		if v, ok := f.dirs.Load(next); ok {
			cur = v.(resolvedDir).path
			continue
		}
		st, err := os.Lstat(f.hostPath(next))
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			if st.IsDir() {
				f.dirs.Store(next, resolvedDir{path: next, host: f.hostPath(next)})
			}
			cur = next
			continue
		}
		hops++
		if hops > maxLinkHops {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(f.hostPath(next))
		if err != nil {
			return "", err
		}
		f.note(next, kindLink, target)
		if path.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), parts...)
	}
	return cur, nil
}

// Realpath returns p with every symlink resolved, as a host path ("/sys/devices/...").
func (f *FS) Realpath(p string) (string, error) {
	r, err := f.resolve(p)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	return r, nil
}

// ReadFile returns the contents of p, read once and capped, the way sysfs
// wants to be read. The common case costs one open, two reads and a close:
// the directory comes from the cache and the file itself is opened without
// following a link; only a file that is a link takes the component walk.
func (f *FS) ReadFile(p string) ([]byte, error) {
	p = path.Clean("/" + p)
	dir, base := path.Split(p)
	rdir, err := f.resolveDir(path.Clean(dir))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	r, hp := path.Join(rdir.path, base), filepath.Join(rdir.host, base)
	if _, ok := f.mounts[r]; ok {
		hp = f.hostPath(r)
	}
	fd, err := openFile(hp, syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		if r, err = f.walk(base, rdir.path); err == nil {
			hp = f.hostPath(r)
			fd, err = openFile(hp, 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer syscall.Close(fd)
	data, err := readAt(fd, hp, make([]byte, 0, 4096), false)
	if err != nil && len(data) == 0 {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	f.noteData(r, data)
	return data, nil
}

// openFile opens a file for reading with the raw system call: sysfs and
// capture files are never pollable, so os.File's poller registration is
// pure cost here.
func openFile(hp string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(hp, syscall.O_RDONLY|syscall.O_CLOEXEC|flags, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: hp, Err: err}
		}
		return fd, nil
	}
}

// readAt reads fd to its end (at most maxFileBytes) into buf; with pread it
// reads from offset 0 whatever was read before, as a sysfs attribute kept
// open is re-read, and a short read is the end (a sysfs attribute comes
// whole in one read, a regular file short only at its end), saving the
// read that would return 0.
func readAt(fd int, hp string, buf []byte, pread bool) ([]byte, error) {
	for len(buf) < maxFileBytes {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		var n int
		var err error
		if pread {
			n, err = syscall.Pread(fd, buf[len(buf):cap(buf)], int64(len(buf)))
		} else {
			n, err = syscall.Read(fd, buf[len(buf):cap(buf)])
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: hp, Err: err}
		}
		if n == 0 {
			break
		}
		short := len(buf)+n < cap(buf)
		buf = buf[:len(buf)+n]
		if pread && short {
			break
		}
	}
	return buf, nil
}

// Attr is an attribute file kept open and re-read in place: a sysfs
// attribute regenerates its value on every read from offset 0, so a
// collector that reads the same counters every scrape pays one pread per
// value instead of a path walk, an open and a close.
type Attr struct {
	fd   int
	path string // the host path asked for, for errors
	host string // where it is on this machine
}

// OpenAttr opens p (symlinks followed under the root) to be re-read with
// Read. The caller closes it.
func (f *FS) OpenAttr(p string) (*Attr, error) {
	r, err := f.resolve(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	hp := f.hostPath(r)
	fd, err := openFile(hp, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return &Attr{fd: fd, path: p, host: hp}, nil
}

// Path is the host path the attribute was opened as.
func (a *Attr) Path() string { return a.path }

// Read returns the attribute's current value, white space trimmed, read
// into buf (which it may grow and returns for reuse).
func (a *Attr) Read(buf []byte) (string, []byte, error) {
	data, err := readAt(a.fd, a.host, buf[:0], true)
	if err != nil && len(data) == 0 {
		return "", data, fmt.Errorf("read %s: %w", a.path, err)
	}
	return strings.Trim(string(data), " \t\r\n\x00"), data, nil
}

// Close closes the file.
func (a *Attr) Close() error { return syscall.Close(a.fd) }

// ReadString returns the contents of p with surrounding white space removed.
func (f *FS) ReadString(p string) (string, error) {
	b, err := f.ReadFile(p)
	if err != nil {
		return "", err
	}
	// Some attributes of old kernels end in a NUL (nohz_full read "\x00\n").
	return strings.Trim(string(b), " \t\r\n\x00"), nil
}

// ReadInt reads a decimal or 0x-prefixed integer attribute.
func (f *FS) ReadInt(p string) (int64, error) {
	s, err := f.ReadString(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	return v, nil
}

// ReadDir lists the entry names of directory p, sorted.
func (f *FS) ReadDir(p string) ([]string, error) {
	r, err := f.resolve(p)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	ents, err := os.ReadDir(f.hostPath(r))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	f.note(r, kindDir, "")
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
		// A listing replays only if its subdirectories and links exist in
		// the capture, even those never read (iommu_groups/N).
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(f.hostPath(path.Join(r, e.Name()))); err == nil {
				f.note(path.Join(r, e.Name()), kindLink, target)
			}
		case e.IsDir():
			f.note(path.Join(r, e.Name()), kindDir, "")
		}
	}
	slices.Sort(names)
	return names, nil
}

// Readlink returns the target of symlink p (its last component is not followed).
func (f *FS) Readlink(p string) (string, error) {
	dir, err := f.resolve(path.Dir(path.Clean("/" + p)))
	if err != nil {
		return "", fmt.Errorf("readlink %s: %w", p, err)
	}
	lp := path.Join(dir, path.Base(p))
	target, err := os.Readlink(f.hostPath(lp))
	if err != nil {
		return "", fmt.Errorf("readlink %s: %w", p, err)
	}
	f.note(lp, kindLink, target)
	return target, nil
}

// Exists reports whether p resolves to something.
func (f *FS) Exists(p string) bool {
	r, err := f.resolve(p)
	if err != nil {
		return false
	}
	_, err = os.Stat(f.hostPath(r))
	return err == nil
}

// IsDir reports whether p resolves to a directory.
func (f *FS) IsDir(p string) bool {
	r, err := f.resolve(p)
	if err != nil {
		return false
	}
	st, err := os.Stat(f.hostPath(r))
	return err == nil && st.IsDir()
}

// IsNotExist reports whether err means the file is absent, as opposed to
// present but unreadable.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func (f *FS) note(p string, k entryKind, target string) {
	if f.rec != nil {
		f.rec.add(p, k, target, nil)
	}
}

func (f *FS) noteData(p string, data []byte) {
	if f.rec != nil {
		f.rec.add(p, kindFile, "", data)
	}
}

type entryKind int

const (
	kindFile entryKind = iota
	kindDir
	kindLink
)

// Entry is one path a reader touched.
type Entry struct {
	Path   string // host path, e.g. /sys/devices/pci0000:00/0000:00:01.0/vendor
	IsDir  bool
	Link   string // symlink target, when the path is a symlink
	IsLink bool
	// Data is what was read, for files read through the FS; nil for files
	// another library read (see Note), whose contents must be read again.
	Data []byte
}

// Recorder collects the paths an FS touched. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	entries map[string]Entry
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{entries: map[string]Entry{}} }

func (r *Recorder) add(p string, k entryKind, target string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := Entry{Path: p, IsDir: k == kindDir, IsLink: k == kindLink, Link: target, Data: data}
	if old, ok := r.entries[p]; ok && old.IsLink {
		return
	}
	r.entries[p] = e
}

// Entries returns what was touched, sorted by path.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Note records p as read although another library read it (procfs reads
// /proc itself); gather then captures it too.
func (f *FS) Note(p string) {
	if f.rec == nil {
		return
	}
	if r, err := f.resolve(p); err == nil {
		if st, err := os.Stat(f.hostPath(r)); err == nil && !st.IsDir() {
			f.note(r, kindFile, "")
		}
	}
}

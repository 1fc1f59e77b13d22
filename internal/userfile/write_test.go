package userfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func leftovers(t *testing.T, dir string) {
	t.Helper()
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.Contains(e.Name(), "rdmalab-tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// A new file and a replaced one both come out whole, with the final mode,
// through a rename (a new inode), leaving no temporary file.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.html")
	if err := WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(p)
	if err := WriteFile(p, []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if string(b) != "two" || st2.Mode().Perm() != 0o755 || st1.Mode().Perm() != 0o644 || os.SameFile(st1, st2) {
		t.Errorf("content %q mode %v (first %v), same inode %v", b, st2.Mode(), st1.Mode(), os.SameFile(st1, st2))
	}
	// A failed render leaves the old file as it was.
	err := WriteAtomic(p, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("render failed")
	})
	if b, _ := os.ReadFile(p); err == nil || string(b) != "two" {
		t.Errorf("failed write: %v, file %q", err, b)
	}
	leftovers(t, dir)
}

// A symlink to a file: the file gets the content, the link stays a link.
// A dangling link, a directory and a block device are refused with one
// line; a FIFO nobody reads is refused at once.
func TestWriteTargets(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.html")
	os.WriteFile(real, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.html")
	os.Symlink("real.html", link)
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Errorf("link target holds %q", b)
	}
	if lst, _ := os.Lstat(link); lst.Mode()&fs.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}

	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	for _, c := range []struct {
		path string
		is   error
		want string
	}{
		{dangling, ErrDangling, "which does not exist; rdmalab does not create files through links"},
		{dir, ErrIsDir, "a directory; name a file to write"},
		{fifo, syscall.ENXIO, "a named pipe (FIFO) nobody is reading"},
		{filepath.Join(dir, "no", "such"), fs.ErrNotExist, "cannot create a file in"},
	} {
		start := time.Now()
		err := WriteFile(c.path, []byte("x"), 0o644)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || time.Since(start) > time.Second {
			t.Errorf("%s: %v", c.path, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a file was created through the dangling link")
	}

	// A FIFO with a reader gets the content, and stays a FIFO.
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	var err error
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		if err = WriteFile(fifo, []byte("through the pipe"), 0o644); !errors.Is(err, syscall.ENXIO) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "through the pipe" {
			t.Errorf("reader got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader never finished")
	}
	if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	// /dev/null is written in place, never replaced (as any user).
	if err := WriteFile("/dev/null", []byte("x"), 0o644); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
	leftovers(t, dir)
}

// As root: a device node made here stays a device; a block device is
// refused before it is opened; a link another user planted in a sticky
// world-writable directory is not followed.
func TestWriteAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mknod, chown)")
	}
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		t.Skipf("mknod: %v", err)
	}
	if err := WriteFile(null, []byte("gone"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(null); st.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("the device became %v", st.Mode())
	}
	blk := filepath.Join(dir, "loop")
	syscall.Mknod(blk, syscall.S_IFBLK|0o600, int(7<<8|0))
	if err := WriteFile(blk, []byte("x"), 0o644); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a block device") {
		t.Errorf("block device: %v", err)
	}

	shared := filepath.Join(dir, "tmp")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777|fs.ModeSticky)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("root's"), 0o600)
	planted := filepath.Join(shared, "r.html")
	os.Symlink(victim, planted)
	os.Lchown(planted, 65534, 65534)
	if err := WriteFile(planted, []byte("x"), 0o644); !errors.Is(err, ErrUntrustedLink) {
		t.Errorf("planted link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's" {
		t.Errorf("the victim changed: %q", b)
	}
}

// An output directory is checked before any work and made only under an
// existing parent; files rdmalab names in it replace what is planted at
// their names, never write through it, and never leave the directory.
func TestOutDirAndWriteIn(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ dir, want string }{
		{"", "a directory is required"},
		{file, "not a directory (a regular file)"},
		{filepath.Join(file, "sub"), "a component of the path is not a directory"},
		{filepath.Join(base, "no", "lab"), "parent directory " + filepath.Join(base, "no") + " does not exist"},
		{"/dev/null", "not a directory (a character device)"},
	} {
		if err := MakeOutDir(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.dir, err, c.want)
		}
	}
	fresh := filepath.Join(base, "fresh")
	if err := OutDir(fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("OutDir made the directory")
	}
	if err := MakeOutDir(fresh); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(fresh, "a.conf"))
	if err := WriteIn(fresh, "a.conf", []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Lstat(filepath.Join(fresh, "a.conf"))
	if b, _ := os.ReadFile(victim); string(b) != "keep" || !st.Mode().IsRegular() || st.Mode().Perm() != 0o640 {
		t.Errorf("victim %q, a.conf %v", b, st.Mode())
	}
	syscall.Mkfifo(filepath.Join(fresh, "p"), 0o644)
	for _, name := range []string{"../x", "a/b", "", "..", "p"} {
		if err := WriteIn(fresh, name, []byte("x"), 0o644); err == nil {
			t.Errorf("wrote %q", name)
		}
	}
	if es, _ := os.ReadDir(fresh); len(es) != 2 {
		t.Errorf("stray files: %v", es)
	}
}

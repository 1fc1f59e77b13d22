package testhost

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// SharedTestdata returns ../shared/testdata relative to the module root,
// where the project keeps real captures it must not copy into the repo.
func SharedTestdata(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "..", "shared", "testdata")
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("the captures live in %s beside the repository: %v", p, err)
			}
			return p
		}
	}
	t.Fatal("no go.mod above " + dir)
	return ""
}

// Capture is one real capture under shared/testdata/sysfs, unpacked.
type Capture struct {
	Name string // file name it came from
	Root string // directory to pass as --root
	// IBClassOnly is set for captures of /sys/class/infiniband alone.
	IBClassOnly bool
	// HwlocXML is hwloc's own expected output for the tree, when its .test
	// file names it.
	HwlocXML string
}

var (
	capturesOnce sync.Once
	capturesDir  string
	captures     map[string]Capture
	capturesErr  error
)

// Main runs a package's tests and removes the captures they unpacked and
// the binary they built; use it from TestMain in packages that call
// Captures or Rdmalab.
func Main(m *testing.M) int {
	// Tests see one terminal whatever the caller's is (an Emacs shell or a CI
	// runner sets TERM=dumb): a test that wants another sets it itself.
	os.Setenv("TERM", "xterm-256color")
	os.Unsetenv("NO_COLOR")
	os.Unsetenv("COLUMNS")
	code := m.Run()
	if capturesDir != "" {
		os.RemoveAll(capturesDir)
	}
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	return code
}

// Captures unpacks every sysfs capture under shared/testdata/sysfs, once
// per test binary, and returns them by name. Tests must not modify them.
func Captures(t testing.TB) map[string]Capture {
	t.Helper()
	base := filepath.Join(SharedTestdata(t), "sysfs")
	capturesOnce.Do(func() {
		capturesDir, capturesErr = os.MkdirTemp(fastTmp(), tempPrefix("captures"))
		if capturesErr == nil {
			captures, capturesErr = unpackCaptures(base, capturesDir)
		}
	})
	if capturesErr != nil {
		t.Fatal(capturesErr)
	}
	return captures
}

func unpackCaptures(base, tmp string) (map[string]Capture, error) {
	out := map[string]Capture{}
	var firstErr error
	n := 0
	newDir := func() string {
		n++
		d := filepath.Join(tmp, strconv.Itoa(n))
		os.MkdirAll(d, 0o755)
		return d
	}
	add := func(name, archive string, open func(io.Reader) (io.Reader, error)) {
		dir := newDir()
		if err := extractTar(archive, dir, open); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("unpack %s: %w", archive, err)
		}
		c := Capture{Name: name, Root: singleRoot(dir)}
		// Only a .test file says how hwloc made its expected XML; without
		// one (fakepcilocalities) the options are unknown and it is no oracle.
		if xml := strings.TrimSuffix(archive, ".tar.bz2") + ".xml"; fileExists(xml) && fileExists(strings.TrimSuffix(archive, ".tar.bz2")+".test") {
			c.HwlocXML = xml
		}
		if !fileExists(filepath.Join(c.Root, "sys")) {
			c.IBClassOnly = true
		}
		out[name] = c
	}
	bz, _ := filepath.Glob(filepath.Join(base, "hwloc", "*.tar.bz2"))
	for _, f := range bz {
		add(strings.TrimSuffix(filepath.Base(f), ".tar.bz2"), f, func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil })
	}
	gz, _ := filepath.Glob(filepath.Join(base, "*", "*.tar.gz"))
	for _, f := range gz {
		add(strings.TrimSuffix(filepath.Base(f), ".tar.gz"), f, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) })
	}
	ttars, _ := filepath.Glob(filepath.Join(base, "prometheus", "*.ttar"))
	for _, f := range ttars {
		dir := newDir()
		if err := ExtractTTAR(f, dir); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("unpack %s: %w", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".ttar")
		out[name] = Capture{Name: name, Root: singleRoot(dir)}
	}
	if len(out) == 0 && firstErr == nil {
		firstErr = fmt.Errorf("no captures under %s", base)
	}
	return out, firstErr
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// singleRoot descends into a lone top-level directory (hwloc and procfs
// wrap their trees in one).
func singleRoot(dir string) string {
	for {
		if fileExists(filepath.Join(dir, "sys")) || fileExists(filepath.Join(dir, "proc")) {
			return dir
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) != 1 || !ents[0].IsDir() {
			return dir
		}
		dir = filepath.Join(dir, ents[0].Name())
	}
}

// extractTar unpacks trusted test archives with plain os calls rather than
// capture.Extract: os.Root costs seconds on these 30,000-file trees (the
// inventory tests open the hwloc tar.bz2 files through capture.Extract too).
func extractTar(archive, dir string, open func(io.Reader) (io.Reader, error)) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := open(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(strings.TrimPrefix(h.Name, "/"))
		if strings.HasPrefix(name, "..") {
			continue
		}
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(full, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.Symlink(h.Linkname, full)
		case tar.TypeReg:
			w, err := os.OpenFile(full, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, tr)
			w.Close()
			if err != nil {
				return err
			}
		}
	}
}

// ExtractTTAR unpacks a prometheus "ttar" text archive (Path:/Lines:/Mode:,
// Directory:, SymlinkTo:; NULLBYTE for NUL, a trailing EOF for no newline).
func ExtractTTAR(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	safe := func(p string) (string, error) {
		c := filepath.Clean(p)
		if filepath.IsAbs(c) || strings.HasPrefix(c, "..") {
			return "", fmt.Errorf("%s line %d: path %q leaves the archive", archive, lineNo, p)
		}
		return filepath.Join(dir, c), nil
	}
	var cur string
	for {
		line, ok := next()
		if !ok {
			return sc.Err()
		}
		switch {
		case strings.HasPrefix(line, "Directory: "):
			p, err := safe(strings.TrimPrefix(line, "Directory: "))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case strings.HasPrefix(line, "Path: "):
			cur = strings.TrimPrefix(line, "Path: ")
		case strings.HasPrefix(line, "SymlinkTo: "):
			p, err := safe(cur)
			if err != nil {
				return err
			}
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.Symlink(strings.TrimPrefix(line, "SymlinkTo: "), p); err != nil && !os.IsExist(err) {
				return err
			}
		case strings.HasPrefix(line, "Lines: "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "Lines: "))
			if err != nil {
				return fmt.Errorf("%s line %d: %v", archive, lineNo, err)
			}
			var b strings.Builder
			for i := 0; i < n; i++ {
				l, ok := next()
				if !ok {
					return fmt.Errorf("%s: %s ends early", archive, cur)
				}
				l = strings.ReplaceAll(l, "NULLBYTE", "\x00")
				if i == n-1 && strings.HasSuffix(l, "EOF") {
					b.WriteString(strings.TrimSuffix(l, "EOF"))
				} else {
					b.WriteString(l + "\n")
				}
			}
			p, err := safe(cur)
			if err != nil {
				return err
			}
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
	}
}

// RequireTool returns the path of a real peer program (lstopo, ibsim, sshd).
// Without it the test is skipped on a developer's machine but fails where
// RDMALAB_REQUIRE_TOOLS is set, as CI sets it: a missing install must never
// turn into a silently green run.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s is required (RDMALAB_REQUIRE_TOOLS is set) but not installed: %v", name, err)
		}
		t.Skipf("%s not installed; run the README's test command to install it", name)
	}
	return p
}

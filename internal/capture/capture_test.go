package capture

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A hostile archive cannot write outside the directory it unpacks into,
// neither by a ../ name nor through a symlink it planted first.
func TestExtractStaysInside(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	archive := filepath.Join(t.TempDir(), "evil.tar.gz")
	f, _ := os.Create(archive)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "sys/escape", Linkname: outside})
	for _, name := range []string{"../../pwned", "sys/escape/pwned", "sys/ok"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 2, Mode: 0o644})
		tw.Write([]byte("x\n"))
	}
	tw.Close()
	gz.Close()
	f.Close()
	refused, err := Extract(archive, dir)
	if _, serr := os.Stat(filepath.Join(outside, "pwned")); serr == nil {
		t.Fatal("the archive wrote outside the target directory")
	}
	if err != nil {
		t.Fatal(err)
	}
	// Both escapes are counted and named, the honest entry is written.
	if !slices.Equal(refused, Refused{"../../pwned", "sys/escape/pwned"}) {
		t.Errorf("refused %q", refused)
	}
	if _, err := os.Stat(filepath.Join(dir, "sys/ok")); err != nil {
		t.Error(err)
	}
}

func TestExtractRejectsNonGzip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.tar.gz")
	os.WriteFile(p, []byte("not gzip"), 0o644)
	if _, err := Extract(p, t.TempDir()); err == nil {
		t.Error("want an error")
	}
}

// Whatever names an archive holds, nothing lands outside the directory and
// every entry whose name climbs out of it is in the refused list.
func FuzzExtractNames(f *testing.F) {
	f.Add("sys/ok", "../x", "/abs/ok")
	f.Add("a/../../b", "sys/../../../c", "./d")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		// Deep enough that a climb of a few levels stays inside base, where
		// the walk below would see it.
		base := t.TempDir()
		dir := filepath.Join(base, "1", "2", "3", "in")
		os.MkdirAll(dir, 0o755)
		archive := filepath.Join(base, "f.tar.gz")
		out, _ := os.Create(archive)
		gz := gzip.NewWriter(out)
		tw := tar.NewWriter(gz)
		var climbing []string
		for _, name := range []string{a, b, c} {
			if tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 1, Mode: 0o644}) != nil {
				continue
			}
			tw.Write([]byte("x"))
			if n := path.Clean(strings.TrimLeft(name, "/")); n == ".." || strings.HasPrefix(n, "../") {
				climbing = append(climbing, name)
			}
		}
		tw.Close()
		gz.Close()
		out.Close()
		refused, _ := Extract(archive, dir)
		for _, n := range climbing {
			if !slices.Contains(refused, n) {
				t.Errorf("%q climbs out but was not refused (refused %q)", n, refused)
			}
		}
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && p != archive && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Fatalf("wrote %s outside the directory", p)
			}
			return nil
		})
	})
}

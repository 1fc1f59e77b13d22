package capture

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
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

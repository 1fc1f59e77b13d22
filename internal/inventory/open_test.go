package inventory

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// writeArchive tars dir (if any) plus extra entries into a capture.
func writeArchive(t *testing.T, dir string, extra map[string]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "host.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if dir != "" {
		if err := tw.AddFS(os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range extra {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o644})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	f.Close()
	return p
}

// Every source a user can name opens to the same host, or is refused with
// a typed error naming it.
func TestOpenSources(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	fixed := Options{Now: func() time.Time { return time.Unix(0, 0) }}
	dir, err := Open(root, fixed)
	if err != nil {
		t.Fatal(err)
	}
	if dir.Hostname != "columbia.lab" || len(dir.RDMADevices) != 1 {
		t.Fatalf("%s %d", dir.Hostname, len(dir.RDMADevices))
	}
	ibOnly, err := Open(filepath.Join(root, "sys/class/infiniband"), fixed)
	if err != nil || len(ibOnly.RDMADevices) != 1 {
		t.Fatalf("lone IB class dir: %v", err)
	}
	arch, err := Open(writeArchive(t, root, nil), fixed)
	if err != nil || arch.Hostname != "columbia.lab" || len(arch.RDMADevices) != 1 || len(arch.Errors) != len(dir.Errors) {
		t.Fatalf("archive: %v", err)
	}
	if _, err := Open(writeArchive(t, "", nil), fixed); !errors.Is(err, ErrNoSys) {
		t.Errorf("empty archive: %v", err)
	}
}

// The mistakes users make are refused, each with its reason.
func TestOpenRefuses(t *testing.T) {
	procOnly := t.TempDir()
	os.MkdirAll(filepath.Join(procOnly, "proc/sys/kernel"), 0o755)
	os.WriteFile(filepath.Join(procOnly, "proc/sys/kernel/hostname"), []byte("x\n"), 0o644)
	emptySys := t.TempDir()
	os.MkdirAll(filepath.Join(emptySys, "sys"), 0o755)
	nothing := t.TempDir()
	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("hello\n"), 0o644)
	for _, c := range []struct {
		source string
		want   error
		text   string
	}{
		{procOnly, ErrNoSys, "has proc/ but no sys/"},
		{emptySys, ErrEmptySys, "sys/ is empty"},
		{nothing, ErrNoSys, "no sys/ inside"},
		{text, ErrNotHost, "notes.txt: not a directory"},
		{filepath.Join(nothing, "missing"), os.ErrNotExist, "missing"},
	} {
		_, err := Open(c.source, Options{})
		var se *SourceError
		if !errors.Is(err, c.want) || !errors.As(err, &se) || !strings.Contains(err.Error(), c.text) || !strings.HasPrefix(err.Error(), c.source) {
			t.Errorf("%s: %v", c.source, err)
		}
	}
}

// Archive entries that try to leave the root are counted and reported:
// in the snapshot's errors when the rest is a host, in the error when
// nothing else is.
func TestArchiveTraversalIsReported(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	evil := map[string]string{"../../pwned": "x", "../etc/passwd": "x"}
	s, err := Open(writeArchive(t, root, evil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range s.Errors {
		if e.Subject == "capture" && strings.HasPrefix(e.Error, "2 archive entries refused for escaping the capture's root") {
			found = true
		}
	}
	if !found || len(s.RDMADevices) != 1 {
		t.Errorf("errors %+v", s.Errors)
	}
	_, err = Open(writeArchive(t, "", evil), Options{})
	if err == nil || !strings.Contains(err.Error(), "2 archive entries refused") {
		t.Errorf("only traversal entries: %v", err)
	}
}

// hwloc-gather-topology's captures are tar.bz2: `inventory --root X.tar.bz2`
// reads them directly, to the same host as the unpacked tree.
func TestOpenBzip2Captures(t *testing.T) {
	caps := testhost.Captures(t)
	fixed := Options{Now: func() time.Time { return time.Unix(0, 0) }}
	archives, _ := filepath.Glob(filepath.Join(testhost.SharedTestdata(t), "sysfs", "hwloc", "*.tar.bz2"))
	if len(archives) == 0 {
		t.Fatal("no hwloc captures")
	}
	for _, a := range archives {
		name := strings.TrimSuffix(filepath.Base(a), ".tar.bz2")
		t.Run(name, func(t *testing.T) {
			got, err := Open(a, fixed)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Open(caps[name].Root, fixed)
			if err != nil {
				t.Fatal(err)
			}
			got.Source, want.Source = "", ""
			var gb, wb strings.Builder
			got.Encode(&gb)
			want.Encode(&wb)
			if gb.String() != wb.String() {
				t.Errorf("the archive reads differently from its unpacked tree")
			}
			if len(got.PCIDevices) == 0 {
				t.Error("no PCI devices read")
			}
		})
	}
}

// A capture recompressed with xz (tar cJf) reads as the same host as its
// bzip2 original; a truncated xz stream is refused naming the file.
func TestOpenXZCapture(t *testing.T) {
	archives, _ := filepath.Glob(filepath.Join(testhost.SharedTestdata(t), "sysfs", "hwloc", "*.tar.bz2"))
	if len(archives) == 0 {
		t.Fatal("no hwloc captures")
	}
	slices.SortFunc(archives, func(a, b string) int { return cmp.Compare(size(a), size(b)) })
	src := archives[0]
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, bzip2.NewReader(f)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p := filepath.Join(t.TempDir(), "host.tar.xz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	fixed := Options{Now: func() time.Time { return time.Unix(0, 0) }}
	got, err := Open(p, fixed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Open(src, fixed)
	if err != nil {
		t.Fatal(err)
	}
	got.Source, want.Source = "", ""
	var gb, wb strings.Builder
	got.Encode(&gb)
	want.Encode(&wb)
	if gb.String() != wb.String() || len(got.PCIDevices) == 0 {
		t.Errorf("%s recompressed with xz reads differently", filepath.Base(src))
	}
	cut := filepath.Join(t.TempDir(), "cut.tar.xz")
	os.WriteFile(cut, buf.Bytes()[:buf.Len()/2], 0o644)
	if _, err := Open(cut, fixed); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("truncated xz: %v", err)
	}
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

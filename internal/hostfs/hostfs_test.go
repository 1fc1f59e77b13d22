package hostfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolveStaysInRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.0"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.0/vendor"), []byte("0x15b3\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sys/bus/pci/devices"), 0o755)
	// relative link, absolute link (re-rooted), and a link climbing out.
	os.Symlink("../../../devices/pci0000:00/0000:00:01.0", filepath.Join(root, "sys/bus/pci/devices/0000:00:01.0"))
	os.Symlink("/sys/devices/pci0000:00/0000:00:01.0", filepath.Join(root, "sys/bus/pci/devices/abs"))
	os.Symlink("../../../../../../../../"+outside+"/secret", filepath.Join(root, "sys/bus/pci/devices/escape"))
	os.WriteFile(filepath.Join(root, "secret"), []byte("inside\n"), 0o644)

	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder()
	fs.Record(rec)
	for _, p := range []string{"/sys/bus/pci/devices/0000:00:01.0/vendor", "/sys/bus/pci/devices/abs/vendor"} {
		if v, err := fs.ReadString(p); err != nil || v != "0x15b3" {
			t.Errorf("%s = %q, %v", p, v, err)
		}
	}
	if real, err := fs.Realpath("/sys/bus/pci/devices/abs"); err != nil || real != "/sys/devices/pci0000:00/0000:00:01.0" {
		t.Errorf("realpath = %q %v", real, err)
	}
	// ".." above the root stays at the root, so the escape lands on root/secret... or nowhere.
	if v, err := fs.ReadString("/sys/bus/pci/devices/escape"); err == nil && v == "outside" {
		t.Fatal("a symlink read a file outside the root")
	}
	if _, err := fs.ReadFile("/sys/nope"); !IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	var paths []string
	for _, e := range rec.Entries() {
		paths = append(paths, e.Path)
	}
	for _, want := range []string{"/sys/bus/pci/devices/0000:00:01.0", "/sys/devices/pci0000:00/0000:00:01.0/vendor"} {
		if !slices.Contains(paths, want) {
			t.Errorf("recorder lacks %s: %v", want, paths)
		}
	}
}

func TestLinkLoopIsAnError(t *testing.T) {
	root := t.TempDir()
	os.Symlink("b", filepath.Join(root, "a"))
	os.Symlink("a", filepath.Join(root, "b"))
	fs, _ := New(root)
	if _, err := fs.ReadFile("/a"); err == nil {
		t.Fatal("want an error for a symlink loop")
	}
}

func TestNewRejectsNonDirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := New(f); err == nil {
		t.Error("want an error")
	}
}

// Package capture writes and reads host captures: a tar.gz of exactly the
// sysfs/procfs files inventory read, laid out as a root tree, so anyone can
// replay a host with --root. Reading also takes a tar.bz2 (hwloc-gather-
// topology's captures) and a tar.xz, recognised by content, not by name.
package capture

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/hostfs"

	"github.com/ulikunitz/xz"

	"github.com/rdmalab/rdmalab/internal/userfile"
)

// ManifestName is the file at the top of every capture that says what it is.
const ManifestName = "rdmalab-capture.json"

// Manifest describes a capture.
type Manifest struct {
	Format     int       `json:"format"`
	Hostname   string    `json:"hostname"`
	CapturedAt time.Time `json:"captured_at"`
	Root       string    `json:"root"`
	Files      int       `json:"files"`
}

// maxExtractBytes bounds what Extract writes, so a hostile archive cannot
// fill the disk; real captures are a few MiB.
const maxExtractBytes = 512 << 20

// Write writes the entries a Recorder saw under fsys as a tar.gz to w.
func Write(w io.Writer, fsys *hostfs.FS, entries []hostfs.Entry, m Manifest) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := m.CapturedAt
	dirs := map[string]bool{}
	mkdirs := func(p string) error {
		var chain []string
		for d := path.Dir(p); d != "/" && d != "." && !dirs[d]; d = path.Dir(d) {
			chain = append([]string{d}, chain...)
		}
		for _, d := range chain {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: now}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range entries {
		if err := mkdirs(e.Path); err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		name := strings.TrimPrefix(e.Path, "/")
		switch {
		case e.IsLink:
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: e.Link, ModTime: now}); err != nil {
				return fmt.Errorf("capture %s: %w", e.Path, err)
			}
		case e.IsDir:
			if dirs[e.Path] {
				continue
			}
			dirs[e.Path] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: now}); err != nil {
				return fmt.Errorf("capture %s: %w", e.Path, err)
			}
		default:
			data := e.Data
			if data == nil {
				var err error
				if data, err = fsys.ReadFile(e.Path); err != nil {
					continue // vanished since it was read; the snapshot still records it
				}
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o444, Size: int64(len(data)), ModTime: now}); err != nil {
				return fmt.Errorf("capture %s: %w", e.Path, err)
			}
			if _, err := tw.Write(data); err != nil {
				return fmt.Errorf("capture %s: %w", e.Path, err)
			}
		}
	}
	m.Format = 1
	mb, _ := json.MarshalIndent(m, "", "  ")
	mb = append(mb, '\n')
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Mode: 0o444, Size: int64(len(mb)), ModTime: now}); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if _, err := tw.Write(mb); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return gz.Close()
}

// IsArchive reports whether p names a capture archive gather writes
// (gzip-compressed tar).
func IsArchive(p string) bool {
	return strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")
}

// IsReadable reports whether p names an archive Extract may be given: what
// gather writes, a tar.bz2 (hwloc-gather-topology) or a tar.xz.
func IsReadable(p string) bool {
	for _, ext := range []string{".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// decompress picks the decoder by the stream's magic bytes, whatever the
// file is called.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(6)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("not a gzip file: %w", err)
		}
		return gz, nil
	case bytes.HasPrefix(magic, []byte("BZh")):
		return bzip2.NewReader(br), nil
	case bytes.Equal(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		// The standard library has no xz; ulikunitz/xz is pure Go.
		x, err := xz.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("not an xz file: %w", err)
		}
		return x, nil
	}
	return nil, errors.New("not a gzip, bzip2 or xz compressed tar")
}

// Refused lists archive entries Extract did not write because they would
// have landed outside the directory: a ../ name, or a path
// through a symlink the archive planted. A real capture has none, so a
// caller reports them rather than trusting what is left.
type Refused []string

// Extract unpacks a capture (or any tar.gz or tar.bz2 of a root tree) into dir. Writes
// go through os.Root, so no entry or symlink in the archive can place a file
// outside dir; entries that try are skipped and returned.
func Extract(archive, dir string) (Refused, error) {
	f, err := userfile.Open(archive, userfile.Capture)
	if err != nil {
		return nil, fmt.Errorf("capture %w", err)
	}
	defer f.Close()
	r, err := decompress(f)
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", archive, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var written int64
	var refused Refused
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return refused, nil
		}
		if err != nil {
			return refused, fmt.Errorf("capture %s: %w", archive, err)
		}
		// A leading / is stripped, as tar does: the entry stays inside.
		name := path.Clean(strings.TrimLeft(h.Name, "/"))
		if name == ".." || strings.HasPrefix(name, "../") {
			refused = append(refused, h.Name)
			continue
		}
		if name == "." {
			continue
		}
		err = extractEntry(root, tr, h, filepath.FromSlash(name), &written)
		switch {
		case escapes(err):
			refused = append(refused, h.Name)
		case err != nil:
			return refused, fmt.Errorf("capture %s: %s: %w", archive, h.Name, err)
		}
	}
}

// escapes reports os.Root refusing a path that leaves the root (its error
// is not exported).
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func extractEntry(root *os.Root, tr *tar.Reader, h *tar.Header, name string, written *int64) error {
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o755)
	case tar.TypeSymlink:
		if err := root.Symlink(h.Linkname, name); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	case tar.TypeReg:
		*written += h.Size
		if *written > maxExtractBytes {
			return fmt.Errorf("larger than %d MiB unpacked; not a host capture", maxExtractBytes>>20)
		}
		out, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.LimitReader(tr, h.Size))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

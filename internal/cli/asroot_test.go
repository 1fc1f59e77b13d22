package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Issue 35: rdmalab as root in a directory other users write. Every writer
// of a user-named file (report --out, gather, exporter --textfile, plan vms
// --out) leaves a device a device, a FIFO a FIFO and a link a link; refuses
// a directory with one line; and never writes through, or leaves the result
// owned by, anything planted at a name the old code used for its temporary
// file.

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the case is rdmalab run as root beside other users' files")
	}
}

// nobody is the other user who plants files.
const nobody = 65534

// writer is a command that writes one file the user names.
type writer struct {
	name string
	ext  string // the name the command insists on (gather: .tar.gz)
	args func(t *testing.T, out string) []string
}

func fileWriters() []writer {
	return []writer{
		{"report", ".html", func(t *testing.T, out string) []string {
			return []string{"report", "--html", out, "example:seed000-epyc"}
		}},
		{"gather", ".tar.gz", func(t *testing.T, out string) []string {
			return []string{"gather", out, "--root", testhost.WriteTree(t, testhost.Seed000())}
		}},
		{"exporter", ".prom", func(t *testing.T, out string) []string {
			return []string{"exporter", "--textfile", out, "--root", testhost.WriteTree(t, testhost.Seed000())}
		}},
		{"design", ".yaml", func(t *testing.T, out string) []string {
			return []string{"design", "fabric", "--hosts", "8", "--radix", "8", "--rate", "4X HDR", "--plan", out}
		}},
	}
}

// sharedDir is a directory like /tmp: world-writable, sticky, root's.
func sharedDir(t *testing.T) string {
	d := filepath.Join(testhost.TempDir(t), "shared")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o777|fs.ModeSticky)
	return d
}

// listing is every name in dir with its type, size and owner.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		st, _ := os.Lstat(filepath.Join(dir, e.Name()))
		sys := st.Sys().(*syscall.Stat_t)
		out[e.Name()] = fmt.Sprintf("%v uid %d %d bytes", st.Mode(), sys.Uid, st.Size())
	}
	return out
}

func ownedByRoot(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); !st.Mode().IsRegular() || sys.Uid != 0 || st.Mode().Perm() != mode {
		t.Errorf("%s: %v owned by uid %d, want a regular file of root's with mode %v", path, st.Mode(), sys.Uid, mode)
	}
}

// A planted symlink and a planted 0666 file of another user's at every
// temporary name the old writers used: nothing but the target changes, and
// the target is root's, with its mode.
func TestAsRootPlantedTempNames(t *testing.T) {
	needRoot(t)
	for _, w := range fileWriters() {
		for _, plant := range []string{"symlink", "0666 file"} {
			t.Run(w.name+"/"+plant, func(t *testing.T) {
				dir := sharedDir(t)
				victim := filepath.Join(testhost.TempDir(t), "victim")
				os.WriteFile(victim, []byte("root's own file"), 0o600)
				out := filepath.Join(dir, "r"+w.ext)
				for _, tmp := range []string{out + ".partial", out + ".tmp", out + ".new", filepath.Join(dir, "."+filepath.Base(out)+".tmp")} {
					if plant == "symlink" {
						os.Symlink(victim, tmp)
						os.Lchown(tmp, nobody, nobody)
					} else {
						os.WriteFile(tmp, []byte("planted"), 0o666)
						os.Chmod(tmp, 0o666)
						os.Chown(tmp, nobody, nobody)
					}
				}
				before := listing(t, dir)
				_, errOut, code := run(t, w.args(t, out)...)
				if code == ExitUsage {
					t.Fatalf("exit 2: %s", errOut)
				}
				ownedByRoot(t, out, 0o644)
				after := listing(t, dir)
				delete(after, filepath.Base(out))
				if len(after) != len(before) {
					t.Errorf("files appeared or vanished: before %v after %v", before, after)
				}
				for k, v := range before {
					if after[k] != v {
						t.Errorf("%s changed: %q → %q", k, v, after[k])
					}
				}
				if b, _ := os.ReadFile(victim); string(b) != "root's own file" {
					t.Errorf("the planted link's target was written: %q", b)
				}
			})
		}
	}
}

// readFIFO reads a FIFO from before the writer opens it until the writer
// closes it, without ever blocking the test (the descriptor is
// non-blocking and the read polled under a deadline).
func readFIFO(t *testing.T, path string) <-chan []byte {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		defer syscall.Close(fd)
		var all []byte
		buf := make([]byte, 1<<16)
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
			n, err := syscall.Read(fd, buf)
			switch {
			case n > 0:
				all = append(all, buf[:n]...)
			case n == 0 && err == nil && len(all) > 0:
				got <- all // the writer closed
				return
			default:
				time.Sleep(2 * time.Millisecond) // no writer yet, or no data yet
			}
		}
		got <- all
	}()
	return got
}

// The target itself: a character device stays one, a FIFO being read gets
// the output and stays a FIFO, a FIFO nobody reads is refused at once, a
// symlink's file gets the content and the link stays, a directory and a
// dangling link are refused with one line.
func TestAsRootOutputTargets(t *testing.T) {
	needRoot(t)
	for _, w := range fileWriters() {
		t.Run(w.name, func(t *testing.T) {
			dir := testhost.TempDir(t)
			null := filepath.Join(dir, "null"+w.ext)
			if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("mknod: %v", err)
			}
			if _, errOut, code := run(t, w.args(t, null)...); code == ExitUsage {
				t.Errorf("char device: exit 2 %s", errOut)
			}
			if st, _ := os.Lstat(null); st.Mode()&fs.ModeCharDevice == 0 {
				t.Errorf("the device became %v", st.Mode())
			}

			fifo := filepath.Join(dir, "pipe"+w.ext)
			syscall.Mkfifo(fifo, 0o644)
			start := time.Now()
			_, errOut, code := run(t, w.args(t, fifo)...)
			if code != ExitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "a named pipe (FIFO) nobody is reading") || time.Since(start) > 20*time.Second {
				t.Errorf("FIFO with no reader: exit %d after %s: %q", code, time.Since(start), errOut)
			}
			got := readFIFO(t, fifo)
			if _, errOut, code := run(t, w.args(t, fifo)...); code == ExitUsage {
				t.Errorf("FIFO with a reader: exit 2 %s", errOut)
			}
			select {
			case b := <-got:
				if len(b) == 0 {
					t.Error("the FIFO's reader got nothing")
				}
			case <-time.After(3 * time.Minute):
				t.Fatal("the FIFO's reader never finished")
			}
			if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
				t.Errorf("the FIFO became %v", st.Mode())
			}

			real := filepath.Join(dir, "real"+w.ext)
			os.WriteFile(real, []byte("old"), 0o600)
			link := filepath.Join(dir, "link"+w.ext)
			os.Symlink("real"+w.ext, link)
			if _, errOut, code := run(t, w.args(t, link)...); code == ExitUsage {
				t.Errorf("symlink: exit 2 %s", errOut)
			}
			if lst, _ := os.Lstat(link); lst.Mode()&fs.ModeSymlink == 0 {
				t.Error("the link was replaced")
			}
			if b, _ := os.ReadFile(real); string(b) == "old" {
				t.Error("the link's file did not get the output")
			}
			ownedByRoot(t, real, 0o644)

			sub := filepath.Join(dir, "adir"+w.ext)
			os.Mkdir(sub, 0o755)
			dangling := filepath.Join(dir, "dangling"+w.ext)
			os.Symlink(filepath.Join(dir, "nowhere"+w.ext), dangling)
			for path, want := range map[string]string{sub: "a directory", dangling: "does not create files through links"} {
				_, errOut, code := run(t, w.args(t, path)...)
				if code != ExitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
					t.Errorf("%s: exit %d %q, want one line with %q", filepath.Base(path), code, errOut, want)
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "nowhere"+w.ext)); !errors.Is(err, fs.ErrNotExist) {
				t.Error("a file was created through the dangling link")
			}
			if es, _ := os.ReadDir(sub); len(es) != 0 {
				t.Errorf("the directory got files: %v", es)
			}
		})
	}
}

// plan vms --dir DIR in a shared directory: links and 0666 files planted at
// every file's name and at the old DIR/NAME.tmp names are replaced or left,
// never written through; each file is root's with its mode.
func TestAsRootPlanVMsOut(t *testing.T) {
	needRoot(t)
	probe := filepath.Join(testhost.TempDir(t), "probe")
	if _, errOut, code := run(t, "plan", "vms", "--snapshot", "example:seed000-epyc", "--dir", probe); code != ExitOK {
		t.Fatalf("plan vms: exit %d %s", code, errOut)
	}
	names := map[string]fs.FileMode{}
	es, _ := os.ReadDir(probe)
	for _, e := range es {
		st, _ := os.Stat(filepath.Join(probe, e.Name()))
		names[e.Name()] = st.Mode().Perm()
	}
	if names["CHECKLIST.md"] == 0 || names["vfio.sh"] != 0o755 {
		t.Fatalf("plan vms wrote %v", names)
	}
	victim := filepath.Join(testhost.TempDir(t), "victim")
	os.WriteFile(victim, []byte("root's own file"), 0o600)
	dir := sharedDir(t)
	i := 0
	for n := range names {
		for _, p := range []string{n, n + ".tmp"} {
			p = filepath.Join(dir, p)
			if i++; i%2 == 0 {
				os.Symlink(victim, p)
				os.Lchown(p, nobody, nobody)
			} else {
				os.WriteFile(p, []byte("planted"), 0o666)
				os.Chmod(p, 0o666)
				os.Chown(p, nobody, nobody)
			}
		}
	}
	before := listing(t, dir)
	if _, errOut, code := run(t, "plan", "vms", "--snapshot", "example:seed000-epyc", "--dir", dir); code != ExitOK {
		t.Fatalf("plan vms into the shared directory: exit %d %s", code, errOut)
	}
	after := listing(t, dir)
	for n, mode := range names {
		ownedByRoot(t, filepath.Join(dir, n), mode)
		delete(after, n)
		delete(before, n)
	}
	if len(after) != len(before) {
		t.Errorf("files appeared or vanished: %v → %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %q → %q", k, v, after[k])
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's own file" {
		t.Errorf("a planted link's target was written: %q", b)
	}
}

// plan check given a FIFO refuses it at once (it blocked until killed); a
// --root whose sys/ leads only to loops and dangling links, however deep,
// is refused with one line, not read as an empty host.
func TestUnreadableInputsRefused(t *testing.T) {
	dir := testhost.TempDir(t)
	fifo := filepath.Join(dir, "dom.xml")
	syscall.Mkfifo(fifo, 0o644)
	start := time.Now()
	_, errOut, code := run(t, "plan", "check", "--snapshot", "example:seed000-epyc", fifo)
	if code != ExitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "a named pipe (FIFO), not a regular file") || time.Since(start) > 10*time.Second {
		t.Errorf("plan check FIFO: exit %d after %s %q", code, time.Since(start), errOut)
	}

	root := filepath.Join(dir, "root")
	for _, d := range []string{"sys/class/infiniband", "sys/class/net", "sys/bus/pci/devices", "sys/devices"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.Symlink("../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0", filepath.Join(root, "sys/class/infiniband/mlx5_0"))
	os.Symlink("eth0", filepath.Join(root, "sys/class/net/eth0"))
	os.Symlink("/nonexistent/0000:00:01.0", filepath.Join(root, "sys/bus/pci/devices/0000:00:01.0"))
	for _, args := range [][]string{{"inventory", "--root", root}, {"doctor", "--root", root}} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "nothing under sys/ can be read (no file under it, 3 symlink loops or dangling links)") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// hostileFiles makes every kind of file a user can hand rdmalab by
// mistake or on purpose, in a directory any user may enter. The keys name
// the cases; the values are paths.
func hostileFiles(t *testing.T) (string, map[string]string) {
	dir := testhost.TempDir(t)
	os.Chmod(dir, 0o755)
	p := func(name string) string { return filepath.Join(dir, name) }
	files := map[string]string{
		"fifo":         p("fifo"),
		"/dev/zero":    "/dev/zero",
		"/dev/urandom": "/dev/urandom",
		"300MB":        p("big.json"),
		"empty":        p("empty.json"),
		"loop":         p("loop"),
		"directory":    p("adir"),
		"unreadable":   p("secret.json"),
		"control":      p("bad\x1b[31mname\x07.json"),
	}
	if err := syscall.Mkfifo(files["fifo"], 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(files["300MB"])
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 300 MB to stat and to read, nothing on disk.
	big.Truncate(300 << 20)
	big.Close()
	os.WriteFile(files["empty"], nil, 0o644)
	os.Symlink("loop", files["loop"])
	os.Mkdir(files["directory"], 0o755)
	os.WriteFile(files["unreadable"], []byte(`{"schema_version": 2}`), 0o000)
	os.WriteFile(files["control"], []byte("hello\n"), 0o644)
	return dir, files
}

// peak is a command's peak resident set in bytes: the highest VmHWM read
// from /proc while it ran, and the kernel's own maximum at exit (the last
// growth before exit happens between two reads).
type peak struct {
	mu  sync.Mutex
	max int64
}

func (p *peak) watch(pid int, done <-chan struct{}) {
	for {
		if kb := vmHWM(pid); kb > 0 {
			p.mu.Lock()
			p.max = max(p.max, kb<<10)
			p.mu.Unlock()
		}
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func vmHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

type ran struct {
	code    int
	stderr  string
	elapsed time.Duration
	peak    int64
}

// runBinary runs the built rdmalab (as nobody when asUser and root), with
// a hard stop at 10 s so a hang fails the test instead of hanging it.
func runBinary(t *testing.T, dir string, asNobody bool, args ...string) ran {
	t.Helper()
	bin := testhost.Rdmalab(t)
	name, argv := bin, args
	if asNobody && os.Getuid() == 0 {
		name, argv = "setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = nil
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var p peak
	done := make(chan struct{})
	go p.watch(cmd.Process.Pid, done)
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	cmd.Wait()
	timer.Stop()
	close(done)
	r := ran{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), elapsed: time.Since(start)}
	r.peak = p.max
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// The kernel's maximum at exit catches growth between two reads,
		// but a child started with CLONE_VM (as os/exec does) carries the
		// test process's own high-water mark into it from before exec:
		// a maximum equal to ours says nothing about the child.
		m, self := ru.Maxrss<<10, vmHWM(os.Getpid())<<10
		if m > self*11/10 || m < self*9/10 {
			r.peak = max(r.peak, m)
		}
	}
	return r
}

// Every command that takes a file, over every hostile file: one line
// naming the input, exit 2, within 2 s, under 100 MB resident.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary")
	}
	dir, files := hostileFiles(t)
	seed := testhost.WriteTree(t, testhost.Seed000())
	os.Chmod(seed, 0o755)
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("nodes:\n  - {name: n1, data: 127.0.0.1}\n  - {name: n2, data: 127.0.0.2}\nlink: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}\nlauncher: {type: local}\n"), 0o644)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o777)
	commands := []struct {
		args []string // %s is the hostile file
		skip []string // cases this input legitimately accepts
	}{
		{args: []string{"inventory", "--root", "%s"}},
		{args: []string{"inventory", "--snapshot", "%s"}},
		{args: []string{"doctor", "--snapshot", "%s"}},
		{args: []string{"doctor", "--root", "%s"}},
		{args: []string{"plan", "vms", "--snapshot", "%s"}},
		{args: []string{"nccl", "env", "--snapshot", "%s"}},
		{args: []string{"gather", filepath.Join(out, "h.tar.gz"), "--root", "%s"}},
		{args: []string{"judge", "%s"}},
		{args: []string{"nccl", "judge", "%s"}},
		{args: []string{"report", "%s"}},
		{args: []string{"fabric", "check", "--fabric", "%s"}},
		{args: []string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", "%s"}},
		{args: []string{"bench", "--cluster", "%s", "--results", filepath.Join(out, "r.jsonl")}},
		{args: []string{"bench", "--cluster", cluster, "--rounds", "%s", "--results", filepath.Join(out, "r.jsonl")}},
		{args: []string{"bench", "schedule", "--fabric", "%s", "--routes", "%s"}},
		{args: []string{"nccl", "run", "--cluster", "%s", "--dir", out}},
		{args: []string{"exporter", "--root", seed, "--listen", "127.0.0.1:0", "--web.config.file", "%s"}, skip: []string{"empty"}},
		{args: []string{"exporter", "--root", "%s", "--listen", "127.0.0.1:0"}},
	}
	cases := []string{"fifo", "/dev/zero", "/dev/urandom", "300MB", "empty", "loop", "directory", "unreadable", "control"}
	for _, c := range commands {
		for _, k := range cases {
			if strings.Contains(strings.Join(c.skip, " "), k) {
				continue
			}
			path := files[k]
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(a, "%s", path)
			}
			name := strings.Join(c.args, " ") + " / " + k
			t.Run(name, func(t *testing.T) {
				r := runBinary(t, dir, k == "unreadable", args...)
				lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
				// A control character reaches the terminal escaped,
				// quoted or not.
				shown := userfile.Escape(filepath.Base(path))
				if r.code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], shown) || strings.ContainsRune(r.stderr, '\x1b') {
					t.Errorf("exit %d, want 2 and one line naming %s:\n%s", r.code, shown, r.stderr)
				}
				if r.elapsed > 2*time.Second {
					if tax := processTax(testhost.Rdmalab(t)); r.elapsed > 2*time.Second+tax {
						t.Errorf("took %s, want under 2 s (+%s to start and reap a process here)", r.elapsed, tax)
					}
				}
				if r.peak > 100<<20 {
					t.Errorf("peak RSS %d MB, want under 100 MB", r.peak>>20)
				}
			})
		}
	}
}

// report and doctor given the same file twice, and judge given a name with
// control characters, never echo raw control bytes.
func TestHostileNamesEscaped(t *testing.T) {
	name := filepath.Join(t.TempDir(), "x\x1b]0;owned\x07.txt")
	_, errOut, code := run(t, "judge", name)
	if code != ExitUsage || strings.ContainsAny(errOut, "\x1b\x07") || !strings.Contains(errOut, `\x1b]0;owned\a`) {
		t.Errorf("exit %d: %q", code, errOut)
	}
	// A snapshot's hostname is the user's too: every renderer escapes it.
	s, err := examples.Load("seed000-epyc")
	if err != nil {
		t.Fatal(err)
	}
	s.Hostname = "evil\x1b]0;owned\x07\x1b[2J"
	snap := filepath.Join(t.TempDir(), "evil.json")
	f, _ := os.Create(snap)
	envelope.Write(f, envelope.HostSnapshot, nil, s)
	f.Close()
	for _, args := range [][]string{{"inventory", "--snapshot", snap}, {"doctor", "--snapshot", snap}, {"report", snap}, {"plan", "vms", "--snapshot", snap}, {"nccl", "env", "--snapshot", snap}} {
		out, errOut, _ := run(t, args...)
		if strings.ContainsAny(out+errOut, "\x07") || strings.Contains(out+errOut, "\x1b]") || strings.Contains(out+errOut, "\x1b[2J") || !strings.Contains(out, `evil\x1b]0;owned\x07\x1b[2J`) {
			t.Errorf("%v: a control character reached the terminal raw, or the name is missing:\n%q", args, out)
		}
	}
}

// Verdicts not fooled by shape: a host with no RDMA device is never
// ready, and copies of one input are named with their count, once.
func TestShapeDoesNotFoolVerdicts(t *testing.T) {
	dir := t.TempDir()
	s, err := examples.Load("hgx-h200")
	if err != nil {
		t.Fatal(err)
	}
	s.RDMADevices = nil
	var pci []host.PCIDevice
	for _, d := range s.PCIDevices {
		if !strings.HasPrefix(d.Class, "0x02") { // no network or InfiniBand controller left
			pci = append(pci, d)
		}
	}
	s.PCIDevices = pci
	noRDMA := filepath.Join(dir, "nordma.json")
	f, _ := os.Create(noRDMA)
	if err := envelope.Write(f, envelope.HostSnapshot, nil, s); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, errOut, code := run(t, "report", noRDMA)
	if first, _, _ := strings.Cut(out, "\n"); strings.HasPrefix(first, "READY") || !(strings.HasPrefix(first, "NOT READY") || strings.HasPrefix(first, "UNPROVEN")) {
		t.Errorf("a host with no RDMA device: exit %d, %q\n%s", code, first, errOut)
	}

	// 1,000 copies of one snapshot, and one file named twice.
	one, _, _ := run(t, "inventory", "--snapshot", "example:seed000-epyc", "-o", "json")
	copies := filepath.Join(dir, "copies")
	os.Mkdir(copies, 0o755)
	for i := range 1000 {
		os.WriteFile(filepath.Join(copies, fmt.Sprintf("n%04d.json", i)), []byte(one), 0o644)
	}
	out, _, _ = run(t, "report", copies)
	if n := strings.Count(out, "given 1000 times"); n != 1 || !strings.Contains(out, "epyc-lab: the same snapshot given 1000 times") {
		t.Errorf("1,000 copies: named %d times, want once naming 1000\n%s", n, out)
	}
	file := filepath.Join(copies, "n0000.json")
	out, _, _ = run(t, "report", file, file, filepath.Join(dir, "copies", ".", "n0000.json"))
	if !strings.Contains(out, "n0000.json: given 3 times; read once") {
		t.Errorf("one file named three times is not named:\n%s", out)
	}
	out, _, _ = run(t, "doctor", "--snapshot", file, "--snapshot", file)
	if strings.Count(out, "input.duplicate") != 1 || !strings.Contains(out, "given 2 times") {
		t.Errorf("doctor on one snapshot twice:\n%s", out)
	}
}

// Every numeric flag of every command has a range, and a value outside it
// or one that does not parse is one line naming the flag, the value and
// the range.
func TestNumericFlagsValidated(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "int", "float64", "duration", "intSlice", "uint", "int64":
				if _, ok := rangeOf(c, f.Name); !ok {
					t.Errorf("%s --%s: no range in flagRanges", c.CommandPath(), f.Name)
				}
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nccl", "judge", "x.log", "--rails", "-1"}, "--rails -1: want a whole number from 1 to 64 (NICs per node)"},
		{[]string{"nccl", "run", "--cluster", "c.yaml", "--gpus-per-node", "0"}, "--gpus-per-node 0: want a whole number from 1 to 64"},
		{[]string{"nccl", "run", "--cluster", "c.yaml", "--nodes", "2,1"}, "--nodes 1: want a whole number from 2 to 100000 (nodes per run)"},
		{[]string{"design", "fabric", "--hosts", "0", "--rate", "200"}, "--hosts 0: want a whole number from 1 to 1000000 (fabric endpoints)"}, // the old spelling keeps the range,
		{[]string{"plan", "vms", "--snapshot", "example:hgx-h200", "--vms", "99999999999999999999"}, `--vms "99999999999999999999": want a whole number from 1 to 4096 (VMs)`},
		{[]string{"exporter", "--findings.interval", "-1s"}, "--findings.interval -1s: want 0s to 24h0m0s (0 turns findings off)"},
		{[]string{"exporter", "--scrape-timeout", "0"}, "--scrape-timeout 0s: want 100ms to 10m0s"},
		{[]string{"bench", "--seconds", "x"}, `--seconds "x": want a whole number from 1 to 3600`},
	} {
		_, errOut, code := run(t, c.args...)
		if code != ExitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "strconv") {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// goTypeRE finds a Go type or struct path in a message.
var goTypeRE = regexp.MustCompile(`Go struct|\b(host|fabric|cluster|web)\.[A-Z]`)

// Type errors in snapshots, cluster files and topology files name the
// file, the line and the field in the document's own words, never a Go
// type.
func TestTypeErrorsInDocumentWords(t *testing.T) {
	dir := t.TempDir()
	one, _, _ := run(t, "inventory", "--snapshot", "example:seed000-epyc", "-o", "json")
	lines := strings.Split(one, "\n")
	rateLine := 0
	for i, l := range lines {
		if strings.Contains(l, `"rate": {`) {
			lines[i], rateLine = strings.Replace(l, `"rate": {`, `"rate": 5, "x": {`, 1), i+1
			break
		}
	}
	snap := filepath.Join(dir, "snap.json")
	os.WriteFile(snap, []byte(strings.Join(lines, "\n")), 0o644)
	topo := filepath.Join(dir, "topo.yaml")
	os.WriteFile(topo, []byte("links:\n  - {a: {node: x, port: 1}, b: {node: y, port: 1}}\n  - {a: 5, b: {node: z, port: 1}}\n"), 0o644)
	clusterFile := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(clusterFile, []byte("nodes:\n  - {name: n1, data: 10.0.0.1}\n  - {name: n2, data: 10.0.0.2}\nlink: [1]\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inventory", "--snapshot", snap}, fmt.Sprintf("snap.json: not a snapshot: line %d: rdma_devices.ports.rate wants an object {…}, got a number", rateLine)},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", topo}, "topo.yaml: line 3: field links.a: got a number, want an end {node: NAME, port: N}"},
		{[]string{"bench", "--cluster", clusterFile}, "cluster.yaml:4: field \"link\" wants a mapping"},
	} {
		_, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || goTypeRE.MatchString(errOut) {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// A --root whose sys/ is made of symlink loops is refused, not read as an
// empty host that every rule passes.
func TestRootOfSymlinkLoopsRefused(t *testing.T) {
	root := t.TempDir()
	sys := filepath.Join(root, "sys")
	os.Mkdir(sys, 0o755)
	for _, l := range []string{"class", "devices", "bus"} {
		os.Symlink(l, filepath.Join(sys, l)) // each one a loop
	}
	for _, args := range [][]string{{"inventory", "--root", root}, {"doctor", "--root", root}, {"exporter", "--root", root, "--listen", "127.0.0.1:0"}} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, "nothing under sys/ can be read (3 entries, all symlink loops or dangling links)") {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

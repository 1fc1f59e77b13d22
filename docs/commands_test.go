// Package docs holds no code: its tests keep README.md and docs/*.md true.
// Every shell block is rendered as CommonMark does (an unclosed fence turns
// the prose after it into code) and every command in it is run, in document
// order, against the built-in examples and the shared captures, with its exit
// code asserted. A command that cannot run on this machine is listed in skip
// with the reason, so it is skipped knowingly, never silently.
package docs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

// skip names the commands that cannot run here, and why. Keys are the
// command as written, without its trailing comment.
var skip = map[string]string{
	"./scripts/test": "this suite itself",
	"go install github.com/rdmalab/rdmalab/cmd/rdmalab@latest": "fetches from the forge (internal/buildinfo installs MODULE@COMMIT from this checkout)",
	"make install":        "installs into /usr/local (internal/buildinfo runs make release)",
	"rdmalab fabric scan": "live fabric: needs an InfiniBand HCA (internal/fabriccheck runs it on ibsim)",
	"rdmalab fabric scan -o json > fabric.json":                                                     "live fabric (the fixture fabric.json stands in for its output)",
	`rdmalab fabric check --expect-rate "4X HDR"`:                                                   "live fabric (internal/fabriccheck runs it on ibsim)",
	"rdmalab fabric check --topology ibnetdiscover-at-install.txt --interval 30s":                   "live fabric, runs until stopped",
	`ssh node017 ibstat | rdmalab judge --expect-rate 200 --expect-link-layer IB -`:                 "needs a node017 to ssh to",
	"salloc -N 8 rdmalab bench --engine tcp":                                                        "needs a Slurm allocation (internal/slurm runs it on a real one-machine cluster)",
	"sudo bench/tcp-vs-iperf3.sh":                                                                   "a benchmark (minutes), not a test",
	"rdmalab exporter --listen :9879 --expect-rate 400":                                             "a server that runs until stopped (internal/exporter serves and stops it)",
	"rdmalab exporter --web.config.file web.yml":                                                    "a server that runs until stopped",
	"rdmalab exporter --collector.fabric --textfile /var/lib/prometheus/node-exporter/rdmalab.prom": "live fabric",
	"rdmalab exporter": "a server that runs until stopped",
	"rdmalab exporter --listen 127.0.0.1:9879 --expect-rate 400 --findings.interval 60s": "a server that runs until stopped",
	"rdmalab exporter --web.config.file /etc/rdmalab/web.yml":                            "a server that runs until stopped",
	"rdmalab exporter --root ./captured-host":                                            "a server that runs until stopped",
	"rdmalab exporter --collector.fabric --fabric.interval 5m":                           "a server and a live fabric",
	"rdmalab compare before.jsonl after.jsonl":                                           "compares the two bench runs shown above it, which need a cluster",
	"rdmalab bench schedule --output json --rounds cover.txt --rounds-format clusterkit": "live fabric",
	"chromium-headless-shell --headless --no-sandbox --disable-gpu --user-data-dir=$(mktemp -d) --window-size=1000,2000 --screenshot=docs/report.png file://$PWD/report.html": "rewrites the committed screenshot",
}

// needsCluster marks commands that measure a cluster file's nodes: they
// run in internal/bench's and internal/nccl's namespace tests, with real
// sshd, not here.
var needsCluster = regexp.MustCompile(`--cluster \S+\.yaml`)

// exit lists commands whose expected exit code is not 0: they report
// findings (1) on the examples they read, or on this machine (a host with
// no RDMA device, told RDMA is expected).
var exit = map[string]int{
	// Unproven (exit 3): the run could not answer its question.
	"rdmalab doctor": 3, // this machine has no RDMA device: whether its ports are up cannot be told
	`rdmalab nccl judge all_reduce.log --expect-rate "4X NDR" --rails 8 --algo Ring`:                                               3, // one node: the network never carried it
	`rdmalab nccl judge nccl-runs-*/all_reduce-2n.log --expect-rate "4X NDR" --rails 8 --algo Ring`:                                3,
	"rdmalab plan check vm00.xml vm01.xml":                                                                                         1, // this machine holds none of seed 000's devices
	"rdmalab compare internal/compare/testdata/seed000-optimised.jsonl internal/compare/testdata/seed000-wrong-numa.jsonl -o json": 1,
	"rdmalab compare internal/compare/testdata/seed000-optimised.jsonl internal/compare/testdata/seed000-contention.jsonl":         1,
	`rdmalab doctor --expect-rate "4X HDR" --expect-link-layer IB`:                                                                 1,
	"rdmalab doctor --expect-ports mlx5_0/1,mlx5_1/1":                                                                              1,
	"rdmalab doctor --nhc":                                                                            1,
	"rdmalab plan vms --vms 8 --memory 200G --dir lab/":                                               1,
	"rdmalab fabric check --fabric example:qdr-lab":                                                   1,
	"rdmalab fabric check --fabric example:qdr-lab -o json":                                           1,
	`rdmalab judge --expect-rate "4X EDR" ibnetdiscover.txt ibqueryerrors.txt`:                        1,
	"rdmalab report --html report.html example:qdr-lab internal/report/testdata/bench-tcp-loopback":   1,
	"./rdmalab report --html report.html example:qdr-lab internal/report/testdata/bench-tcp-loopback": 1,
	"rdmalab report --html cluster.html doctor.json fabric-check.json run1.jsonl":                     1,
	"rdmalab report example:hgx-h200 example:qdr-lab":                                                 1,
}

// fixtures are the files the documents' commands name, made from the
// built-in examples and the shared captures before the first command runs.
func fixtures(t *testing.T, dir, rdmalab string) {
	t.Helper()
	shared := testhost.SharedTestdata(t)
	link := func(name, target string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, args ...string) {
		out, err := exec.Command(rdmalab, args...).Output()
		if err != nil && len(out) == 0 {
			t.Fatalf("fixture %s: rdmalab %s: %v", name, strings.Join(args, " "), err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	caps := testhost.Captures(t)
	link("some/captured/tree", caps["32em64t-2n8c+dax+nvme+mic+dimms"].Root)
	link("sys-class-infiniband", caps["sys-class-infiniband-h100.0"].Root)
	link("captured-host", caps["32em64t-2n8c+dax+nvme+mic+dimms"].Root)
	link("machine.tar.bz2", filepath.Join(shared, "sysfs/hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"))
	for _, n := range []string{"n1.json", "node1.json", "n2.json", "node2.json"} {
		write(n, "inventory", "--snapshot", "example:hgx-h200", "-o", "json")
	}
	link("ibnetdiscover.txt", filepath.Join(shared, "ibnetdiscover/superbench_topo_aware_ibnetdiscover_FAKED.txt"))
	link("ibnetdiscover-at-install.txt", filepath.Join(shared, "ibnetdiscover/superbench_topo_aware_ibnetdiscover_FAKED.txt"))
	link("ibqueryerrors.txt", filepath.Join(shared, "ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt"))
	link("ibstat.txt", filepath.Join(shared, "ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt"))
	link("all_reduce.log", filepath.Join(shared, "nccl-tests/superbench/nccl_allreduce.log"))
	link("fabric.json", filepath.Join(dir, "internal/route/testdata/fattree-2x4x4.fabric.json"))
	link("opensm-lfts.dump", filepath.Join(dir, "internal/route/testdata/fattree-2x4x4-updn.opensm-lfts.dump"))
	link("lfts.txt", filepath.Join(dir, "internal/route/testdata/fattree-2x4x4-updn.opensm-lfts.dump"))
	write("doctor.json", "doctor", "--snapshot", "example:hgx-h200", "-o", "json")
	write("fabric-check.json", "fabric", "check", "--snapshot", "example:qdr-lab", "-o", "json")
	link("run1.jsonl", filepath.Join(dir, "internal/report/testdata/bench-tcp-loopback/bw.jsonl"))
	if err := os.MkdirAll(filepath.Join(dir, "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("snapshots/hgx.json", "inventory", "--snapshot", "example:hgx-h200", "-o", "json")
	link("vm00.xml", filepath.Join(dir, "internal/plan/testdata/seed000/vm00.xml"))
	link("vm01.xml", filepath.Join(dir, "internal/plan/testdata/seed000/vm01.xml"))
	link("nccl-runs-1/all_reduce-2n.log", filepath.Join(shared, "nccl-tests/superbench/nccl_allreduce.log"))
}

// A command as the documents show it.
type command struct {
	file string
	line int
	text string // as written, continuation lines joined
	key  string // without its trailing comment, spaces folded
	// script is set for the lines of a block that shows a script file
	// (it starts with #!): its lines are the file's text, not commands to type.
	script bool
}

var fence = regexp.MustCompile("^ {0,3}(```+|~~~+)\\s*([^`\\s]*)")

// blocks returns a document's shell commands, and an error for a fence that
// is never closed (or that a new opener shows was left open).
func commands(path string) ([]command, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var (
		out       []command
		open      string // the open fence's marker, "" outside
		lang      string
		openLine  int
		block     []string
		blockLine []int
	)
	flush := func() {
		dollar := false
		for _, l := range block {
			if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
				dollar = true
			}
		}
		script := len(block) > 0 && strings.HasPrefix(strings.TrimSpace(block[0]), "#!")
		for i := 0; i < len(block); i++ {
			l, n := block[i], blockLine[i]
			trimmed := strings.TrimSpace(l)
			if dollar {
				if !strings.HasPrefix(trimmed, "$ ") {
					continue
				}
				trimmed = strings.TrimPrefix(trimmed, "$ ")
			}
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			for strings.HasSuffix(trimmed, `\`) && i+1 < len(block) {
				i++
				trimmed = strings.TrimSuffix(trimmed, `\`) + " " + strings.TrimSpace(block[i])
			}
			out = append(out, command{file: filepath.Base(path), line: n, text: trimmed, key: keyOf(trimmed), script: script})
		}
		block, blockLine = nil, nil
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		m := fence.FindStringSubmatch(l)
		switch {
		case open == "" && m != nil:
			open, lang, openLine = m[1], m[2], n
		case open != "" && m != nil && m[2] == "" && strings.HasPrefix(m[1], open[:1]) && len(m[1]) >= len(open) && strings.TrimSpace(l) == m[1]:
			if lang == "sh" || lang == "bash" || lang == "shell" || lang == "console" {
				flush()
			}
			block, blockLine, open = nil, nil, ""
		case open != "" && m != nil && m[2] != "":
			return nil, fmt.Errorf("%s:%d: a fence opens (%q) inside the code block opened at line %d: that block is never closed", path, n, strings.TrimSpace(l), openLine)
		case open != "":
			block, blockLine = append(block, l), append(blockLine, n)
		}
	}
	if open != "" {
		return nil, fmt.Errorf("%s:%d: code block never closed", path, openLine)
	}
	return out, nil
}

var trailingComment = regexp.MustCompile(`\s+#\s.*$`)

func keyOf(s string) string {
	if !strings.Contains(s, `"`) || !strings.Contains(s[strings.LastIndex(s, `"`):], " #") {
		s = trailingComment.ReplaceAllString(s, "")
	} else {
		s = s[:strings.LastIndex(s, `"`)+1] + trailingComment.ReplaceAllString(s[strings.LastIndex(s, `"`)+1:], "")
	}
	return strings.Join(strings.Fields(s), " ")
}

func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(docs)
	return append([]string{"../README.md"}, docs...)
}

// Every fence in README.md and docs/*.md is closed, so GitHub shows prose as
// prose.
func TestFencesClosed(t *testing.T) {
	for _, d := range documents(t) {
		if _, err := commands(d); err != nil {
			t.Error(err)
		}
	}
}

// Every command the documents show runs here with the exit code it should
// have, or is skipped for a stated reason.
func TestDocumentedCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command")
	}
	rdmalab := testhost.Rdmalab(t)
	module, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// A work directory that looks like the checkout (every top-level entry
	// linked) with shared/ beside it, so commands write their files there
	// and never into the repository.
	base := t.TempDir()
	work := filepath.Join(base, "rdmalab")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(module)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(module, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(module, "..", "shared"), filepath.Join(base, "shared")); err != nil {
		t.Fatal(err)
	}
	fixtures(t, work, rdmalab)
	bin := filepath.Join(base, "bin")
	os.Mkdir(bin, 0o755)
	if err := os.Symlink(rdmalab, filepath.Join(bin, "rdmalab")); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	ran := 0
	for _, d := range documents(t) {
		cmds, err := commands(d)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, c := range cmds {
			where := fmt.Sprintf("%s:%d", c.file, c.line)
			if why, ok := skip[c.key]; ok {
				used[c.key] = true
				t.Logf("%s: skipped (%s): %s", where, why, c.key)
				continue
			}
			if c.script {
				t.Logf("%s: skipped (a line of a script file the document shows): %s", where, c.key)
				continue
			}
			if needsCluster.MatchString(c.key) {
				t.Logf("%s: skipped (measures a cluster's nodes; the namespace tests run it): %s", where, c.key)
				continue
			}
			// "..." stands for more of the same arguments.
			text := strings.ReplaceAll(c.text, " ... ", " ")
			text = strings.TrimSuffix(text, " ...")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", text)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "COLUMNS=80")
			out, err := cmd.CombinedOutput()
			cancel()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code < 0 {
				t.Errorf("%s: %s: %v", where, c.key, err)
				continue
			}
			want := exit[c.key]
			used[c.key] = true
			ran++
			if code != want {
				t.Errorf("%s: %s: exit %d, want %d\n%s", where, c.key, code, want, tail(out))
			}
			// Every line fits the 80 columns COLUMNS gives (JSON, files
			// and other tools' output aside).
			if wide := wideLines(c.text, out, 80); len(wide) > 0 {
				t.Errorf("%s: %s: %d line(s) wider than 80 columns, the first: %q", where, c.key, len(wide), wide[0])
			}
		}
	}
	for k := range skip {
		if !used[k] {
			t.Errorf("skip names %q, which no document shows any more", k)
		}
	}
	for k := range exit {
		if !used[k] {
			t.Errorf("exit names %q, which no document shows any more", k)
		}
	}
	t.Logf("ran %d documented commands", ran)
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// wideLines returns the lines of an rdmalab command's output wider than
// width; outputs that are data (JSON, YAML, files, other tools) are not
// for the terminal and are not measured.
func wideLines(text string, out []byte, width int) []string {
	if !strings.Contains(text, "rdmalab ") || strings.Contains(text, "json") || strings.Contains(text, ">") ||
		strings.Contains(text, "|") || strings.Contains(text, "chromium") || strings.Contains(text, "promtool") ||
		strings.Contains(text, "release-files") || strings.Contains(text, "source ") ||
		strings.Contains(text, "--nhc") || // NHC reads one line per failure, whatever its length
		strings.Contains(text, "nccl env") { // a file for the shell: an export is one line
		return nil
	}
	var wide []string
	for _, l := range strings.Split(string(out), "\n") {
		if utf8.RuneCountInString(l) > width {
			wide = append(wide, l)
		}
	}
	return wide
}

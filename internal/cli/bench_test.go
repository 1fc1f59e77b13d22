package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The mistakes people make with bench: each is exit 2 with one line that
// names the flag or file, before any work, and no byte of their files changes.
func TestBenchRefusesMistakes(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	clusterText := "nodes:\n  - {name: a, data: 127.0.0.1}\n  - {name: b, data: 127.0.0.2}\nlauncher: {type: local}\n"
	os.WriteFile(cluster, []byte(clusterText), 0o644)
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte(strings.Replace(clusterText, "127.0.0.2", "127.0.0.3", 1)), 0o644)
	results := filepath.Join(dir, "results.jsonl")
	log := `{"format":"rdmalab-bench-results","version":2,"cluster":"0000000000000000","nodes":2,"created":"2026-01-01T00:00:00Z"}` + "\n" +
		`{"from":"a","to":"b","engine":"tcp","test":"bw","started":"2026-01-01T00:00:00Z","seconds":1,"gbps":9}` + "\n"
	os.WriteFile(results, []byte(log), 0o644)
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("precious\n"), 0o644)
	base := []string{"bench", "--cluster", cluster, "--engine", "tcp"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "0s"}, "--timeout 0s: must be positive"},
		{[]string{"--timeout", "-5s"}, "--timeout -5s: must be positive"},
		{[]string{"--seconds", "0"}, "--seconds 0: must be positive"},
		{[]string{"--seconds", "-5"}, "--seconds -5: must be positive"},
		{[]string{"--engine", "perftest", "--test", "bogus"}, `--test "bogus" is not a perftest test`},
		{[]string{"--rate", "fast"}, "--expect-rate"},
		{[]string{"--results", cluster, "--overwrite"}, "it is the cluster file"},
		{[]string{"--results", notes, "--overwrite"}, "not an rdmalab bench results log"},
		{[]string{"--results", results}, "--resume continues it, --overwrite replaces it"},
		{[]string{"--results", results, "--resume"}, "measured on another cluster"},
		{[]string{"--cluster", other, "--results", results, "--resume"}, "measured on another cluster"},
	} {
		_, errOut, code := run(t, append(base, c.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
	for path, want := range map[string]string{cluster: clusterText, results: log, notes: "precious\n"} {
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("%s changed", path)
		}
	}
	_, errOut, code := run(t, "bench", "--cluster", filepath.Join(dir, "nope.yaml"))
	if code != ExitUsage || !strings.Contains(errOut, "nope.yaml") {
		t.Errorf("missing cluster file: %d %q", code, errOut)
	}
}

// bench --dry-run plans, prints and exits 0 without touching a node or the
// results log; -o json is a bench-plan document.
func TestBenchDryRun(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	var b strings.Builder
	b.WriteString("launcher: {type: ssh}\nnodes:\n")
	for i := range 40 {
		b.WriteString("  - {name: n" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ", ssh: root@192.0.2.1, data: 192.0.2.1}\n")
	}
	os.WriteFile(cluster, []byte(b.String()), 0o644)
	results := filepath.Join(dir, "results.jsonl")
	out, errOut, code := run(t, "bench", "--cluster", cluster, "--engine", "tcp", "--results", results, "--dry-run")
	if code != 0 || !strings.Contains(out, "matching (this run)  3") || !strings.Contains(out, "circle") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Errorf("a dry run touched the results log: %v", err)
	}
	out, _, code = run(t, "bench", "--cluster", cluster, "--engine", "tcp", "--dry-run", "-o", "json")
	if code != 0 || !strings.Contains(out, `"kind": "bench-plan"`) || !strings.Contains(out, `"pairs_per_round": 20`) {
		t.Errorf("exit %d\n%s", code, out)
	}
}

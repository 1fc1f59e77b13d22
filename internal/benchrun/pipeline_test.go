package benchrun

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The whole pipeline on loopback addresses with the real binary: kill the
// run after its first round, resume, and every pair is measured exactly once.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary (not under the race detector)")
	}
	dir := testhost.TempDir(t)
	bin := testhost.Rdmalab(t)
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte(`nodes:
  - {name: n1, data: 127.0.0.1}
  - {name: n2, data: 127.0.0.2}
  - {name: n3, data: 127.0.0.3}
  - {name: n4, data: 127.0.0.4}
  - {name: n5, data: 127.0.0.5}
  - {name: n6, data: 127.0.0.6}
link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher: {type: local, rdmalab: `+bin+`, base_port: 23400}
`), 0o644)
	results := filepath.Join(dir, "results.jsonl")
	args := []string{"bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "1", "--samples", "1", "--timeout", "30s", "--results", results, "--no-retest"}
	if code := interruptAt(t, "round 2/", bin, args...); code != 130 {
		t.Errorf("interrupted run exit %d, want 130", code)
	}
	first := readLog(t, results)
	if len(first) < 6 || len(first) >= 30 {
		t.Fatalf("after the interrupt: %d directions, want round 1's 6 and not all 30", len(first))
	}
	// Unshaped loopback on a shared machine is noise, and it beats the
	// declared 1 Gb/s: the verdicts may fail (exit 1) or overrule the rate
	// (unproven, exit 3); this test is about the log, not the verdicts.
	resume := exec.Command(bin, append(args, "--resume", "--output", "json")...)
	var progress strings.Builder
	resume.Stderr = &progress
	doc, err := resume.Output()
	if code := exitCode(err); code != 0 && code != 1 && code != 3 {
		t.Fatalf("resume: %v\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "already measured") {
		t.Errorf("resume did not skip anything:\n%s", progress.String())
	}
	payload, err := envelope.Payload(doc, envelope.Bench)
	var rep bench.Report
	if err != nil || json.Unmarshal(payload, &rep) != nil || len(rep.Directions) != 30 {
		t.Errorf("--output json: %v, %d directions\n%s", err, len(rep.Directions), doc)
	}
	seen := map[string]int{}
	for _, r := range readLog(t, results) {
		seen[r.DirKey()]++
		if r.Failed() || r.Gbps <= 0 {
			t.Errorf("%s → %s: %+v", r.From, r.To, r)
		}
	}
	if len(seen) != 30 {
		t.Errorf("%d distinct directions, want 30", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s measured %d times", k, n)
		}
	}
	// Without --resume or --overwrite the results are never truncated.
	before, _ := os.ReadFile(results)
	out, err := exec.Command(bin, args...).CombinedOutput()
	after, _ := os.ReadFile(results)
	if exitCode(err) != 2 || !strings.Contains(string(out), "--resume continues it, --overwrite replaces it") || string(before) != string(after) {
		t.Errorf("a second run without --resume: exit %d\n%s", exitCode(err), out)
	}
}

func readLog(t *testing.T, path string) []bench.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _, err := bench.Results.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// interruptAt runs rdmalab and sends it ^C when a progress line starts with prefix.
func interruptAt(t *testing.T, prefix, bin string, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			cmd.Process.Signal(os.Interrupt)
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return exitCode(cmd.Wait())
}

// TestOlderRdmalabOnTheNodes: the nodes' rdmalab is an older build (a
// stand-in: the real binary, except that it knows no 'bench agent
// session', as before the agent existed). bench stops before measuring,
// exit 2, naming each node, the binary and the way out; with
// --agent=false the same nodes are measured (a process per sample).
func TestOlderRdmalabOnTheNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary (not under the race detector)")
	}
	dir := testhost.TempDir(t)
	bin := testhost.Rdmalab(t)
	old := filepath.Join(dir, "old-rdmalab")
	os.WriteFile(old, []byte(`#!/bin/sh
if [ "$1 $2 $3" = "bench agent session" ]; then
  echo 'Error: unknown command "session" for "rdmalab bench agent"' >&2
  echo "Run 'rdmalab bench agent --help' for usage." >&2
  exit 1
fi
exec `+bin+` "$@"
`), 0o755)
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte(`nodes:
  - {name: n1, data: 127.0.0.1}
  - {name: n2, data: 127.0.0.2}
link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher: {type: local, rdmalab: `+old+`, base_port: 23450}
`), 0o644)
	args := []string{"bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "1", "--samples", "1", "--timeout", "30s", "--no-retest"}
	cmd := exec.Command(bin, append(args, "--results", filepath.Join(dir, "a.jsonl"))...)
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
	for _, n := range []string{"n1", "n2"} {
		if !strings.Contains(string(out), n+": its rdmalab ("+old+") did not run 'bench agent session'") || !strings.Contains(string(out), "--agent=false") {
			t.Errorf("%s not named as running an older rdmalab:\n%s", n, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a.jsonl")); err == nil {
		if recs := readLog(t, filepath.Join(dir, "a.jsonl")); len(recs) > 0 {
			t.Errorf("%d directions measured before the nodes were ready", len(recs))
		}
	}
	cmd = exec.Command(bin, append(args, "--results", filepath.Join(dir, "b.jsonl"), "--agent=false")...)
	out, err = cmd.CombinedOutput()
	if code := exitCode(err); code == 2 || len(readLog(t, filepath.Join(dir, "b.jsonl"))) != 2 {
		t.Fatalf("--agent=false: exit %d:\n%s", code, out)
	}
}

// TestPortInUseIsNotTheLink: another program listens on the port a sample
// was given (another run on the same nodes, a service). The sample is taken
// on the next fresh port and nothing fails; when three ports in a row are
// taken, the direction's error says so and names launcher.base_port, not a
// link fault in other words.
func TestPortInUseIsNotTheLink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary (not under the race detector)")
	}
	dir := testhost.TempDir(t)
	bin := testhost.Rdmalab(t)
	const base = 23470
	cluster := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cluster, []byte(`nodes:
  - {name: n1, data: 127.0.0.1}
  - {name: n2, data: 127.0.0.2}
link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher: {type: local, rdmalab: `+bin+`, base_port: `+strconv.Itoa(base)+`}
`), 0o644)
	hold := func(ports ...int) func() {
		var ls []net.Listener
		for _, p := range ports {
			for _, a := range []string{"127.0.0.1", "127.0.0.2"} {
				l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(p)))
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, l)
			}
		}
		return func() {
			for _, l := range ls {
				l.Close()
			}
		}
	}
	run := func(name string, extra ...string) (string, []bench.Record) {
		results := filepath.Join(dir, name+".jsonl")
		out, _ := exec.Command(bin, append([]string{"bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "1", "--samples", "1",
			"--timeout", "30s", "--no-retest", "--results", results}, extra...)...).CombinedOutput()
		return string(out), readLog(t, results)
	}
	// the first sample's port (the run's ports start at base+2) is held
	release := hold(base + 2)
	out, recs := run("one")
	release()
	if len(recs) != 2 || slices.ContainsFunc(recs, func(r bench.Record) bool { return r.Failed() }) || !strings.Contains(out, "port in use, taking the sample on the next port") {
		t.Errorf("one port held: %+v\n%s", recs, out)
	}
	// three in a row: the first sample fails, saying why
	release = hold(base+2, base+3, base+4)
	defer release()
	out, recs = run("three")
	i := slices.IndexFunc(recs, func(r bench.Record) bool { return r.Failed() })
	if i < 0 || !strings.Contains(recs[i].Error, "address already in use") || !strings.Contains(recs[i].Error, "3 fresh ports in a row were in use") ||
		!strings.Contains(recs[i].Error, fmt.Sprintf("launcher.base_port %d", base)) {
		t.Errorf("three ports held: %+v\n%s", recs, out)
	}
}

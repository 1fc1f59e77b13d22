package buildinfo

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// head is the commit the checkout is at, or the test is skipped (a source
// tree without git has no commit to name).
func head(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func need(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s not installed", tool)
		}
		t.Skipf("%s not installed", tool)
	}
}

// make release gives a static binary that names its commit, a man page per
// command and completions a shell parses.
func TestReleaseTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release")
	}
	need(t, "make")
	commit := head(t)
	dist := t.TempDir()
	cmd := exec.Command("make", "-s", "-C", "../..", "release", "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	bin := filepath.Join(dist, "rdmalab")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked", bin)
		}
	}
	f.Close()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), "commit "+commit) {
		t.Errorf("--version: %q (%v), want it to name commit %s", out, err, commit)
	}
	for _, p := range []string{"man/man1/rdmalab.1", "man/man1/rdmalab-doctor.1", "man/man1/rdmalab-fabric-check.1", "systemd/rdmalab-exporter.service", "prometheus/rdmalab-alerts.yml"} {
		if st, err := os.Stat(filepath.Join(dist, p)); err != nil || st.Size() == 0 {
			t.Errorf("release lacks %s: %v", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dist, "man/man1/rdmalab-doctor.1")); err != nil || !strings.Contains(string(b), "Exit codes") {
		t.Errorf("doctor's man page does not carry its help: %v", err)
	}
	if out, err := exec.Command("bash", "-n", filepath.Join(dist, "completions/rdmalab.bash")).CombinedOutput(); err != nil {
		t.Errorf("bash completion does not parse: %v\n%s", err, out)
	}
	// Values complete: example hosts for --snapshot.
	if out, err := exec.Command(bin, "__complete", "doctor", "--snapshot", "").Output(); err != nil || !strings.Contains(string(out), "example:hgx-h200") {
		t.Errorf("completing doctor --snapshot: %q %v", out, err)
	}
}

// go install MODULE@COMMIT gives a binary whose --version names that
// commit. The module's public path is served by this checkout (git's
// insteadOf), so the real go command resolves, fetches and builds it as a
// user's would from the forge.
func TestGoInstallAtCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rdmalab from a clone")
	}
	commit := head(t)
	if out, _ := exec.Command("git", "-C", "../..", "status", "--porcelain", "--untracked-files=no").Output(); len(out) > 0 {
		t.Logf("the checkout has uncommitted changes: installing %s as committed", commit[:12])
	}
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	gitconfig := "[url \"file://" + top + "\"]\n\tinsteadOf = https://github.com/rdmalab/rdmalab\n[safe]\n\tdirectory = *\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		out, _ := exec.Command("go", "env", k).Output()
		return strings.TrimSpace(string(out))
	}
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/rdmalab/rdmalab/cmd/rdmalab@"+commit)
	cmd.Env = append(os.Environ(), "HOME="+home, "GOBIN="+gobin, "GOPRIVATE=github.com/rdmalab", "GOFLAGS=",
		"GOMODCACHE="+env("GOMODCACHE"), "GOCACHE="+env("GOCACHE"), "GOPATH="+env("GOPATH"), "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install …@%s: %v\n%s", commit, err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "rdmalab"), "--version").Output()
	if err != nil || !strings.Contains(string(out), commit[:12]) {
		t.Errorf("--version of the installed binary: %q (%v), want it to name %s", out, err, commit[:12])
	}
}

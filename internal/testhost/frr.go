package testhost

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FRR daemons as Debian's frr package installs them.
const (
	FRRZebra = "/usr/lib/frr/zebra"
	FRRBGPd  = "/usr/lib/frr/bgpd"
)

// RequireFRR skips (locally) or fails (in CI) a test that needs FRR's
// daemons and vtysh.
func RequireFRR(t testing.TB) {
	t.Helper()
	RequireTool(t, "vtysh")
	for _, d := range []string{FRRZebra, FRRBGPd} {
		if _, err := os.Stat(d); err != nil {
			if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
				t.Fatalf("%s missing (Debian frr)", d)
			}
			t.Skipf("%s not installed (Debian frr)", d)
		}
	}
}

// FRRRouter is zebra and bgpd running in one network namespace, with their
// own pid files, zserv socket and vty sockets in Dir (owned by the frr
// user, as the daemons drop to it).
type FRRRouter struct {
	NS      string
	Dir     string
	t       testing.TB
	stopped bool
}

// StartFRR runs zebra and bgpd in namespace ns on config (the text of an
// frr.conf) and stops both by the PIDs in their pid files when the test
// ends (register it before the namespace's own cleanup so it runs first).
// Recipe: ../shared/docs/FRR-NETNS.md.
func StartFRR(t testing.TB, ns, config string) *FRRRouter {
	t.Helper()
	fu, err := user.Lookup("frr")
	if err != nil {
		t.Fatalf("the frr user: %v", err)
	}
	uid, _ := strconv.Atoi(fu.Uid)
	gid, _ := strconv.Atoi(fu.Gid)
	dir, err := os.MkdirTemp("", "rdmalab-frr-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "frr.conf")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, conf} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	r := &FRRRouter{NS: ns, Dir: dir, t: t}
	t.Cleanup(r.stop)
	for _, d := range []struct{ bin, name string }{{FRRZebra, "zebra"}, {FRRBGPd, "bgpd"}} {
		// -d forks: the daemon's PID is in its pid file. No -p 0 for bgpd:
		// that turns listening off and sessions stay Active.
		cmd := exec.Command("ip", "netns", "exec", ns, d.bin, "-d", "-N", ns,
			"-i", filepath.Join(dir, d.name+".pid"), "-z", filepath.Join(dir, "zserv.api"),
			"--vty_socket", dir, "-f", conf)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s in %s: %v\n%s", d.name, ns, err, out)
		}
		if d.name == "zebra" {
			r.waitFile(filepath.Join(dir, "zserv.api"), 10*time.Second)
		}
	}
	return r
}

func (r *FRRRouter) waitFile(path string, d time.Duration) {
	r.t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s did not appear within %s", path, d)
		}
	}
}

// Vtysh runs one vtysh command against this router.
func (r *FRRRouter) Vtysh(command string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", r.NS, "vtysh", "--vty_socket", r.Dir, "-c", command).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("vtysh -c %q in %s: %w: %s", command, r.NS, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// StopFRR stops routers together: SIGTERM to every daemon by the PID in
// its pid file, then (bounded) SIGKILL to any still running. Each router's
// cleanup does the same for itself; stopping them all at once saves the
// seconds bgpd takes to say goodbye, once per router.
func StopFRR(routers ...*FRRRouter) {
	var pids []int
	for _, r := range routers {
		if r.stopped {
			continue
		}
		r.stopped = true
		for _, name := range []string{"bgpd", "zebra"} {
			b, err := os.ReadFile(filepath.Join(r.Dir, name+".pid"))
			if err != nil {
				continue
			}
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				pids = append(pids, pid)
				syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, r := range routers {
		os.RemoveAll(r.Dir)
	}
}

func (r *FRRRouter) stop() { StopFRR(r) }

// NetNS is a network namespace a test made, deleted when the test ends
// (after whatever was registered later, such as routers in it, has
// stopped).
func NetNS(t *testing.T, name string) string {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s (left by a killed run? remove it with 'ip netns del %s')", name, err, strings.TrimSpace(string(out)), name)
	}
	t.Cleanup(func() {
		// anything still running in it is the test's
		if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
			for _, pid := range strings.Fields(string(out)) {
				if p, err := strconv.Atoi(pid); err == nil && p > 1 {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		exec.Command("ip", "netns", "del", name).Run()
	})
	IP(t, "-n", name, "link", "set", "lo", "up")
	return name
}

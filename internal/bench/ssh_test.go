package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// netCluster is hosts the test made: network namespaces on a bridge, each
// with its own sshd and host key, reachable only from this machine.
type netCluster struct {
	t     *testing.T
	dir   string
	ns    []string
	addrs []string
	veths []string // root-side peers
	br    string
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func startNetCluster(t *testing.T, n int) *netCluster {
	t.Helper()
	for _, tool := range []string{"ip", "tc", "ssh", "ssh-keygen", "sshd"} {
		testhost.RequireTool(t, tool)
	}
	if os.Geteuid() != 0 {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatal("network namespaces need root")
		}
		t.Skip("network namespaces need root")
	}
	id := fmt.Sprintf("rdl%d", os.Getpid()%100000)
	c := &netCluster{t: t, dir: testhost.TempDir(t), br: id + "br"}
	t.Cleanup(c.stop)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation dir
		t.Fatal(err)
	}
	ip(t, "link", "add", c.br, "type", "bridge")
	ip(t, "addr", "add", "10.213.0.254/24", "dev", c.br)
	ip(t, "link", "set", c.br, "up")
	key := filepath.Join(c.dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	os.WriteFile(filepath.Join(c.dir, "authorized_keys"), pub, 0o600)
	var known bytes.Buffer
	for i := 1; i <= n; i++ {
		ns, addr := fmt.Sprintf("%s-%d", id, i), fmt.Sprintf("10.213.0.%d", i)
		peer, inner := fmt.Sprintf("%sv%d", id, i), fmt.Sprintf("%sw%d", id, i)
		ip(t, "netns", "add", ns)
		c.ns = append(c.ns, ns)
		ip(t, "link", "add", peer, "type", "veth", "peer", "name", inner)
		c.veths = append(c.veths, peer)
		ip(t, "link", "set", inner, "netns", ns)
		ip(t, "link", "set", peer, "master", c.br)
		ip(t, "link", "set", peer, "up")
		ip(t, "-n", ns, "addr", "add", addr+"/24", "dev", inner)
		ip(t, "-n", ns, "link", "set", inner, "up")
		ip(t, "-n", ns, "link", "set", "lo", "up")
		c.addrs = append(c.addrs, addr)
		hostKey := filepath.Join(c.dir, fmt.Sprintf("host%d", i))
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		hp, _ := os.ReadFile(hostKey + ".pub")
		f := strings.Fields(string(hp))
		fmt.Fprintf(&known, "%s %s %s\n", addr, f[0], f[1])
		sshd := exec.Command("ip", "netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f", "/dev/null",
			"-h", hostKey, "-o", "ListenAddress="+addr, "-o", "PidFile=none", "-o", "StrictModes=no",
			"-o", "AuthorizedKeysFile="+filepath.Join(c.dir, "authorized_keys"), "-o", "PermitRootLogin=yes",
			"-o", "UsePAM=no", "-o", "MaxStartups=100", "-o", "MaxSessions=100")
		log, _ := os.Create(filepath.Join(c.dir, fmt.Sprintf("sshd%d.log", i)))
		sshd.Stdout, sshd.Stderr = log, log
		if err := sshd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sshd.Process.Kill(); sshd.Wait() })
	}
	os.WriteFile(filepath.Join(c.dir, "known_hosts"), known.Bytes(), 0o600)
	// Every sshd answers before the test starts (bounded).
	for i, addr := range c.addrs {
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, err := exec.Command("ssh", c.sshArgs(addr, "true")...).CombinedOutput()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("sshd%d.log", i+1)))
				t.Fatalf("ssh to %s: %v %s\nsshd log:\n%s", addr, err, out, b)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return c
}

func (c *netCluster) sshArgs(addr string, cmd ...string) []string {
	return append([]string{"-F", "/dev/null", "-i", filepath.Join(c.dir, "id"), "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + filepath.Join(c.dir, "known_hosts"),
		"-o", "ConnectTimeout=5", "root@" + addr}, cmd...)
}

// shape limits node i's link (both directions) to rate.
func (c *netCluster) shape(i int, rate string) {
	c.t.Helper()
	tbf := []string{"qdisc", "replace", "dev", "", "root", "tbf", "rate", rate, "burst", "1mb", "latency", "50ms"}
	tbf[3] = c.veths[i]
	if out, err := exec.Command("tc", tbf...).CombinedOutput(); err != nil {
		c.t.Fatalf("tc: %v %s", err, out)
	}
	inner := strings.Replace(c.veths[i], "v", "w", 1)
	tbf[3] = inner
	if out, err := exec.Command("ip", append([]string{"netns", "exec", c.ns[i], "tc"}, tbf...)...).CombinedOutput(); err != nil {
		c.t.Fatalf("tc in %s: %v %s", c.ns[i], err, out)
	}
}

func (c *netCluster) stop() {
	for _, ns := range c.ns {
		// whatever still runs in the namespace is ours: sshd sessions
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, pid := range strings.Fields(string(out)) {
				exec.Command("kill", "-9", pid).Run()
			}
		}
		exec.Command("ip", "netns", "del", ns).Run()
	}
	for _, v := range c.veths {
		exec.Command("ip", "link", "del", v).Run()
	}
	exec.Command("ip", "link", "del", c.br).Run()
}

// Five hosts with real sshd in network namespaces; bench --engine tcp over
// SSH with every link shaped to 1 Gbit/s: N rounds (N odd), every pair once,
// the results file complete; n3 shaped to 100 Mbit/s is named as the bad
// node; the pair n1 ↔ n2, blackholed, times out alone and the run
// finishes; the run is interrupted in round 3 and --resume measures only
// the rest.
func TestBenchOverSSHInNamespaces(t *testing.T) {
	c := startNetCluster(t, 5)
	for i := range c.ns {
		c.shape(i, "1gbit")
	}
	c.shape(2, "100mbit")
	// n2 drops everything to n1: the n1 ↔ n2 pair hangs.
	ip(t, "-n", c.ns[1], "route", "add", "blackhole", c.addrs[0]+"/32")

	bin := filepath.Join(c.dir, "rdmalab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/rdmalab").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var nodes strings.Builder
	for i, a := range c.addrs {
		fmt.Fprintf(&nodes, "  - {name: n%d, ssh: root@%s, data: %s}\n", i+1, a, a)
	}
	cluster := filepath.Join(c.dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("nodes:\n"+nodes.String()+fmt.Sprintf(`link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher:
  type: ssh
  known_hosts: %s
  ssh_options: ["-F", "/dev/null", "-i", "%s"]
  rdmalab: %s
  base_port: 24400
`, filepath.Join(c.dir, "known_hosts"), filepath.Join(c.dir, "id"), bin)), 0o644)
	results := filepath.Join(c.dir, "results.jsonl")
	start := time.Now()
	args := []string{"bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "2", "--timeout", "15s", "--results", results}
	// Interrupt the run when round 3 starts, then resume it.
	interruptAt(t, "round 3/", bin, args...)
	before, err := ReadResults(results)
	if err != nil || len(before) < 4 || len(before) >= 10 {
		t.Fatalf("after the interrupt: %d results (%v), want rounds 1-2's and not all 10", len(before), err)
	}
	out, err := exec.Command(bin, append(args, "--resume")...).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %d (want 1: failures found): %v\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "already done") {
		t.Errorf("--resume measured everything again:\n%s", out)
	}
	all, err := ReadResults(results)
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]Result{}
	for _, r := range all {
		if r.Retest {
			continue
		}
		if _, twice := measured[r.A+"↔"+r.B]; twice {
			t.Errorf("pair %s ↔ %s measured twice", r.A, r.B)
		}
		measured[r.A+"↔"+r.B] = r
	}
	if len(measured) != 10 {
		t.Fatalf("%d pairs measured, want all 10:\n%s", len(measured), out)
	}
	for k, r := range measured {
		switch {
		case k == "n1↔n2":
			if !r.TimedOut {
				t.Errorf("the blackholed pair did not time out: %+v", r)
			}
		case strings.Contains(k, "n3"):
			if r.Verdict != Broken {
				t.Errorf("%s through the 100 Mbit/s node: %+v", k, r)
			}
		default:
			if r.Verdict != Healthy {
				t.Errorf("%s at 1 Gbit/s: %s", k, r.Judgment+r.Error)
			}
		}
	}
	if !strings.Contains(string(out), "✗ suspect n3") || !strings.Contains(string(out), "round 5/5") {
		t.Errorf("the report does not name n3 or ran the wrong number of rounds:\n%s", out)
	}
	t.Logf("5 hosts over ssh in %s", time.Since(start).Round(time.Second))
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

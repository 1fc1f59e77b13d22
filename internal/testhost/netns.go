package testhost

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NetCluster is hosts a test made: network namespaces on a bridge, each
// with its own sshd and host key, reachable only from this machine. Every
// process it starts is stopped by PID when the test ends, and the
// namespaces, veths and bridge are deleted.
type NetCluster struct {
	t     *testing.T
	Dir   string   // scratch: keys, known_hosts, sshd logs
	NS    []string // namespace names, node i is NS[i]
	Addrs []string // node i's address on the bridge
	Veths []string // root-side veth of node i
	Inner []string // namespace-side veth of node i
	// Subnet is the run's /24 without its last octet ("10.213.X").
	Subnet string
	br     string
	sshd   []*exec.Cmd
}

// PickSubnet returns a /24, 10.213.X, that no interface of this network
// namespace uses yet, chosen per run (not per test name), so a cluster left
// behind by a killed run, or another package's run at the same moment, never
// shares a subnet with this one. Stale rdmalab test links it sees are named
// in the test log, with the command that removes them.
func PickSubnet(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip -o -4 addr show: %v", err)
	}
	used := map[int]bool{}
	var stale []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		var x int
		if _, err := fmt.Sscanf(f[3], "10.213.%d.", &x); err == nil {
			used[x] = true
			stale = append(stale, f[1])
		}
	}
	if len(stale) > 0 {
		t.Logf("links on 10.213.0.0/16 already here (a killed earlier run leaves these; remove with 'ip link del NAME'): %s", strings.Join(stale, " "))
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%d-%d-%s", os.Getpid(), time.Now().UnixNano(), t.Name())
	start := int(h.Sum32() % 250)
	for i := 0; i < 250; i++ {
		x := 1 + (start+i)%250
		if !used[x] {
			return fmt.Sprintf("10.213.%d", x)
		}
	}
	t.Fatalf("every 10.213.X.0/24 is in use by links left behind: %s (remove them with 'ip link del NAME')", strings.Join(stale, " "))
	return ""
}

// RequireRoot skips (locally) or fails (in CI) a test that needs root.
func RequireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatal(why + " needs root")
		}
		t.Skip(why + " needs root")
	}
}

// IP runs ip(8) and fails the test on error.
func IP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// StartNetCluster makes n hosts with sshd on a subnet picked for this run
// (PickSubnet) and waits (bounded) until every sshd answers. name is kept in
// the link names' log line only; it no longer decides the subnet.
func StartNetCluster(t *testing.T, name string, n int) *NetCluster {
	t.Helper()
	for _, tool := range []string{"ip", "tc", "ssh", "ssh-keygen", "sshd"} {
		RequireTool(t, tool)
	}
	RequireRoot(t, "network namespaces")
	net := PickSubnet(t)
	id := fmt.Sprintf("r%s%d", strings.Split(net, ".")[2], os.Getpid()%10000)
	c := &NetCluster{t: t, Dir: TempDir(t), br: id + "br", Subnet: net}
	t.Logf("%s: %d hosts on %s.0/24, bridge %s", name, n, net, c.br)
	t.Cleanup(c.stop)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation dir
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "link", "add", c.br, "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("ip link add %s: %v: %s (a stale bridge of a killed run? remove it with 'ip link del %s')", c.br, err, bytes.TrimSpace(out), c.br)
	}
	c.Veths = nil
	IP(t, "addr", "add", net+".254/24", "dev", c.br)
	IP(t, "link", "set", c.br, "up")
	key := filepath.Join(c.Dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	os.WriteFile(filepath.Join(c.Dir, "authorized_keys"), pub, 0o600)
	var known bytes.Buffer
	for i := 1; i <= n; i++ {
		ns, addr := fmt.Sprintf("%s-%d", id, i), fmt.Sprintf("%s.%d", net, i)
		peer, inner := fmt.Sprintf("%sv%d", id, i), fmt.Sprintf("%sw%d", id, i)
		IP(t, "netns", "add", ns)
		c.NS = append(c.NS, ns)
		IP(t, "link", "add", peer, "type", "veth", "peer", "name", inner)
		c.Veths, c.Inner = append(c.Veths, peer), append(c.Inner, inner)
		IP(t, "link", "set", inner, "netns", ns)
		IP(t, "link", "set", peer, "master", c.br)
		IP(t, "link", "set", peer, "up")
		IP(t, "-n", ns, "addr", "add", addr+"/24", "dev", inner)
		IP(t, "-n", ns, "link", "set", inner, "up")
		IP(t, "-n", ns, "link", "set", "lo", "up")
		c.Addrs = append(c.Addrs, addr)
		hostKey := filepath.Join(c.Dir, fmt.Sprintf("host%d", i))
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		hp, _ := os.ReadFile(hostKey + ".pub")
		f := strings.Fields(string(hp))
		fmt.Fprintf(&known, "%s %s %s\n", addr, f[0], f[1])
		c.startSSHD(i - 1)
	}
	os.WriteFile(filepath.Join(c.Dir, "known_hosts"), known.Bytes(), 0o600)
	for i := range c.Addrs {
		c.WaitSSH(i, 20*time.Second)
	}
	return c
}

func (c *NetCluster) startSSHD(i int) {
	c.t.Helper()
	hostKey := filepath.Join(c.Dir, fmt.Sprintf("host%d", i+1))
	// The sessions must not run this machine's login rc files (root's
	// .bashrc may run slow tools such as pyenv rehash on every command):
	// sshd gets its own mount namespace with an empty ~/.bashrc bound over it.
	empty := filepath.Join(c.Dir, "empty-rc")
	os.WriteFile(empty, nil, 0o644)
	home, _ := os.UserHomeDir()
	// Every node has its own temporary directory, as real nodes have their
	// own /tmp: programs that keep session state there (Open MPI's orted)
	// would otherwise share it with the other "nodes" and with concurrent
	// tests, and one's cleanup can remove the directory another is making.
	tmp := filepath.Join(c.Dir, fmt.Sprintf("t%d", i+1))
	if err := os.MkdirAll(tmp, 0o1777); err != nil {
		c.t.Fatal(err)
	}
	wrap := fmt.Sprintf(`for f in %[1]s/.bashrc %[1]s/.profile %[1]s/.bash_profile; do [ -e "$f" ] && mount --bind %[2]s "$f"; done; exec "$@"`, home, empty)
	sshd := exec.Command("ip", "netns", "exec", c.NS[i], "unshare", "-m", "--propagation", "private", "sh", "-c", wrap, "sh", "/usr/sbin/sshd", "-D", "-e", "-f", "/dev/null",
		"-h", hostKey, "-o", "ListenAddress="+c.Addrs[i], "-o", "PidFile=none", "-o", "StrictModes=no",
		"-o", "AuthorizedKeysFile="+filepath.Join(c.Dir, "authorized_keys"), "-o", "PermitRootLogin=yes",
		"-o", "UsePAM=no", "-o", "MaxStartups=100", "-o", "MaxSessions=100", "-o", "SetEnv=TMPDIR="+tmp)
	log, _ := os.OpenFile(filepath.Join(c.Dir, fmt.Sprintf("sshd%d.log", i+1)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	sshd.Stdout, sshd.Stderr = log, log
	if err := sshd.Start(); err != nil {
		c.t.Fatal(err)
	}
	for len(c.sshd) <= i {
		c.sshd = append(c.sshd, nil)
	}
	c.sshd[i] = sshd
}

// StartSSHD starts node i's sshd again (after StopSSHD) and waits until it
// answers.
func (c *NetCluster) StartSSHD(i int) {
	c.t.Helper()
	c.startSSHD(i)
	c.WaitSSH(i, 20*time.Second)
}

// StopSSHD kills node i's sshd (the listener; sessions it already
// forked live on until the namespace is cleaned).
func (c *NetCluster) StopSSHD(i int) {
	if p := c.sshd[i]; p != nil {
		p.Process.Kill()
		p.Wait()
		c.sshd[i] = nil
	}
}

// WaitSSH waits until node i answers over ssh, failing the test after d.
func (c *NetCluster) WaitSSH(i int, d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		out, err := exec.Command("ssh", c.SSHArgs(c.Addrs[i], "true")...).CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("sshd%d.log", i+1)))
			c.t.Fatalf("ssh to %s: %v %s\nsshd log:\n%s", c.Addrs[i], err, out, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// KeyFile is the client key every node accepts; KnownHosts lists every
// node's host key.
func (c *NetCluster) KeyFile() string    { return filepath.Join(c.Dir, "id") }
func (c *NetCluster) KnownHosts() string { return filepath.Join(c.Dir, "known_hosts") }

// SSHArgs is the ssh(1) argument list that reaches addr as root and runs cmd.
func (c *NetCluster) SSHArgs(addr string, cmd ...string) []string {
	return append([]string{"-F", "/dev/null", "-i", c.KeyFile(), "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + c.KnownHosts(),
		"-o", "ConnectTimeout=5", "root@" + addr}, cmd...)
}

// Shape limits node i's link (both directions) to rate with tbf.
func (c *NetCluster) Shape(i int, rate string) {
	c.ShapeDir(i, rate, true, true)
}

// ShapeDir limits node i's sending (egress of its inner veth) and/or
// receiving (egress of the root-side veth) to rate.
func (c *NetCluster) ShapeDir(i int, rate string, send, recv bool) {
	c.t.Helper()
	tbf := []string{"qdisc", "replace", "dev", "", "root", "tbf", "rate", rate, "burst", "1mb", "latency", "50ms"}
	if recv {
		tbf[3] = c.Veths[i]
		if out, err := exec.Command("tc", tbf...).CombinedOutput(); err != nil {
			c.t.Fatalf("tc: %v %s", err, out)
		}
	}
	if send {
		tbf[3] = c.Inner[i]
		if out, err := exec.Command("ip", append([]string{"netns", "exec", c.NS[i], "tc"}, tbf...)...).CombinedOutput(); err != nil {
			c.t.Fatalf("tc in %s: %v %s", c.NS[i], err, out)
		}
	}
}

// ClusterFile writes a cluster file for rdmalab bench over this cluster:
// node i is "n<i+1>", reached over ssh at its address, measured on data[i]
// (its address when data is nil), through the ssh launcher with this
// cluster's key and known_hosts (knownHosts, when not "", replaces them),
// the rdmalab binary bin and ports from basePort; it returns the path.
func (c *NetCluster) ClusterFile(bin string, basePort int, data []string, knownHosts string) string {
	c.t.Helper()
	if knownHosts == "" {
		knownHosts = c.KnownHosts()
	}
	var nodes strings.Builder
	for i, a := range c.Addrs {
		d := a
		if data != nil {
			d = data[i]
		}
		fmt.Fprintf(&nodes, "  - {name: n%d, ssh: root@%s, data: %s}\n", i+1, a, d)
	}
	path := filepath.Join(c.Dir, "cluster.yaml")
	doc := fmt.Sprintf("nodes:\n%slink: {layer: TCP}\nlauncher:\n  type: ssh\n  known_hosts: %s\n  ssh_options: [\"-F\", \"/dev/null\", \"-i\", \"%s\"]\n  rdmalab: %s\n  base_port: %d\n",
		nodes.String(), knownHosts, c.KeyFile(), bin, basePort)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// PIDs lists the processes running in node i's namespace.
func (c *NetCluster) PIDs(i int) []string {
	out, err := exec.Command("ip", "netns", "pids", c.NS[i]).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

func (c *NetCluster) stop() {
	for i := range c.sshd {
		c.StopSSHD(i)
	}
	for i, ns := range c.NS {
		// whatever still runs in a namespace the test made is the test's
		for _, pid := range c.PIDs(i) {
			exec.Command("kill", "-9", pid).Run()
		}
		exec.Command("ip", "netns", "del", ns).Run()
	}
	for _, v := range c.Veths {
		exec.Command("ip", "link", "del", v).Run()
	}
	exec.Command("ip", "link", "del", c.br).Run()
}

package design

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A 2-spine × 4-leaf routed Clos from PlanFRR's own configs, in network
// namespaces with real zebra and bgpd: every BGP session Established, every
// leaf with an ECMP route to every other leaf's hosts through both spines,
// and `rdmalab bench --engine tcp` between hosts on different leaves across
// it. The hosts are namespaces with sshd on a separate management bridge
// (seed 001: data and management fabrics apart); their data interfaces hang
// off the leaves and reach each other only through the fabric.
func TestClosInNamespacesWithFRR(t *testing.T) {
	testhost.RequireRoot(t, "network namespaces and FRR daemons")
	testhost.RequireFRR(t)
	start := time.Now()
	const spines, leaves = 2, 4
	clos, err := PlanFRR(FRRRequest{Spines: spines, Leaves: leaves, SpineASN: 65000, LeafASNBase: 65001,
		Loopbacks: "172.31.255.0/24", LeafNetworks: "172.31.0.0/20", LeafPrefixLen: 24,
		SpineName: "spine", LeafName: "leaf", PortPrefix: "swp", HostInterface: "hosts"})
	if err != nil {
		t.Fatal(err)
	}
	// Hosts first: their namespaces are cleaned up last, after the routers.
	mgmt := testhost.StartNetCluster(t, "design", leaves)
	t.Logf("management hosts with sshd up after %s", time.Since(start).Round(100*time.Millisecond))
	// The benchmark's binary builds while the fabric converges.
	bin := filepath.Join(mgmt.Dir, "rdmalab")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/rdmalab")
	var buildOut strings.Builder
	build.Stdout, build.Stderr = &buildOut, &buildOut
	if err := build.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if build.ProcessState == nil {
			build.Wait()
		}
	})

	id := fmt.Sprintf("rc%d", os.Getpid()%100000)
	ns := map[string]string{}
	for _, s := range clos.Switches {
		ns[s.Name] = testhost.NetNS(t, id+"-"+s.Name)
	}
	// Cable the fabric: leaf port swpJ ↔ spine J's port swpI.
	for _, s := range clos.Switches {
		if s.Role != "leaf" {
			continue
		}
		for _, p := range s.Ports {
			testhost.IP(t, "-n", ns[s.Name], "link", "add", p.Name, "type", "veth", "peer", "name", p.PeerPort, "netns", ns[p.Peer])
			testhost.IP(t, "-n", ns[s.Name], "link", "set", p.Name, "up")
			testhost.IP(t, "-n", ns[p.Peer], "link", "set", p.PeerPort, "up")
		}
	}
	// One host per leaf: its data0 faces the leaf's "hosts" port, shaped to
	// 1 Gbit/s both ways so the benchmark has a known ceiling.
	var hostAddrs []string
	for i, s := range clos.Switches[spines:] {
		host := mgmt.NS[i]
		addr := nthAddr(*s.Network, 10)
		hostAddrs = append(hostAddrs, addr.String())
		testhost.IP(t, "-n", ns[s.Name], "link", "add", "hosts", "type", "veth", "peer", "name", "data0", "netns", host)
		testhost.IP(t, "-n", ns[s.Name], "link", "set", "hosts", "up")
		testhost.IP(t, "-n", host, "addr", "add", fmt.Sprintf("%s/%d", addr, s.Network.Bits()), "dev", "data0")
		testhost.IP(t, "-n", host, "link", "set", "data0", "up")
		testhost.IP(t, "-n", host, "route", "add", "172.31.0.0/16", "via", s.Gateway.String())
		for _, dev := range []struct{ ns, dev string }{{ns[s.Name], "hosts"}, {host, "data0"}} {
			tc := exec.Command("ip", "netns", "exec", dev.ns, "tc", "qdisc", "replace", "dev", dev.dev, "root", "tbf", "rate", "1gbit", "burst", "1mb", "latency", "50ms")
			if out, err := tc.CombinedOutput(); err != nil {
				t.Fatalf("tc in %s: %v %s", dev.ns, err, out)
			}
		}
	}
	t.Logf("fabric cabled after %s", time.Since(start).Round(100*time.Millisecond))
	routers := map[string]*testhost.FRRRouter{}
	var all []*testhost.FRRRouter
	for i, s := range clos.Switches {
		routers[s.Name] = testhost.StartFRR(t, ns[s.Name], string(clos.Files[i].Content))
		all = append(all, routers[s.Name])
	}
	t.Cleanup(func() { testhost.StopFRR(all...) })

	t.Logf("zebra and bgpd started after %s", time.Since(start).Round(100*time.Millisecond))
	// Every session Established (bounded).
	waitFor(t, 45*time.Second, "every BGP session Established", func() (bool, string) {
		var bad []string
		for _, s := range clos.Switches {
			out, err := routers[s.Name].Vtysh("show bgp ipv4 unicast summary json")
			if err != nil {
				return false, err.Error()
			}
			var sum struct {
				Peers map[string]struct {
					State string `json:"state"`
				} `json:"peers"`
			}
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				return false, fmt.Sprintf("%s: %v: %s", s.Name, err, out)
			}
			for _, p := range s.Ports {
				if st := sum.Peers[p.Name].State; st != "Established" {
					bad = append(bad, fmt.Sprintf("%s %s→%s: %q", s.Name, p.Name, p.Peer, st))
				}
			}
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	})
	// Every leaf: a kernel route to every other leaf's hosts through both
	// spines (ECMP), installed by zebra from BGP.
	waitFor(t, 30*time.Second, "ECMP routes through both spines on every leaf", func() (bool, string) {
		var bad []string
		for _, s := range clos.Switches[spines:] {
			for _, o := range clos.Switches[spines:] {
				if o.Name == s.Name {
					continue
				}
				devs, err := kernelNexthops(ns[s.Name], o.Network.String())
				if err != nil {
					return false, err.Error()
				}
				if !slices.Equal(devs, []string{"swp1", "swp2"}) {
					bad = append(bad, fmt.Sprintf("%s → %s via %v", s.Name, o.Network, devs))
				}
			}
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	})
	t.Logf("fabric converged %s after start", time.Since(start).Round(100*time.Millisecond))
	spineBytes := func() uint64 {
		var sum uint64
		for _, s := range clos.Switches[:spines] {
			for _, p := range s.Ports {
				b, err := exec.Command("ip", "netns", "exec", ns[s.Name], "cat", "/sys/class/net/"+p.Name+"/statistics/rx_bytes").Output()
				if err != nil {
					t.Fatal(err)
				}
				var n uint64
				fmt.Sscan(string(b), &n)
				sum += n
			}
		}
		return sum
	}
	before := spineBytes()

	if err := build.Wait(); err != nil {
		t.Fatalf("build: %v\n%s", err, buildOut.String())
	}
	var nodes strings.Builder
	for i := range hostAddrs {
		fmt.Fprintf(&nodes, "  - {name: h%d, ssh: root@%s, data: %s}\n", i+1, mgmt.Addrs[i], hostAddrs[i])
	}
	cluster := filepath.Join(mgmt.Dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("nodes:\n"+nodes.String()+fmt.Sprintf(`link: {layer: TCP, rate_gbps: 1, mtu_bytes: 1500}
launcher:
  type: ssh
  known_hosts: %s
  ssh_options: ["-F", "/dev/null", "-i", "%s"]
  rdmalab: %s
  base_port: 24600
`, mgmt.KnownHosts(), mgmt.KeyFile(), bin)), 0o644)
	results := filepath.Join(mgmt.Dir, "results.jsonl")
	out, err := exec.Command(bin, "bench", "--cluster", cluster, "--engine", "tcp", "--seconds", "1", "--timeout", "30s", "--results", results).CombinedOutput()
	// Exit 1 is a verdict (a pair judged degraded on a busy machine); the
	// fabric's part is that every pair ran and moved data.
	if err != nil && exitCode(err) != 1 {
		for _, s := range clos.Switches {
			sum, _ := routers[s.Name].Vtysh("show bgp ipv4 unicast summary")
			routes, _ := exec.Command("ip", "-n", ns[s.Name], "route").CombinedOutput()
			t.Logf("%s after the benchmark:\n%s\n%s", s.Name, sum, routes)
		}
		t.Fatalf("bench across the Clos: %v\n%s", err, out)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	_, rs, _, err := bench.Results.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	directions := 0
	for _, r := range rs {
		if r.Retest {
			continue
		}
		directions++
		// Shaped to 1 Gbit/s: a working path moves most of it.
		if r.Failed() || r.Gbps < 0.5 {
			t.Errorf("%s → %s across the fabric: %.2f Gb/s %s%s", r.From, r.To, r.Gbps, r.Error, r.NotMeasured)
		}
	}
	pairs := directions / 2
	if pairs != leaves*(leaves-1)/2 {
		t.Errorf("%d pairs measured, want %d:\n%s", pairs, leaves*(leaves-1)/2, out)
	}
	// The traffic went through the spines, not around them.
	if moved := spineBytes() - before; moved < 50<<20 {
		t.Errorf("only %d bytes crossed the spines during the benchmark", moved)
	}
	t.Logf("%d spines × %d leaves, %d host pairs benchmarked across it, in %s", spines, leaves, pairs, time.Since(start).Round(100*time.Millisecond))
}

// kernelNexthops lists the devices of the kernel's BGP route to dst in ns.
func kernelNexthops(ns, dst string) ([]string, error) {
	out, err := exec.Command("ip", "-n", ns, "-j", "route", "show", dst).Output()
	if err != nil {
		return nil, fmt.Errorf("ip -n %s route show %s: %w", ns, dst, err)
	}
	var routes []struct {
		Protocol string `json:"protocol"`
		Dev      string `json:"dev"`
		Nexthops []struct {
			Dev string `json:"dev"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, fmt.Errorf("ip route json %q: %w", out, err)
	}
	var devs []string
	for _, r := range routes {
		if r.Protocol != "bgp" {
			continue
		}
		if r.Dev != "" {
			devs = append(devs, r.Dev)
		}
		for _, n := range r.Nexthops {
			devs = append(devs, n.Dev)
		}
	}
	slices.Sort(devs)
	return devs, nil
}

// waitFor polls ok every 500 ms until it holds, failing after d with the
// last reason.
func waitFor(t *testing.T, d time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done, why := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, d, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

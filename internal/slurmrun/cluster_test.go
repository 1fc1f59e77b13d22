package slurmrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/slurm"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

const rateFile = "sys/class/infiniband/mlx5_0/ports/1/rate"

// A real four-node Slurm cluster on this machine runs `rdmalab slurm
// health` as its HealthCheckProgram: node2's port trained at SDR is
// drained naming the check, and resumed once the port is back at QDR;
// node3, whose sysfs read hangs, is drained naming where it hung; node4,
// drained by an admin, stays drained with the admin's reason even when it
// is healthy and even when it fails; node1 stays in service throughout.
func TestHealthCheckProgramOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("a Slurm cluster: run in full, not in the -short race pass")
	}
	dir := testhost.TempDir(t)
	bin := testhost.Rdmalab(t)
	trees := filepath.Join(dir, "trees")
	for _, n := range []string{"node1", "node2", "node3", "node4"} {
		if err := testhost.R730().Write(filepath.Join(trees, n)); err != nil {
			t.Fatal(err)
		}
	}
	setRate := func(node, rate string) {
		if err := os.WriteFile(filepath.Join(trees, node, rateFile), []byte(rate+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setRate("node2", "10 Gb/sec (4X SDR)")
	// A read that never returns, like a wedged device's sysfs file.
	os.Remove(filepath.Join(trees, "node3", rateFile))
	if err := syscall.Mkfifo(filepath.Join(trees, "node3", rateFile), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "hc")
	os.MkdirAll(logs, 0o755)
	hc := filepath.Join(dir, "hc.sh")
	// slurmd runs the program with its own environment: a cluster whose
	// slurm.conf is not at the default path must say where it is.
	confDir := filepath.Join(dir, "conf")
	os.WriteFile(hc, []byte("#!/bin/sh\nexport SLURM_CONF="+confDir+"/slurm.conf\nexec "+bin+" slurm health --root "+trees+"/$SLURMD_NODENAME --expect-rate '4X QDR' --time-limit 2s --scontrol-timeout 5s >>"+logs+"/$SLURMD_NODENAME.log 2>&1\n"), 0o755)

	s := testhost.StartSlurm(t, 4, testhost.SlurmOptions{HealthCheckProgram: hc, HealthCheckInterval: 3, ConfDir: confDir})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range s.Nodes {
				b, _ := os.ReadFile(filepath.Join(logs, n+".log"))
				t.Logf("%s health log:\n%s", n, b)
			}
		}
	})
	if out, err := s.Command("scontrol", "update", "NodeName=node4", "State=DRAIN", "Reason=admin: bad DIMM B2").CombinedOutput(); err != nil {
		t.Fatalf("admin drain: %v %s", err, out)
	}
	node := func(name string) slurm.Node {
		n, _ := slurm.ParseNode(s.NodeLine(name))
		return n
	}
	runs := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(logs, name+".log"))
		return strings.Count("\n"+string(b), "\nnode "+name+" (")
	}
	s.WaitFor(40*time.Second, "node2 drained naming the check", func() bool {
		n := node("node2")
		return n.Drained() && strings.HasPrefix(n.Reason, "rdmalab: port.rate.below-expected mlx5_0 port 1")
	})
	s.WaitFor(40*time.Second, "node3 drained naming where it hung", func() bool {
		n := node("node3")
		return n.Drained() && strings.HasPrefix(n.Reason, "rdmalab: health check timed out in inventory")
	})
	if n := node("node1"); n.Drained() {
		t.Errorf("healthy node1 drained: %+v", n)
	}

	// Fixed: node2 comes back, because rdmalab drained it.
	setRate("node2", "40 Gb/sec (4X QDR)")
	s.WaitFor(40*time.Second, "node2 resumed", func() bool { return !node("node2").Drained() })

	// node4 failing too: the admin's reason stands through further runs.
	before := runs("node4")
	setRate("node4", "10 Gb/sec (4X SDR)")
	s.WaitFor(40*time.Second, "two more health runs on node4", func() bool { return runs("node4") >= before+2 })
	if n := node("node4"); !n.Drained() || n.Reason != "admin: bad DIMM B2" {
		t.Errorf("admin-drained node4 changed: %+v", n)
	}
	b, _ := os.ReadFile(filepath.Join(logs, "node4.log"))
	if !strings.Contains(string(b), "already drained by someone else") {
		t.Errorf("node4's log does not say why it was left alone:\n%s", b)
	}
	if n := node("node1"); n.Drained() {
		t.Errorf("healthy node1 drained: %+v", n)
	}

	// The real scontrol reads the node list as rdmalab does.
	out, err := s.Command("scontrol", "show", "hostnames", "gpu[01-03,07],login,rack[1-2]-n[1-2]").Output()
	want, _ := slurm.ExpandNodeList("gpu[01-03,07],login,rack[1-2]-n[1-2]")
	if err != nil || strings.Join(strings.Fields(string(out)), " ") != strings.Join(want, " ") {
		t.Errorf("scontrol show hostnames: %q %v; rdmalab: %v", out, err, want)
	}
	// And rdmalab's parser reads the real scontrol's node lines.
	if n, err := slurm.ParseNode(s.NodeLine("node4")); err != nil || n.Name != "node4" {
		t.Errorf("ParseNode on real output: %+v %v", n, err)
	}
}

// With slurmctld not answering (the first run, before it is up), the
// health check changes nothing, says so, and exits 2 within its bound.
func TestHealthWithoutController(t *testing.T) {
	testhost.RequireTool(t, "scontrol")
	dir := testhost.TempDir(t)
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=none\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=9\nAuthType=auth/none\nNodeName=node1 State=UNKNOWN\nPartitionName=p Nodes=node1\n"), 0o644)
	ctx := context.Background()
	start := time.Now()
	_, err := Health(ctx, Exec{Timeout: 2 * time.Second, Env: []string{"SLURM_CONF=" + conf}}, HealthOptions{Node: "node1"}, nil)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("no controller: err %v after %s", err, time.Since(start))
	}
}

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

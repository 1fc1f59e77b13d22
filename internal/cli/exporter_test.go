package cli

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestExporterTextfile(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	out := filepath.Join(t.TempDir(), "rdmalab.prom")
	if _, stderr, code := run(t, "exporter", "--root", root, "--textfile", out, "--expect-rate", "400"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_7",port="1"}`, `rdmalab_findings{outcome="fail",source="host"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile lacks %s", want)
		}
	}
	for _, bad := range [][]string{
		{"exporter", "--root", filepath.Join(root, "nope"), "--textfile", out},
		{"exporter", "--root", root, "--textfile", filepath.Join(t.TempDir(), "x.txt")},
		{"exporter", "--root", root, "--expect-link-layer", "ethernett"},
		{"exporter", "--root", root, "--listen", "256.0.0.1:1"},
	} {
		if _, stderr, code := run(t, bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, want 2 and one line: %q", bad, code, stderr)
		}
	}
}

// --root takes what inventory --root takes: the gpud H100 capture of
// /sys/class/infiniband alone, as its .tar.gz and unpacked, exports its 9
// devices, each port with its counters.
func TestExporterRootLikeInventory(t *testing.T) {
	archive := filepath.Join(testhost.SharedTestdata(t), "sysfs/gpud/sys-class-infiniband-h100.0.tar.gz")
	unpacked := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", archive, "-C", unpacked).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	for _, root := range []string{archive, filepath.Join(unpacked, "sys-class-infiniband-h100.0")} {
		out := filepath.Join(t.TempDir(), "rdmalab.prom")
		if _, stderr, code := run(t, "exporter", "--root", root, "--textfile", out); code != 0 {
			t.Fatalf("%s: exit %d: %s", root, code, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !strings.Contains(text, "rdmalab_infiniband_devices 9\n") {
			t.Errorf("%s: want 9 devices:\n%s", root, grepLines(text, "rdmalab_infiniband_devices"))
		}
		for _, dev := range []string{"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"} {
			if !strings.Contains(text, `rdmalab_infiniband_port_data_received_bytes_total{device="`+dev+`",port="1"}`) {
				t.Errorf("%s: no counters of %s", root, dev)
			}
		}
	}
	snapshot := filepath.Join(t.TempDir(), "h.json")
	out, _, _ := run(t, "inventory", "--root", archive, "--output", "json")
	if err := os.WriteFile(snapshot, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "exporter", "--root", snapshot, "--textfile", filepath.Join(t.TempDir(), "x.prom")); code != 2 || !strings.Contains(stderr, "snapshot") {
		t.Errorf("a snapshot as --root: exit %d, %q", code, stderr)
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Every duration flag is bounded; a bad one is refused with one line that
// names the flag, the value and the range, and exit 2.
func TestExporterRefusesBadDurations(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	for _, c := range []struct{ flag, value string }{
		{"--findings.interval", "-1s"}, {"--findings.interval", "1ms"}, {"--findings.interval", "48h"},
		{"--scrape-timeout", "0"}, {"--scrape-timeout", "-5s"}, {"--scrape-timeout", "1h"},
		{"--fabric.interval", "0"}, {"--fabric.interval", "-1m"},
		{"--fabric.timeout", "0"}, {"--fabric.timeout", "2h"},
		{"--fabric.port", "-1"}, {"--fabric.port", "300"},
	} {
		_, stderr, code := run(t, "exporter", "--root", root, "--textfile", filepath.Join(t.TempDir(), "x.prom"), c.flag, c.value)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.flag) || !strings.Contains(stderr, "want") {
			t.Errorf("%s %s: exit %d, want 2 and one line naming the flag and the range: %q", c.flag, c.value, code, stderr)
		}
	}
	// 0 turns the findings off, and is accepted.
	if _, stderr, code := run(t, "exporter", "--root", root, "--textfile", filepath.Join(t.TempDir(), "x.prom"), "--findings.interval", "0"); code != 0 {
		t.Errorf("--findings.interval 0: exit %d: %s", code, stderr)
	}
}

// The built binary, stopped as systemd and a terminal stop it (SIGTERM,
// SIGINT), exits 0 after serving, each time.
func TestExporterStopsCleanlyOnSignals(t *testing.T) {
	bin := testhost.Rdmalab(t)
	root := testhost.WriteTree(t, testhost.R730())
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(bin, "exporter", "--root", root, "--listen", "127.0.0.1:0")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := make(chan string, 1)
		scanned := make(chan struct{})
		var log strings.Builder
		go func() {
			defer close(scanned)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				// exporter-toolkit logs the address again: take the first.
				if _, a, ok := strings.Cut(sc.Text(), "address="); ok {
					select {
					case addr <- a:
					default:
					}
				}
			}
		}()
		select {
		case a := <-addr:
			resp, err := http.Get("http://" + a + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the exporter never said where it listens")
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			<-scanned
			if err != nil {
				t.Errorf("%s: %v (want exit 0)\n%s", sig, err, log.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s: the exporter did not stop", sig)
		}
	}
}

// --nccl-ras takes a host with or without a port (NCCL's 28028 then), an
// IPv6 address bare or bracketed, and refuses a bad port or no host.
func TestRASAddr(t *testing.T) {
	for in, want := range map[string]string{"node1": "node1:28028", "node1:29000": "node1:29000", "::1": "[::1]:28028", "[::1]:1": "[::1]:1", "10.0.0.2": "10.0.0.2:28028"} {
		if got, err := rasAddr(in); err != nil || got != want {
			t.Errorf("rasAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"node1:0", "node1:x", ":28028", "node1:"} {
		if got, err := rasAddr(in); err == nil {
			t.Errorf("rasAddr(%q) = %q, want an error", in, got)
		}
	}
}

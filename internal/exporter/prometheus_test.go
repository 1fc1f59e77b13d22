package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs the real Prometheus server on loopback with config
// and stops it (by its PID) when the test ends. It returns its base URL.
func startPrometheus(t *testing.T, config string) string {
	t.Helper()
	bin := testhost.RequireTool(t, "prometheus")
	dir := testhost.TempDir(t)
	cfg := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(cfg, []byte(config), 0o644))
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr, "--log.level=warn")
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	must(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		log.Close()
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("prometheus exited:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready after 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample is one element of an instant query's vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query through Prometheus' HTTP API.
func query(t *testing.T, base, expr string) []sample {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s", expr, r.Error)
	}
	var out []sample
	for _, x := range r.Data.Result {
		v, _ := strconv.ParseFloat(x.Value[1].(string), 64)
		out = append(out, sample{x.Metric, v})
	}
	return out
}

// waitQuery polls until expr returns exactly one sample satisfying ok.
func waitQuery(t *testing.T, base, expr string, d time.Duration, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(d)
	var last []sample
	for time.Now().Before(deadline) {
		last = query(t, base, expr)
		if len(last) == 1 && ok(last[0].Value) {
			return last[0].Value
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: never as expected within %s; last %+v", expr, d, last)
	return 0
}

// The real Prometheus scrapes the exporter over an HGX tree whose counters
// the test advances at known rates; PromQL over what Prometheus stored
// gives back those rates (data in bytes, so ×4 of the sysfs words), and a
// port the test takes down shows up as a finding.
func TestPrometheusScrapesWhatTheTestWrote(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	port := mustRealpath(t, filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1"))
	down := mustRealpath(t, filepath.Join(root, "sys/class/infiniband/mlx5_3/ports/1"))

	const (
		wordsPerSecond  = 2.5e9 / 4 // 2.5 GB/s received, as sysfs counts it: 32-bit words
		symbolErrPerSec = 3.0
	)
	// In place, as sysfs changes a counter: the exporter keeps the file
	// open and re-reads it. Zero-padded to a fixed width, so one write
	// replaces the whole value.
	write := func(file string, v uint64) {
		f, err := os.OpenFile(file, os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteAt([]byte(fmt.Sprintf("%020d\n", v)), 0)
		must(t, err)
		must(t, f.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			secs := time.Since(start).Seconds()
			write(filepath.Join(port, "counters/port_rcv_data"), uint64(secs*wordsPerSecond))
			write(filepath.Join(port, "counters/symbol_error"), uint64(secs*symbolErrPerSec))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	e := newExporter(t, Options{Root: root, FindingsInterval: time.Second, Now: time.Now})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, l, "") }()
	t.Cleanup(func() { cancel(); <-served })

	base := startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: rdmalab
    static_configs:
      - targets: ['%s']
`, l.Addr()))

	near := func(want float64) func(float64) bool {
		return func(v float64) bool { return math.Abs(v-want) <= 0.05*want }
	}
	// rate() needs two samples in the window; give Prometheus a few scrapes.
	got := waitQuery(t, base, `rate(rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"}[5s])`, 30*time.Second, near(wordsPerSecond*4))
	t.Logf("data rate %.4g B/s (wrote %.4g)", got, wordsPerSecond*4)
	got = waitQuery(t, base, `rate(rdmalab_infiniband_symbol_error_total{device="mlx5_0",port="1"}[5s])`, 10*time.Second, near(symbolErrPerSec))
	t.Logf("symbol error rate %.3g/s (wrote %.3g)", got, symbolErrPerSec)
	waitQuery(t, base, `rdmalab_infiniband_rate_bytes_per_second{device="mlx5_3",port="1"}`, 5*time.Second, func(v float64) bool { return v == 50e9 })
	if n := query(t, base, `rdmalab_finding{check="port.state"}`); len(n) != 0 {
		t.Fatalf("healthy tree has port.state findings: %+v", n)
	}

	must(t, os.WriteFile(filepath.Join(down, "state"), []byte("1: DOWN\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(down, "phys_state"), []byte("3: Disabled\n"), 0o644))
	waitQuery(t, base, `rdmalab_finding{check="port.state",subject="mlx5_3 port 1",severity="fail"}`, 20*time.Second, func(v float64) bool { return v == 1 })
	waitQuery(t, base, `rdmalab_infiniband_state_id{device="mlx5_3",port="1"}`, 5*time.Second, func(v float64) bool { return v == 1 })
	waitQuery(t, base, `rdmalab_findings{source="host",outcome="fail"}`, 5*time.Second, func(v float64) bool { return v >= 1 })
}

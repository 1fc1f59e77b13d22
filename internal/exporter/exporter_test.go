package exporter

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files")

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }

func newExporter(t testing.TB, o Options) *Exporter {
	t.Helper()
	if o.Now == nil {
		o.Now = fixedNow
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// volatile metrics change from run to run and stay out of golden files.
var volatile = []string{"rdmalab_scrape_collector_duration_seconds", "rdmalab_fabric_scan_duration_seconds", "rdmalab_fabric_scan_timestamp_seconds"}

// exposition gathers once and renders the text format without the
// volatile families, with the names of the families it kept.
func exposition(t testing.TB, g prometheus.Gatherer) (string, []string) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var b bytes.Buffer
	var names []string
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if slices.Contains(volatile, mf.GetName()) {
			continue
		}
		names = append(names, mf.GetName())
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String(), names
}

// golden compares the exporter's exposition with testdata/<name>.prom
// through testutil.GatherAndCompare, and lints it.
func golden(t *testing.T, name string, e *Exporter) string {
	t.Helper()
	reg := e.Registry()
	text, names := exposition(t, reg)
	// rdmalab_build_info names the Go toolchain and commit the test runs
	// with: held by TestBuildInfo, not by the goldens.
	names = slices.DeleteFunc(names, func(n string) bool { return n == "rdmalab_build_info" })
	var kept []string
	for _, l := range strings.SplitAfter(text, "\n") {
		if !strings.Contains(l, "rdmalab_build_info") {
			kept = append(kept, l)
		}
	}
	text = strings.Join(kept, "")
	file := filepath.Join("testdata", name+".prom")
	if *update {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(reg, f, names...); err != nil {
		t.Errorf("%s: %v", file, err)
	}
	lint(t, text)
	return text
}

// lint runs client_golang's promlint and, where installed, promtool.
func lint(t *testing.T, text string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatalf("promtool is required (RDMALAB_REQUIRE_TOOLS is set): %v", err)
		}
		return // promlint above still ran
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func success(t *testing.T, g prometheus.Gatherer, collector string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rdmalab_scrape_collector_success" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "collector") == collector {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no success metric for %s", collector)
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// The seed machines, written as sysfs trees: every port's counters (data
// ×4), state, rate in bytes per second, PCIe links, GPU↔NIC paths,
// hugepages and doctor's findings.
func TestGoldenSeeds(t *testing.T) {
	for name, m := range testhost.Seeds() {
		t.Run(name, func(t *testing.T) {
			root := testhost.WriteTree(t, m())
			e := newExporter(t, Options{Root: root})
			text := golden(t, "seed-"+name, e)
			if !strings.Contains(text, "rdmalab_infiniband_port_data_received_bytes_total{") {
				t.Errorf("no data counters")
			}
			// The healthy HGX: nothing to report.
			if f := grep(text, "rdmalab_finding{"); name == "hgx-h200" && f != "" {
				t.Errorf("healthy HGX has findings:\n%s", f)
			}
			for _, c := range []string{"host", "findings"} {
				if v := success(t, e.Registry(), c); v != 1 {
					t.Errorf("collector %s success %v", c, v)
				}
			}
		})
	}
}

// Real captures: the hwloc trees, prometheus' hand-assembled fixtures
// (Omni-Path, i40iw, mlx5 with hw_counters) and gpud's H100
// /sys/class/infiniband with hw_counters (real hardware, replayed).
func TestGoldenCaptures(t *testing.T) {
	if testing.Short() {
		t.Skip("no goroutines of their own: the race run (-short) skips the big trees")
	}
	caps := testhost.Captures(t)
	names := make([]string, 0, len(caps))
	for n := range caps {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		c := caps[name]
		t.Run(name, func(t *testing.T) {
			// A lone /sys/class/infiniband copy is taken as it is, as
			// inventory --root takes it.
			text := golden(t, "capture-"+name, newExporter(t, Options{Root: c.Root}))
			// node_exporter's own fixture: its iWARP device's counters read
			// "N/A (no PMA)": marked unavailable (not zero), and the mlx4
			// ports beside it are all there.
			if name == "node_exporter-sys" {
				for _, want := range []string{`rdmalab_infiniband_file_unavailable{device="i40iw0",file="port_rcv_data",port="1"} 1`,
					`rdmalab_infiniband_port_data_received_bytes_total{device="mlx4_0",port="2"}`} {
					if !strings.Contains(text, want) {
						t.Errorf("no %s", want)
					}
				}
			}
			if strings.Contains(name, "h100") {
				for _, want := range []string{"rdmalab_infiniband_out_of_buffer_drops_total{", "rdmalab_infiniband_port_data_transmitted_bytes_total{"} {
					if !strings.Contains(text, want) {
						t.Errorf("H100 capture: no %s", want)
					}
				}
			}
		})
	}
}

// The ×4 of data octets, checked against a value written by the test.
func TestDataOctetsTimesFour(t *testing.T) {
	m := testhost.HGX()
	m.RDMA[0].Ports[0].Counters = map[string]uint64{"port_rcv_data": 1000, "port_xmit_data": 250}
	e := newExporter(t, Options{Root: testhost.WriteTree(t, m), NoFindings: true})
	text, _ := exposition(t, e.Registry())
	for _, want := range []string{
		`rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"} 4000` + "\n",
		`rdmalab_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",port="1"} 1000` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("data octets not ×4: want %q in\n%s", want, grep(text, "mlx5_0"))
		}
	}
}

func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// One device with broken files (a state that is a directory, a counter
// that is not a number, hw_counters that is a file, a device whose ports
// directory is a file, a dangling device link) never takes the other
// devices' metrics with it: every other device's lines are unchanged.
func TestBrokenDeviceKeepsOthers(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	clean, _ := exposition(t, newExporter(t, Options{Root: root, NoFindings: true}).Registry())

	ib := filepath.Join(root, "sys/class/infiniband")
	dev1 := mustRealpath(t, filepath.Join(ib, "mlx5_1"))
	p1 := filepath.Join(dev1, "ports/1")
	must(t, os.Remove(filepath.Join(p1, "state")))
	must(t, os.Mkdir(filepath.Join(p1, "state"), 0o755))
	must(t, os.WriteFile(filepath.Join(p1, "counters/port_xmit_data"), []byte("N/A (no PMA)\n"), 0o644))
	must(t, os.RemoveAll(filepath.Join(p1, "hw_counters")))
	must(t, os.WriteFile(filepath.Join(p1, "hw_counters"), []byte("garbage\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(p1, "rate"), []byte("fast\n"), 0o644))
	dev2 := mustRealpath(t, filepath.Join(ib, "mlx5_2"))
	must(t, os.RemoveAll(filepath.Join(dev2, "ports")))
	must(t, os.WriteFile(filepath.Join(dev2, "ports"), nil, 0o644))
	must(t, os.Symlink("../../devices/nowhere/mlx5_9", filepath.Join(ib, "mlx5_9")))

	e := newExporter(t, Options{Root: root})
	broken, _ := exposition(t, e.Registry())
	lint(t, broken)
	for _, dev := range []string{"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"} {
		if want, got := grep(clean, `device="`+dev+`"`), grep(broken, `device="`+dev+`"`); want != got || want == "" {
			t.Errorf("%s changed:\nwant\n%s\ngot\n%s", dev, want, got)
		}
	}
	if !strings.Contains(broken, `rdmalab_infiniband_file_unavailable{device="mlx5_1",file="port_xmit_data",port="1"} 1`) {
		t.Errorf("mlx5_1's unreadable counter is not reported:\n%s", grep(broken, "mlx5_1"))
	}
	if !strings.Contains(broken, `rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_1",port="1"}`) {
		t.Errorf("mlx5_1's readable counters are gone:\n%s", grep(broken, "mlx5_1"))
	}
	for _, absent := range []string{`rdmalab_infiniband_state_id{device="mlx5_1"`, `rdmalab_infiniband_rate_bytes_per_second{device="mlx5_1"`} {
		if strings.Contains(broken, absent) {
			t.Errorf("an unreadable file became a value: %s", grep(broken, absent))
		}
	}
	if !strings.Contains(broken, `rdmalab_host_read_errors{subject="mlx5_1 port 1"}`) {
		t.Errorf("read errors not counted:\n%s", grep(broken, "read_errors"))
	}
	for _, c := range []string{"host", "findings"} {
		if v := success(t, e.Registry(), c); v != 1 {
			t.Errorf("collector %s failed on one broken device", c)
		}
	}
}

func mustRealpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A collector that fails or panics is reported failed; the others' metrics stay.
func TestFailingCollectorKeepsOthers(t *testing.T) {
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730())})
	e.collectors["broken"] = panicking{}
	gone := testhost.WriteTree(t, testhost.R730())
	fsys, cleanup, err := inventory.OpenFS(gone)
	must(t, err)
	t.Cleanup(cleanup)
	// /sys/class/infiniband is a file now: the listing fails.
	must(t, os.RemoveAll(filepath.Join(gone, "sys/class/infiniband")))
	must(t, os.WriteFile(filepath.Join(gone, "sys/class/infiniband"), nil, 0o644))
	e.collectors["missing-root"] = newHostCollector(fsys, Options{}.withDefaults())
	reg := e.Registry()
	if success(t, reg, "broken") != 0 || success(t, reg, "missing-root") != 0 || success(t, reg, "host") != 1 {
		t.Errorf("success flags wrong")
	}
	text, _ := exposition(t, reg)
	if !strings.Contains(text, "rdmalab_infiniband_state_id{") {
		t.Errorf("host metrics gone with a panicking collector")
	}
}

type panicking struct{}

func (panicking) update(_ context.Context, ch chan<- prometheus.Metric) error { panic("odd device") }

// A sysfs file that hangs (a wedged driver; here a FIFO nobody writes)
// is bounded per device: the scrape ends in time, the hung device is
// reported with the file it is stuck on, every other device is served, the
// next scrape does not pile a second read on the hung one, and once the
// file answers the device comes back.
func TestHungSysfsReadBoundsTheScrape(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	file := filepath.Join(mustRealpath(t, filepath.Join(root, "sys/class/infiniband/mlx5_4")), "ports/1/counters/symbol_error")
	must(t, os.Remove(file))
	must(t, syscall.Mkfifo(file, 0o644))
	release := func() { // wake every reader blocked opening the FIFO
		for range 20 {
			f, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return // ENXIO: nobody is waiting any more
			}
			f.Close()
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(release)

	// Each device is bounded by half the scrape timeout: 2s, roomy enough
	// for the healthy devices under the race detector on a busy machine.
	reg := newExporter(t, Options{Root: root, ScrapeTimeout: 4 * time.Second, NoFindings: true}).Registry()
	for i := range 2 {
		start := time.Now()
		text, _ := exposition(t, reg)
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("scrape %d took %s with a 4s timeout", i, d)
		}
		if !strings.Contains(text, `rdmalab_scrape_collector_success{collector="host"} 1`) {
			t.Errorf("scrape %d: one hung device failed the host collector:\n%s", i, grep(text, "success"))
		}
		if !strings.Contains(text, `rdmalab_host_read_errors{subject="mlx5_4"} 1`) {
			t.Errorf("scrape %d: the hung device is not reported:\n%s", i, grep(text, "read_errors"))
		}
		if strings.Contains(text, `device="mlx5_4"`) {
			t.Errorf("scrape %d: the hung device has values", i)
		}
		for _, dev := range []string{"mlx5_0", "mlx5_3", "mlx5_7"} {
			if !strings.Contains(text, `rdmalab_infiniband_port_data_received_bytes_total{device="`+dev+`",port="1"}`) {
				t.Errorf("scrape %d: %s lost with the hung device", i, dev)
			}
		}
	}
	release()
	tmp := file + ".new"
	must(t, os.WriteFile(tmp, []byte("0\n"), 0o644))
	must(t, os.Rename(tmp, file))
	deadline := time.Now().Add(30 * time.Second)
	for {
		text, _ := exposition(t, reg)
		if strings.Contains(text, `rdmalab_infiniband_symbol_error_total{device="mlx5_4",port="1"} 0`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mlx5_4 never came back:\n%s", grep(text, "mlx5_4"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rdmalab_build_info says which build serves: always 1, with the version,
// commit and Go version labels, as node_exporter's build_info does.
func TestBuildInfo(t *testing.T) {
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.Seed000())})
	text, _ := exposition(t, e.Registry())
	if !regexp.MustCompile(`(?m)^rdmalab_build_info\{goversion="go[0-9.]+[^"]*",revision="[0-9a-f]*",version="[^"]+"\} 1$`).MatchString(text) {
		t.Errorf("no rdmalab_build_info:\n%s", grep(text, "build_info"))
	}
}

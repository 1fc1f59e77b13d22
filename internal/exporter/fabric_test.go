package exporter

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// dupSpines gives both spines of a FatTree the same node description, as
// real switches often share a factory one; only the GUID tells them apart.
func dupSpines(netlist string) string {
	re := regexp.MustCompile(`(?m)^(Switch\t\d+ "spine\d+")$`)
	return re.ReplaceAllString(netlist, `$1 # "MF0;SwitchIB Mellanox Technologies"`)
}

// oneX makes node0003's cable train at 1X, declared on both ends.
func oneX(netlist string) string {
	netlist = strings.Replace(netlist, "[3]\t\"node0003\"[1]\n", "[3]\t\"node0003\"[1] w=1\n", 1)
	return strings.Replace(netlist, "[1]\t\"leaf01\"[3]\n", "[1]\t\"leaf01\"[3] w=1\n", 1)
}

func startFabric(t *testing.T) *testhost.IBSim {
	t.Helper()
	sim := testhost.StartIBSim(t, oneX(dupSpines(testhost.FatTree(2, 2, 3))))
	sim.StartSM("", 0)
	sim.WaitUp(30 * time.Second)
	return sim
}

func simRunner(sim *testhost.IBSim) fabric.Exec {
	return fabric.Exec{Dir: sim.Dir, Env: sim.Env(), Timeout: 30 * time.Second}
}

// lines returns the exposition lines of a metric whose labels contain all subs.
func lines(text, metric string, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, metric+"{") {
			continue
		}
		ok := true
		for _, s := range subs {
			// whole labels only: port="1" must not match remote_port="1"
			ok = ok && (strings.Contains(l, "{"+s) || strings.Contains(l, ","+s))
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// The fabric collector on ibsim and the real OpenSM: counters injected
// through the simulator's PMA (a saturated symbol error counter, receive
// errors, extended data counters) come back under their metrics, two
// switches with one description stay two series, a link trained at 1X
// shows its rate, and the fabric rules' findings are served.
func TestFabricCollectorOnIBSim(t *testing.T) {
	sim := startFabric(t)
	sim.Console(`PerformanceSet "node0001"[1] PortCounters.SymbolErrorCounter=65535`)
	sim.Console(`PerformanceSet "spine01"[1] PortCounters.PortRcvErrors=7`)
	sim.Console(`PerformanceSet "node0002"[1] PortCountersExtended.PortXmitData=1000000`)

	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true,
		Fabric: true, FabricRunner: simRunner(sim), FabricWait: time.Minute, ScrapeTimeout: time.Minute})
	reg := e.Registry()
	text, _ := exposition(t, reg)
	lint(t, text)
	if v := success(t, reg, "fabric"); v != 1 {
		t.Fatalf("fabric collector failed:\n%s", text)
	}

	sym := lines(text, "rdmalab_fabric_symbol_error_total", `name="node0001"`, `port="1"`)
	if len(sym) != 1 || !strings.HasSuffix(sym[0], " 65535") {
		t.Errorf("node0001 symbol errors: %q", sym)
	}
	if sat := lines(text, "rdmalab_fabric_port_saturated", `name="node0001"`, `field="SymbolErrorCounter"`); len(sat) != 1 {
		t.Errorf("saturated counter not marked: %q", sat)
	}
	if rcv := lines(text, "rdmalab_fabric_port_errors_received_total", `port="1"`, `name="MF0;SwitchIB Mellanox Technologies"`); len(rcv) != 2 ||
		!(strings.HasSuffix(rcv[0], " 7") != strings.HasSuffix(rcv[1], " 7")) {
		t.Errorf("spine01 port 1 receive errors (and spine02's zero): %q", rcv)
	}
	if data := lines(text, "rdmalab_fabric_port_data_transmitted_bytes_total", `name="node0002"`); len(data) != 1 || !strings.Contains(data[0], " 4.00") {
		// ibsim adds its own MADs' few hundred words to what was set
		t.Errorf("node0002 data ×4, want 4.00…e+06: %q", data)
	}
	// Two switches, one description: two GUIDs, never a collision.
	guids := map[string]bool{}
	for _, l := range lines(text, "rdmalab_fabric_port_link_info", `name="MF0;SwitchIB Mellanox Technologies"`, `port="1"`) {
		guids[regexp.MustCompile(`guid="([^"]+)"`).FindStringSubmatch(l)[1]] = true
	}
	if len(guids) != 2 {
		t.Errorf("duplicate switch descriptions: %d GUIDs, want 2:\n%s", len(guids), strings.Join(lines(text, "rdmalab_fabric_port_link_info", `name="MF0;SwitchIB Mellanox Technologies"`), "\n"))
	}
	if n := lines(text, "rdmalab_fabric_port_active", `name="node0006"`, `port="1"`); len(n) != 1 || !strings.HasSuffix(n[0], " 1") {
		t.Errorf("node0006 active: %q", n)
	}
	if rate := lines(text, "rdmalab_fabric_port_rate_bytes_per_second", `name="node0006"`); len(rate) != 1 || !strings.HasSuffix(rate[0], " 1.5e+10") {
		t.Errorf("12X QDR = 120 Gb/s = 1.5e10 B/s: %q", rate)
	}
	// The degraded link: its rate and fabric check's finding.
	if rate := lines(text, "rdmalab_fabric_port_rate_bytes_per_second", `name="node0003"`); len(rate) != 1 || !strings.HasSuffix(rate[0], " 1.25e+09") {
		t.Errorf("1X QDR = 10 Gb/s: %q", rate)
	}
	if f := lines(text, "rdmalab_finding", `check="fabric.link.width"`, `severity="fail"`); len(f) != 1 || !strings.Contains(f[0], "node0003") {
		t.Errorf("fabric.link.width findings: %q", f)
	}
	if f := lines(text, "rdmalab_finding", `check="fabric.port.errors"`, `severity="fail"`); len(f) != 2 {
		t.Errorf("fabric.port.errors findings: %q", f)
	}
	if sm := lines(text, "rdmalab_fabric_subnet_manager_info", `state="MASTER"`); len(sm) != 1 {
		t.Errorf("subnet manager: %q", sm)
	}

	// The one-shot mode writes the same metrics as a node_exporter textfile.
	path := filepath.Join(t.TempDir(), "rdmalab.prom")
	must(t, e.WriteTextfile(path))
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(f)
	must(t, err)
	if _, ok := mfs["rdmalab_fabric_symbol_error_total"]; !ok {
		t.Errorf("textfile lacks the fabric counters")
	}
}

// slowRunner makes every discovery after the first take extra time.
type slowRunner struct {
	fabric.Runner
	scans atomic.Int32
	delay time.Duration
}

func (s *slowRunner) Run(ctx context.Context, name string, args ...string) (fabric.Output, error) {
	if name == "ibnetdiscover" && s.scans.Add(1) > 1 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return fabric.Output{}, ctx.Err()
		}
	}
	return s.Runner.Run(ctx, name, args...)
}

// A scrape never waits for a slow fabric scan: once a result exists, it is
// served at once while the next scan runs, and the one after gets the new one.
func TestFabricServesCachedWhileScanning(t *testing.T) {
	sim := startFabric(t)
	slow := &slowRunner{Runner: simRunner(sim), delay: 3 * time.Second}
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true, Now: time.Now,
		Fabric: true, FabricRunner: slow, FabricInterval: 500 * time.Millisecond, FabricWait: time.Minute})
	reg := e.Registry()
	scanAt := func() string {
		text, err := gatherText(reg)
		must(t, err)
		l := regexp.MustCompile(`(?m)^rdmalab_fabric_scan_timestamp_seconds (\S+)$`).FindStringSubmatch(text)
		if l == nil {
			t.Fatalf("no scan timestamp:\n%s", text)
		}
		return l[1]
	}
	first := scanAt()
	time.Sleep(600 * time.Millisecond) // stale now: the next scrape starts a (slow) scan
	start := time.Now()
	if again := scanAt(); again != first {
		t.Errorf("a scan finished at once despite the delay: %s → %s", first, again)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("scrape waited %s for a scan in flight", d)
	}
	deadline := time.Now().Add(30 * time.Second)
	for scanAt() == first {
		if time.Now().After(deadline) {
			t.Fatal("the background scan never replaced the cached result")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func gatherText(g interface {
	Gather() ([]*dto.MetricFamily, error)
}) (string, error) {
	mfs, err := g.Gather()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// One port whose PMA drops every MAD (ibsim's Error command on the
// PortCounters attribute): that port alone is unknown, with the MAD error
// in its finding's evidence, and every other port keeps its counters.
func TestFabricDroppedMADIsOnePortUnknown(t *testing.T) {
	sim := startFabric(t)
	sim.Console(`Error "node0002"[1] 100 0x12`)
	res, err := ScanFabric(context.Background(), simRunner(sim), fabriccheck.Options{})
	must(t, err)
	if res.snap.CounterError != "" {
		t.Fatalf("one dropped MAD failed every port's counters: %s", res.snap.CounterError)
	}
	var failed []string
	for _, p := range res.snap.Ports {
		if p.CounterError != "" {
			failed = append(failed, p.NodeDesc+" "+strconv.Itoa(p.Num)+": "+p.CounterError)
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "node0002 1: ") || !strings.Contains(failed[0], "failed") {
		t.Fatalf("want node0002 port 1 alone unknown, got %q", failed)
	}
	t.Logf("%s", failed[0])
	var unknown []check.Finding
	for _, f := range res.findings {
		if f.Check == "fabric.port.errors" && f.Outcome == check.Unknown {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) != 1 || !strings.Contains(unknown[0].Subject, "node0002") || len(unknown[0].Evidence) == 0 || !strings.Contains(unknown[0].Evidence[0].Value, "failed") {
		t.Fatalf("want one unknown finding for node0002 with the MAD error: %+v", unknown)
	}
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true,
		Fabric: true, FabricRunner: simRunner(sim), FabricWait: time.Minute, ScrapeTimeout: time.Minute})
	text, _ := exposition(t, e.Registry())
	if got := lines(text, "rdmalab_fabric_symbol_error_total", `name="node0002"`, `port="1"`); len(got) != 0 {
		t.Errorf("node0002 port 1's error counters are unknown, yet served: %q", got)
	}
	if got := lines(text, "rdmalab_fabric_symbol_error_total", `name="node0003"`, `port="1"`); len(got) != 1 {
		t.Errorf("node0003 port 1 lost its counters with node0002's dropped MAD: %q", got)
	}
	if !strings.Contains(text, `rdmalab_finding{check="fabric.port.errors",severity="unknown",subject="node0002`) {
		t.Errorf("no unknown finding for node0002:\n%s", grep(text, "rdmalab_finding{"))
	}
}

// Nodes describing themselves with iblinkinfo's own syntax (issue 35: one
// such node used to fail every scan) leave the fabric collector serving:
// every port's series, the degraded link's rate and its one finding.
func TestFabricCollectorForgedDescriptions(t *testing.T) {
	forged := map[string]string{
		"leaf01":   `q\te 9 9[  ] ==( 1X 2.5 Gbps`,
		"node0001": `a 3 1[ ] ==(12X 10.0 Gbps Active/ LinkUp)==> 1 2[ ] b`,
	}
	netlist := oneX(dupSpines(testhost.FatTree(2, 2, 3)))
	for id, desc := range forged {
		re := regexp.MustCompile(`(?m)^((?:Switch|Hca)\t\d+ "` + id + `")$`)
		netlist = re.ReplaceAllString(netlist, `$1 # "`+desc+`"`)
	}
	sim := testhost.StartIBSim(t, netlist)
	sim.StartSM("", 0)
	sim.WaitUp(30 * time.Second)
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true,
		Fabric: true, FabricRunner: simRunner(sim), FabricWait: time.Minute, ScrapeTimeout: time.Minute})
	reg := e.Registry()
	text, _ := exposition(t, reg)
	lint(t, text)
	if v := success(t, reg, "fabric"); v != 1 {
		t.Fatalf("fabric collector failed:\n%s", grep(text, "rdmalab_scrape"))
	}
	// 4 switches' and 6 CAs' ports: every one served.
	if n := len(lines(text, "rdmalab_fabric_port_active")); n < 6+2*7+2*2 {
		t.Errorf("%d ports served:\n%s", n, grep(text, "rdmalab_fabric_port_active"))
	}
	if rate := lines(text, "rdmalab_fabric_port_rate_bytes_per_second", `name="node0003"`); len(rate) != 1 || !strings.HasSuffix(rate[0], " 1.25e+09") {
		t.Errorf("node0003 at 1X QDR = 10 Gb/s: %q", rate)
	}
	if rate := lines(text, "rdmalab_fabric_port_rate_bytes_per_second", `port="1"`, `name="`+strings.ReplaceAll(forged["node0001"], `\`, `\\`)+`"`); len(rate) != 1 || !strings.HasSuffix(rate[0], " 1.5e+10") {
		t.Errorf("node0001 at 12X QDR under its forged description: %q", rate)
	}
	if f := lines(text, "rdmalab_finding", `check="fabric.link.width"`, `severity="fail"`); len(f) != 1 || !strings.Contains(f[0], "node0003") {
		t.Errorf("fabric.link.width findings: %q", f)
	}
	if f := lines(text, "rdmalab_finding", `check="fabric.parse.unreadable"`); len(f) != 0 {
		t.Errorf("unreadable lines: %q", f)
	}
}

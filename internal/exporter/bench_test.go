package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A scrape of the 8-NIC HGX tree: the ports read afresh, the topology
// (and the findings) served from their cache, as on every scrape but the
// first of each interval.
func BenchmarkScrapeHGX(b *testing.B) {
	root := testhost.WriteTree(b, testhost.HGX())
	for _, c := range []struct {
		name       string
		noFindings bool
	}{{"no-findings", true}, {"default", false}} {
		b.Run(c.name, func(b *testing.B) {
			reg := newExporter(b, Options{Root: root, NoFindings: c.noFindings}).Registry()
			if _, err := reg.Gather(); err != nil { // the first evaluates the findings
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A 1,024-HCA fat tree on ibsim with OpenSM (32 leaves of 32 hosts, 8
// spines): one fabric scan (discovery, links, error and data counters of
// every port, SMs, rules), and a scrape that serves the cached scan.
//
//	go test ./internal/exporter -run '^$' -bench ScrapeFabric1024 -benchtime 3x
func BenchmarkScrapeFabric1024(b *testing.B) {
	testhost.RequireTool(b, "ibsim")
	sim := testhost.StartIBSim(b, testhost.FatTree(8, 32, 32))
	sim.StartSM("", 0)
	sim.WaitUp(5 * time.Minute)
	r := simRunner(sim)
	r.Timeout = 5 * time.Minute
	var last fabricResult
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			res, err := ScanFabric(context.Background(), r, fabriccheck.Options{})
			if err != nil {
				b.Fatal(err)
			}
			last = res
		}
		b.ReportMetric(float64(len(last.snap.Ports)), "ports")
		b.ReportMetric(float64(len(last.data)), "ports-with-data")
	})
	b.Run("scrape-cached", func(b *testing.B) {
		reg := newExporter(b, Options{Root: testhost.WriteTree(b, testhost.R730()), NoFindings: true,
			Fabric: true, FabricRunner: r, FabricInterval: time.Hour, FabricWait: 5 * time.Minute, ScrapeTimeout: 5 * time.Minute}).Registry()
		mfs, err := reg.Gather() // waits for the first scan
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			n += len(mf.GetMetric())
		}
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n), "series")
	})
}

// scrapeOnce fetches url (accepting gzip, as Prometheus does) and returns
// how long it took and the body.
func scrapeOnce(url string) (time.Duration, string, error) {
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != 200 {
		return 0, "", fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return took, string(b), nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

var sampleRE = regexp.MustCompile(`(?m)^(\w+)\{([^}]*)\} `)

// portSamples returns the samples of text whose name starts with prefix
// and that carry device and port labels, as "suffix device port".
func portSamples(text, prefix string) map[string]bool {
	out := map[string]bool{}
	for _, m := range sampleRE.FindAllStringSubmatch(text, -1) {
		name, ok := strings.CutPrefix(m[1], prefix)
		if !ok || name == "info" {
			continue // info carries other labels in each exporter
		}
		var dev, port string
		for _, l := range strings.Split(m[2], ",") {
			k, v, _ := strings.Cut(l, "=")
			switch k {
			case "device":
				dev = v
			case "port":
				port = v
			}
		}
		if dev != "" && port != "" {
			out[name+" "+dev+" "+port] = true
		}
	}
	return out
}

// Scrape time of rdmalab's exporter beside Debian's node_exporter with
// only its infiniband collector, over HTTP on loopback, on the same tree
// (the 8-HCA HGX and seed-000), alternating, many scrapes each; prints both
// medians and the ratio, and checks that rdmalab exports every port
// counter node_exporter does. A measurement, not a pass/fail test:
//
//	RDMALAB_BENCH=1 go test ./internal/exporter -run ScrapeVsNodeExporter -v -count=1
func TestScrapeVsNodeExporter(t *testing.T) {
	if os.Getenv("RDMALAB_BENCH") == "" {
		t.Skip("a benchmark: set RDMALAB_BENCH=1")
	}
	ne := testhost.RequireTool(t, "prometheus-node-exporter")
	rounds := 201
	if s := os.Getenv("RDMALAB_BENCH_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, tree := range []struct {
		name string
		m    testhost.Machine
	}{{"hgx-h200 (8 HCAs)", testhost.HGX()}, {"seed-000", testhost.Seed000()}} {
		t.Run(tree.name, func(t *testing.T) { scrapeVsNodeExporter(t, ne, tree.name, testhost.WriteTree(t, tree.m), rounds) })
	}
}

func scrapeVsNodeExporter(t *testing.T, ne, treeName, root string, rounds int) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(ne, "--path.sysfs="+filepath.Join(root, "sys"), "--path.procfs="+filepath.Join(root, "proc"),
		"--collector.disable-defaults", "--collector.infiniband", "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})

	ctx, cancel := context.WithCancel(context.Background())
	var servers []chan error
	t.Cleanup(func() {
		cancel()
		for _, s := range servers {
			<-s
		}
	})
	serve := func(o Options) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		done := make(chan error, 1)
		servers = append(servers, done)
		e := newExporter(t, o)
		go func() { done <- e.Serve(ctx, l, "") }()
		return "http://" + l.Addr().String() + "/metrics"
	}
	targets := []struct{ name, url, prefix string }{
		{"node_exporter (infiniband collector)", "http://" + addr + "/metrics", "node_infiniband_"},
		{"rdmalab exporter (--findings.interval 0)", serve(Options{Root: root, NoFindings: true}), "rdmalab_infiniband_"},
		{"rdmalab exporter (default, findings cached)", serve(Options{Root: root}), "rdmalab_infiniband_"},
	}
	deadline := time.Now().Add(30 * time.Second)
	bodies := make([]string, len(targets))
	for i, tg := range targets { // warm up; node_exporter may still be starting
		for {
			_, body, err := scrapeOnce(tg.url)
			if err == nil {
				bodies[i] = body
				break
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	neSamples := portSamples(bodies[0], targets[0].prefix)
	if len(neSamples) == 0 {
		t.Fatal("node_exporter exported no node_infiniband_ port samples from the tree: nothing to compare")
	}
	for i := 1; i < len(targets); i++ {
		got := portSamples(bodies[i], targets[i].prefix)
		var missing []string
		for k := range neSamples {
			if !got[k] {
				missing = append(missing, k)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s lacks %d port samples node_exporter has, e.g. %q", targets[i].name, len(missing), missing[:min(5, len(missing))])
		}
	}
	times := make([][]time.Duration, len(targets))
	for range rounds {
		for i, tg := range targets {
			d, _, err := scrapeOnce(tg.url)
			must(t, err)
			times[i] = append(times[i], d)
		}
	}
	base := median(times[0])
	for i, tg := range targets {
		m := median(times[i])
		fmt.Printf("%-18s %-44s median %7.3f ms over %d alternating scrapes, %4d port samples, ratio to node_exporter %.2f\n",
			treeName, tg.name, float64(m.Microseconds())/1000, rounds, len(portSamples(bodies[i], tg.prefix)), float64(m)/float64(base))
	}
}

// One /metrics request of the HGX tree through the handler (gzip
// accepted, as Prometheus asks), without the network:
//
//	go test ./internal/exporter -run '^$' -bench ScrapeHTTP -benchmem
func BenchmarkScrapeHTTP(b *testing.B) {
	e := newExporter(b, Options{Root: testhost.WriteTree(b, testhost.HGX()), NoFindings: true})
	h, err := e.Handler()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("HTTP %d", w.Code)
		}
	}
}

package exporter

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func phyFacts(t testing.TB) []phy.Port {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "mlxlink", "yuuki-rdma-exporter_mft-4.34.1_cx7_400GbE-DR4_module-counters-fec-histogram-serdes-eye_json_serial-redacted.json"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := phy.Named(b, phy.Dir+"/mlx5_0-1.mlxlink.json", "")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// phySample finds one sample by metric name and label values.
func phySample(mfs []*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			if m.Gauge != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// The poller's facts are served on scrapes, and scrapes never poll: with
// an hour's interval, twenty scrapes leave the poll count at one. A tree's
// saved outputs are what the default poll reads off a live host.
func TestPHYPollerServesLastPoll(t *testing.T) {
	facts := phyFacts(t)
	var polls atomic.Int32
	poll := func(context.Context) ([]phy.Port, error) { polls.Add(1); return facts, nil }
	reg := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true, PHY: true, PHYInterval: time.Hour, PHYPoll: poll}).Registry()
	deadline := time.Now().Add(30 * time.Second)
	var mfs []*dto.MetricFamily
	for {
		var err error
		if mfs, err = reg.Gather(); err != nil {
			t.Fatal(err)
		}
		if _, ok := phySample(mfs, "rdmalab_phy_polled_timestamp_seconds", nil); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	port := map[string]string{"device": "mlx5_0", "port": "1"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rdmalab_phy_effective_ber", port, 0},
		{"rdmalab_phy_raw_ber", map[string]string{"device": "mlx5_0", "lane": "1"}, 1e-9},
		{"rdmalab_phy_raw_errors_total", map[string]string{"device": "mlx5_0", "lane": "1"}, 33464964},
		{"rdmalab_phy_counters_window_seconds", port, 5710.4 * 60},
		{"rdmalab_phy_fec_histogram_codewords", map[string]string{"device": "mlx5_0", "bin": "8"}, 3},
		{"rdmalab_phy_module_reading", map[string]string{"device": "mlx5_0", "quantity": "voltage", "channel": "0"}, 3.2355},
		{"rdmalab_phy_module_threshold", map[string]string{"device": "mlx5_0", "quantity": "rx power", "bound": "alarm_low"}, -9.914},
	} {
		got, ok := phySample(mfs, c.name, c.labels)
		if !ok || math.Abs(got-c.want) > 1e-4*math.Abs(c.want)+1e-15 {
			t.Errorf("%s%v = %v (%v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for range 20 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	if n := polls.Load(); n != 1 {
		t.Errorf("%d polls for 21 scrapes: a scrape polled", n)
	}
}

// Scrape time with the PHY poller polling stays within 10% of scrape
// time without it polling: the poller is busy back to back (each poll
// waits per device as mlxlink takes), and the other exporter serves the
// same 8 ports' facts from a poll made once. So the comparison is the
// polling alone, never inside a scrape; what serving the samples costs
// is BenchmarkScrapePHY's. The two exporters are scraped in ABBA order so
// load and order fall on both alike; each round's median is taken and
// the best round of each compared (a loaded machine's stalls are not the
// poller's). Scrapes go through /metrics, the text path Prometheus uses.
func TestPHYPollerOutOfBand(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	facts := phyFacts(t)
	var polls atomic.Int32
	busy := func(ctx context.Context) ([]phy.Port, error) {
		var out []phy.Port
		for i := range 8 {
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case <-time.After(25 * time.Millisecond):
			}
			for _, p := range facts {
				p.Device = "mlx5_" + string(rune('0'+i))
				out = append(out, p)
			}
		}
		polls.Add(1)
		return out, nil
	}
	handler := func(o Options) http.Handler {
		h, err := newExporter(t, o).Handler()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var eight []phy.Port
	for i := range 8 {
		for _, p := range facts {
			p.Device = "mlx5_" + string(rune('0'+i))
			eight = append(eight, p)
		}
	}
	idle := func(context.Context) ([]phy.Port, error) { return eight, nil }
	off := handler(Options{Root: root, NoFindings: true, PHY: true, PHYInterval: time.Hour, PHYPoll: idle})
	on := handler(Options{Root: root, NoFindings: true, PHY: true, PHYInterval: time.Millisecond, PHYPoll: busy})
	for deadline := time.Now().Add(30 * time.Second); polls.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	get := func(h http.Handler) string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 200 {
			t.Fatalf("scrape: %d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(get(off), "rdmalab_phy_polled") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if body := get(on); !strings.Contains(body, `rdmalab_phy_effective_ber{device="mlx5_7"`) {
		t.Fatal("the poller's facts are not served")
	}
	scrape := func(h http.Handler) time.Duration {
		start := time.Now()
		get(h)
		return time.Since(start)
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	// A poll inside a scrape would add 200 ms (8 × 25 ms) to a 1-5 ms
	// scrape; a loaded 2-core machine's noise is tens of percent, and a
	// busy poller takes CPU from the scrape however out of band it runs.
	// So scrapes of the two alternate (no drift favours one), each round's
	// median is taken, the best round's medians compared, the measurement
	// is taken up to five times and must come within 10% once; the 10%
	// never below 500 µs, still 400 times less than one poll would add.
	for attempt := 1; ; attempt++ {
		bestOff, bestOn := time.Hour, time.Hour
		before := polls.Load()
		for range 7 {
			var tOff, tOn []time.Duration
			for range 15 {
				tOff = append(tOff, scrape(off))
				tOn = append(tOn, scrape(on), scrape(on))
				tOff = append(tOff, scrape(off))
			}
			bestOff, bestOn = min(bestOff, med(tOff)), min(bestOn, med(tOn))
		}
		t.Logf("attempt %d: scrape (best round's median) %v with the PHY poller idle, %v with it busy (%d polls during the scrapes)", attempt, bestOff, bestOn, polls.Load()-before)
		if polls.Load() == before {
			t.Fatal("the poller was not busy while scraped")
		}
		if bestOn <= bestOff+max(bestOff/10, 500*time.Microsecond) {
			return
		}
		if attempt == 5 {
			t.Fatalf("scrape %v with the PHY poller polling, %v without: more than 10%% (and 500 µs) slower", bestOn, bestOff)
		}
	}
}

// BenchmarkScrapePHY: a scrape of the HGX tree with the PHY poller off
// and on (serving 8 ports' facts), through /metrics (text) and the
// registry (what a protobuf scrape uses). The difference is the cost of
// serving the samples; the polling never enters a scrape
// (TestPHYPollerOutOfBand).
func BenchmarkScrapePHY(b *testing.B) {
	root := testhost.WriteTree(b, testhost.HGX())
	facts := phyFacts(b)
	var eight []phy.Port
	for i := range 8 {
		for _, p := range facts {
			p.Device = "mlx5_" + string(rune('0'+i))
			eight = append(eight, p)
		}
	}
	for _, c := range []struct {
		name string
		on   bool
	}{{"off", false}, {"on", true}} {
		e := newExporter(b, Options{Root: root, NoFindings: true, PHY: c.on, PHYInterval: time.Hour,
			PHYPoll: func(context.Context) ([]phy.Port, error) { return eight, nil }})
		h, err := e.Handler()
		if err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); c.on && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
			if strings.Contains(w.Body.String(), "rdmalab_phy_polled") {
				break
			}
		}
		b.Run("text-"+c.name, func(b *testing.B) {
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
			}
		})
		reg := e.Registry()
		b.Run("registry-"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

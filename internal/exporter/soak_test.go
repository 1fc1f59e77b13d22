package exporter

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A bounded soak: two clients scrape the HGX tree at 10/s each over
// loopback for RDMALAB_SOAK (e.g. 3m); RSS and goroutines are sampled
// every 10 s and must stay flat after the first minute's warm-up. Prints
// the samples for docs/exporter.md:
//
//	RDMALAB_SOAK=3m go test ./internal/exporter -run Soak -v -count=1 -timeout 10m
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("RDMALAB_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("a soak: set RDMALAB_SOAK to a duration, e.g. 3m")
	}
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.HGX()), Now: time.Now, FindingsInterval: 10 * time.Second})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, l, "") }()
	url := "http://" + l.Addr().String() + "/metrics"

	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	var mu sync.Mutex
	scrapes, failed := 0, 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for time.Now().Before(stop) {
				<-tick.C
				_, body, err := scrapeOnce(url)
				ok := err == nil && strings.Contains(body, `rdmalab_scrape_collector_success{collector="host"} 1`) &&
					strings.Contains(body, `rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_7",port="1"}`)
				mu.Lock()
				scrapes++
				if !ok {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	type sample struct {
		at         time.Duration
		rssKB, gor int
	}
	var samples []sample
	start := time.Now()
	for time.Now().Before(stop) {
		time.Sleep(10 * time.Second)
		runtime.GC() // RSS after a collection: what is still held
		samples = append(samples, sample{time.Since(start).Round(time.Second), rssKB(t), runtime.NumGoroutine()})
		s := samples[len(samples)-1]
		fmt.Printf("soak %6s  RSS %6d kB  goroutines %3d\n", s.at, s.rssKB, s.gor)
	}
	wg.Wait()
	cancel()
	must(t, <-served)
	fmt.Printf("soak: %d scrapes in %s from 2 clients, %d failed\n", scrapes, d, failed)
	if failed > 0 {
		t.Errorf("%d of %d scrapes failed", failed, scrapes)
	}
	// Flat after warm-up: the fewest goroutines and least RSS of the last
	// three samples against those of the three after the first minute (a
	// sample taken during a scrape counts its goroutines too).
	var after []sample
	for _, s := range samples {
		if s.at >= time.Minute {
			after = append(after, s)
		}
	}
	if len(after) < 6 {
		return
	}
	least := func(ss []sample) (rss, gor int) {
		rss, gor = ss[0].rssKB, ss[0].gor
		for _, s := range ss[1:] {
			rss, gor = min(rss, s.rssKB), min(gor, s.gor)
		}
		return rss, gor
	}
	baseRSS, baseGor := least(after[:3])
	lastRSS, lastGor := least(after[len(after)-3:])
	if lastGor > baseGor+2 {
		t.Errorf("goroutines grew from %d to %d", baseGor, lastGor)
	}
	if float64(lastRSS) > 1.2*float64(baseRSS)+2048 {
		t.Errorf("RSS grew from %d kB to %d kB", baseRSS, lastRSS)
	}
}

func rssKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

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
	// Flat after warm-up: the last samples against the first one after a minute.
	var base *sample
	for i := range samples {
		if samples[i].at >= time.Minute {
			base = &samples[i]
			break
		}
	}
	if base == nil {
		return
	}
	last := samples[len(samples)-1]
	if last.gor > base.gor+4 {
		t.Errorf("goroutines grew from %d to %d", base.gor, last.gor)
	}
	if float64(last.rssKB) > 1.2*float64(base.rssKB)+2048 {
		t.Errorf("RSS grew from %d kB to %d kB", base.rssKB, last.rssKB)
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

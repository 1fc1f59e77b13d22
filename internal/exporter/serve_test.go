package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
	"golang.org/x/crypto/bcrypt"
)

// The listener takes exporter-toolkit's web configuration: with basic auth
// a scrape without the password is refused. Concurrent scrapes share the
// cached findings safely (run with -race).
func TestServeBasicAuthAndConcurrentScrapes(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	must(t, err)
	cfg := filepath.Join(t.TempDir(), "web.yml")
	must(t, os.WriteFile(cfg, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600))

	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.Seed000())})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, l, cfg) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + l.Addr().String() + "/metrics"

	resp, err := http.Get(url)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a password: HTTP %d, want 401", resp.StatusCode)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", url, nil)
			req.SetBasicAuth("prometheus", "s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `rdmalab_scrape_collector_success{collector="findings"} 1`) {
				t.Errorf("HTTP %d:\n%s", resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
}

// Simultaneous scrapes (two Prometheus replicas, or fifty clients) share
// one collection and all succeed: every scrape has every collector's
// success at 1 and every port's counters, as many samples as a lone scrape.
// Run under -race by scripts/test.
func TestConcurrentScrapesAllSucceed(t *testing.T) {
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.HGX())})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, l, "") }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + l.Addr().String() + "/metrics"

	scrape := func() (string, error) {
		resp, err := http.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return string(b), err
	}
	first, err := scrape()
	must(t, err)
	portSamples := strings.Count(first, "\nrdmalab_infiniband_")
	var ports []string
	for dev := range 8 {
		ports = append(ports, fmt.Sprintf(`rdmalab_infiniband_port_data_received_bytes_total{device="mlx5_%d",port="1"}`, dev))
	}
	check := func(text string) error {
		for _, c := range []string{"host", "topology", "findings"} {
			if !strings.Contains(text, `rdmalab_scrape_collector_success{collector="`+c+`"} 1`) {
				return fmt.Errorf("collector %s did not succeed:\n%s", c, grep(text, "collector_success"))
			}
		}
		for _, p := range ports {
			if !strings.Contains(text, p) {
				return fmt.Errorf("no %s", p)
			}
		}
		if n := strings.Count(text, "\nrdmalab_infiniband_"); n != portSamples {
			return fmt.Errorf("%d port samples, a lone scrape had %d", n, portSamples)
		}
		return nil
	}
	must(t, check(first))

	for _, c := range []struct{ clients, each int }{{2, 100}, {50, 8}} {
		if testing.Short() { // the race run: fewer, still simultaneous
			c.each = max(c.each/8, 2)
		}
		t.Run(fmt.Sprintf("%d-clients", c.clients), func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			failed := 0
			for range c.clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range c.each {
						text, err := scrape()
						if err == nil {
							err = check(text)
						}
						if err != nil {
							mu.Lock()
							if failed++; failed <= 3 {
								t.Error(err)
							}
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if failed > 0 {
				t.Errorf("%d of %d scrapes failed", failed, c.clients*c.each)
			}
		})
	}
}

package exporter

import (
	"context"
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

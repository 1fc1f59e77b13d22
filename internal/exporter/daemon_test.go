package exporter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// serve starts e on a loopback port and returns its address; the server
// stops when the test ends.
func serve(t *testing.T, e *Exporter) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx, l, "") }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

// scrapeText gets /metrics over HTTP in the text format Prometheus asks for.
func scrapeText(t *testing.T, addr string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

// idleConn opens a connection, makes one keep-alive request on it and
// leaves it idle; closed reports when the server closes it.
func idleConn(t *testing.T, addr string) (net.Conn, <-chan struct{}) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// Then wait for the server to hang up the idle connection.
		io.Copy(io.Discard, r)
	}()
	return c, closed
}

// 1,000 idle keep-alive connections are closed by the server after the
// idle timeout: none can hold the daemon's memory for ever.
func TestIdleConnectionsClosed(t *testing.T) {
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true, IdleTimeout: time.Second, MaxConnections: 2000})
	addr := serve(t, e)
	var closed []<-chan struct{}
	for range 1000 {
		c, done := idleConn(t, addr)
		defer c.Close()
		closed = append(closed, done)
	}
	deadline := time.After(90 * time.Second)
	for i, done := range closed {
		select {
		case <-done:
		case <-deadline:
			t.Fatalf("connection %d of 1000 still open 90 s after a 1 s idle timeout", i)
		}
	}
}

// At most MaxConnections are served at once: one more waits until an
// idle one is closed, then is served.
func TestConnectionCap(t *testing.T) {
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true, IdleTimeout: 3 * time.Second, MaxConnections: 5})
	addr := serve(t, e)
	for range 5 {
		c, _ := idleConn(t, addr)
		defer c.Close()
	}
	time.Sleep(200 * time.Millisecond) // the five are accepted and idle
	answered := make(chan time.Time, 1)
	start := time.Now()
	go func() {
		c, done := idleConn(t, addr)
		defer c.Close()
		<-done
		answered <- time.Now()
	}()
	select {
	case at := <-answered:
		if at.Sub(start) < time.Second {
			t.Errorf("a sixth connection was served at once past a cap of 5 (%s)", at.Sub(start))
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the sixth connection was never served")
	}
}

// Each metric family once, whatever emits it: with the fabric collector
// rdmalab_finding and rdmalab_findings come from the host's findings and
// the fabric's, and the text served over HTTP must still pass promtool
// check metrics (it refused "second HELP line").
func TestOneFamilyOnceWithAndWithoutFabric(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	plain := newExporter(t, Options{Root: root, ScrapeTimeout: time.Minute})
	text := scrapeText(t, serve(t, plain))
	onceEach(t, "without --fabric", text)
	lint(t, text)

	sim := startFabric(t)
	withFabric := newExporter(t, Options{Root: root, ScrapeTimeout: time.Minute,
		Fabric: true, FabricRunner: simRunner(sim), FabricWait: time.Minute})
	text = scrapeText(t, serve(t, withFabric))
	if len(lines(text, "rdmalab_findings", `source="fabric"`)) == 0 || len(lines(text, "rdmalab_findings", `source="host"`)) == 0 {
		t.Fatalf("want findings from both the host and the fabric:\n%s", text)
	}
	onceEach(t, "with --fabric", text)
	lint(t, text)
}

func onceEach(t *testing.T, what, text string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" && f[1] == "HELP" {
			if seen[f[2]] {
				t.Errorf("%s: %s has a second HELP line", what, f[2])
			}
			seen[f[2]] = true
		}
	}
}

// SIGHUP's answer is one log line: nothing to reload, the web
// configuration re-read, or that it no longer validates (serving goes on).
func TestReloadLogsOneLine(t *testing.T) {
	var log strings.Builder
	e := newExporter(t, Options{Root: testhost.WriteTree(t, testhost.R730()), NoFindings: true,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	cfg := filepath.Join(t.TempDir(), "web.yml")
	must(t, os.WriteFile(cfg, []byte("basic_auth_users: {}\n"), 0o600))
	for _, c := range []struct{ config, content, want string }{
		{"", "", "SIGHUP: nothing to reload"},
		{cfg, "basic_auth_users: {}\n", "SIGHUP: web configuration re-read"},
		{cfg, "tls_server_config: [\n", "SIGHUP: the web configuration no longer validates"},
	} {
		if c.content != "" {
			must(t, os.WriteFile(cfg, []byte(c.content), 0o600))
		}
		log.Reset()
		e.Reload(c.config)
		if strings.Count(log.String(), "\n") != 1 || !strings.Contains(log.String(), c.want) {
			t.Errorf("%q: log %q, want one line with %q", c.content, log.String(), c.want)
		}
	}
}

package exporter

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

// Handler serves /metrics and a landing page linking to it.
func (e *Exporter) Handler() (http.Handler, error) {
	mux := http.NewServeMux()
	// ContinueOnError: a sample that cannot be gathered is dropped and
	// logged, the rest of the scrape is served.
	mux.Handle("/metrics", fastGzip(e.textHandler(promhttp.HandlerFor(e.Registry(), promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, ErrorLog: slogPrinter{e.log},
		DisableCompression: true,
	}))))
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name: "rdmalab exporter", Description: "RDMA ports, PCIe links, GPUDirect paths, doctor findings and the InfiniBand fabric",
		Links: []web.LandingLinks{{Address: "/metrics", Text: "Metrics"}},
	})
	if err != nil {
		return nil, err
	}
	mux.Handle("/", landing)
	return mux, nil
}

// gzipWriters are reused: a gzip writer's tables are some 800 kB to set up.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

// fastGzip compresses at gzip's fastest level when the scraper accepts
// gzip. promhttp's default level spent a quarter of a scrape's CPU here;
// the text format's repetitive lines compress nearly as well at level 1.
func fastGzip(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.ServeHTTP(w, r)
			return
		}
		gz := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(gz)
		gz.Reset(w)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		h.ServeHTTP(gzipResponse{w, gz}, r)
		gz.Close()
	})
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

type gzipResponse struct {
	http.ResponseWriter
	gz *gzip.Writer
}

func (g gzipResponse) Write(b []byte) (int, error) { return g.gz.Write(b) }

type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.l.Error(strings.TrimSpace(fmt.Sprintln(v...))) }

// Serve serves the exporter on l until ctx ends. webConfig is an
// exporter-toolkit web configuration file (TLS, basic auth), "" for none;
// exporter-toolkit reads it again for every connection, so an edited file
// takes effect without a restart. A daemon left running for months bounds
// what clients can hold: a request's headers must arrive within 10 s, a
// keep-alive connection idle for IdleTimeout is closed, and at most
// MaxConnections are served at once (the rest wait in the kernel's
// backlog).
func (e *Exporter) Serve(ctx context.Context, l net.Listener, webConfig string) error {
	h, err := e.Handler()
	if err != nil {
		return err
	}
	l = limitListener(l, e.maxConns)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: e.idle}
	done := make(chan error, 1)
	go func() {
		done <- web.Serve(l, srv, &web.FlagConfig{WebConfigFile: &webConfig}, e.log)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// Reload is the exporter's answer to SIGHUP: the web configuration is
// checked again (exporter-toolkit reads it anew for every connection, so an
// edited file already applies) and one line says what happened; the
// exporter keeps serving whatever the answer.
func (e *Exporter) Reload(webConfig string) {
	switch {
	case webConfig == "":
		e.log.Info("SIGHUP: nothing to reload (no --web.config.file); still serving")
	default:
		if err := web.Validate(webConfig); err != nil {
			e.log.Error("SIGHUP: the web configuration no longer validates; new connections fail until it is fixed; still serving", "file", userfile.Name(webConfig), "err", strings.Join(strings.Fields(err.Error()), " "))
			return
		}
		e.log.Info("SIGHUP: web configuration re-read; new connections use it; still serving", "file", userfile.Name(webConfig))
	}
}

// limitListener accepts at most n connections at once: Accept waits for
// one to close before taking another.
func limitListener(l net.Listener, n int) net.Listener {
	return &limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ListenAndServe listens on addr and serves until ctx ends.
func (e *Exporter) ListenAndServe(ctx context.Context, addr, webConfig string) error {
	if webConfig != "" {
		if err := web.Validate(webConfig); err != nil {
			return fmt.Errorf("--web.config.file %s: %w", webConfig, err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	e.log.Info("listening", "address", l.Addr().String())
	return e.Serve(ctx, l, webConfig)
}

// WriteTextfile gathers once and writes the metrics to path through
// userfile (a temporary file with a random dot-name that node_exporter's
// *.prom glob never reads, renamed into place), for node_exporter's
// textfile collector.
func (e *Exporter) WriteTextfile(path string) error {
	if !strings.HasSuffix(path, ".prom") {
		return fmt.Errorf("%s: node_exporter's textfile collector reads only *.prom files", userfile.Name(path))
	}
	if e.ras != nil {
		<-e.ras.first // one RAS poll, bounded by --nccl-ras.timeout
	}
	mfs, err := e.Registry().Gather()
	if err != nil {
		return fmt.Errorf("%s: gather: %w", userfile.Name(path), err)
	}
	return userfile.WriteAtomic(path, 0o644, func(w io.Writer) error {
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return err
			}
		}
		return nil
	})
}

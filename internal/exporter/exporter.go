// Package exporter is rdmalab's Prometheus exporter: per-port RDMA counters
// and link state of this host (read through the same inventory code as
// `rdmalab inventory`), doctor's findings evaluated on a cadence and served
// cached, and an optional fabric collector run from one node. Metrics are
// const metrics built on every scrape by custom collectors; one failing
// device or collector never blanks the others, and nothing is ever written
// to the host.
package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rdmalab/rdmalab/internal/buildinfo"
	"github.com/rdmalab/rdmalab/internal/inventory"
)

// Namespace prefixes every metric.
const Namespace = "rdmalab"

// A collector adds its metrics to ch. An error marks the collector failed
// for this scrape; whatever it sent before failing is still served.
type collector interface {
	update(ctx context.Context, ch chan<- prometheus.Metric) error
}

// Exporter is the prometheus.Collector that runs every enabled collector
// concurrently on each scrape and reports how each one did.
type Exporter struct {
	collectors map[string]collector
	host       *hostCollector
	phy        *phyPoller
	ras        *rasPoller
	timeout    time.Duration
	idle       time.Duration
	maxConns   int
	log        *slog.Logger
	cleanup    func()
}

var (
	scrapeDuration = newDesc(Namespace+"_scrape_collector_duration_seconds",
		"How long a collector took during this scrape.", []string{"collector"})
	scrapeSuccess = newDesc(Namespace+"_scrape_collector_success",
		"Whether a collector succeeded during this scrape (1) or failed (0); a failed collector's other metrics may be missing.", []string{"collector"})
	buildInfo = newDesc(Namespace+"_build_info",
		"Which rdmalab serves these metrics: always 1, labelled with its version, the commit it was built from and the Go version.", []string{"version", "revision", "goversion"})
)

// New builds an exporter from options. It opens o.Root the way inventory
// does (a tree, a copy of /sys/class/infiniband, a capture archive, which
// is unpacked until Close) and reads nothing else yet. Errors are
// *inventory.SourceError.
func New(o Options) (*Exporter, error) {
	o = o.withDefaults()
	fsys, cleanup, err := inventory.OpenFS(o.Root)
	if err != nil {
		return nil, err
	}
	e := &Exporter{collectors: map[string]collector{}, timeout: o.ScrapeTimeout, idle: o.IdleTimeout, maxConns: o.MaxConnections, log: o.Logger, cleanup: cleanup}
	e.host = newHostCollector(fsys, o)
	e.collectors["host"] = e.host
	topo := newTopologyCache(fsys, o)
	e.collectors["topology"] = &topologyCollector{cache: topo}
	if !o.NoFindings {
		e.collectors["findings"] = &findingsCollector{cache: topo}
	}
	if o.PHY {
		e.phy = newPHYPoller(fsys, o)
		e.collectors["phy"] = e.phy
	}
	if o.NCCLRAS != "" {
		e.ras = newRASPoller(o)
		e.collectors["nccl_ras"] = e.ras
	}
	if o.Fabric {
		if o.FabricRunner == nil {
			return nil, fmt.Errorf("fabric collector: no runner")
		}
		e.collectors["fabric"] = newFabricCollector(o)
	}
	return e, nil
}

// Close closes the files the host collector keeps open and removes what
// New unpacked.
func (e *Exporter) Close() {
	if e.phy != nil {
		e.phy.close()
	}
	if e.ras != nil {
		e.ras.close()
	}
	e.host.close()
	e.cleanup()
}

// Describe sends nothing: the exporter is an unchecked collector, since
// the metrics a host has depend on its devices and drivers.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	e.collect(ctx, ch)
}

// collect runs every collector not in skip concurrently and reports how
// each did.
func (e *Exporter) collect(ctx context.Context, ch chan<- prometheus.Metric, skip ...string) {
	b := buildinfo.Get()
	ch <- prometheus.MustNewConstMetric(buildInfo, prometheus.GaugeValue, 1, b.Version, b.Commit, b.GoVersion)
	var wg sync.WaitGroup
	for name, c := range e.collectors {
		if slices.Contains(skip, name) {
			continue
		}
		wg.Go(func() {
			start := time.Now()
			err := safely(func() error { return c.update(ctx, ch) })
			e.report(ch, name, outcome{time.Since(start), err})
		})
	}
	wg.Wait()
}

// report sends a collector's duration and success for this scrape.
func (e *Exporter) report(ch chan<- prometheus.Metric, name string, o outcome) {
	ok := 1.0
	if o.err != nil {
		ok = 0
		e.log.Warn("collector failed", "collector", name, "err", o.err)
	}
	ch <- prometheus.MustNewConstMetric(scrapeDuration, prometheus.GaugeValue, o.took.Seconds(), name)
	ch <- prometheus.MustNewConstMetric(scrapeSuccess, prometheus.GaugeValue, ok, name)
}

// safely turns a collector's panic into its own failure, so a parser bug
// on one odd device cannot take the other collectors' metrics with it.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// Registry returns a fresh registry holding only the exporter (no Go
// runtime metrics: they would drown the RDMA ones in the textfile mode).
func (e *Exporter) Registry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(e)
	return r
}

// emitter builds const metrics and keeps the first error instead of
// panicking: a label value a device made invalid drops that one sample.
// With labels set, each label set is made once (labelCache); with text
// set, samples are rendered into it instead of sent to ch.
type emitter struct {
	ch     chan<- prometheus.Metric
	text   *textBlock
	err    error
	labels *labelCache
}

// cachedMetric is a sample whose label pairs come from a labelCache.
type cachedMetric struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	counter bool
	v       float64
}

func (m *cachedMetric) Desc() *prometheus.Desc { return m.desc }

func (m *cachedMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.counter {
		out.Counter = &dto.Counter{Value: &m.v}
	} else {
		out.Gauge = &dto.Gauge{Value: &m.v}
	}
	return nil
}

func (m *emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	m.send(d, prometheus.GaugeValue, v, labels)
}

func (m *emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	m.send(d, prometheus.CounterValue, v, labels)
}

func (m *emitter) fail(d *prometheus.Desc, err error) {
	if m.err == nil {
		m.err = fmt.Errorf("%s: %w", d, err)
	}
}

func (m *emitter) send(d *prometheus.Desc, t prometheus.ValueType, v float64, labels []string) {
	if m.labels != nil {
		s, err := m.labels.get(d, t, labels)
		if err != nil {
			m.fail(d, err)
			return
		}
		if m.text != nil {
			m.text.add(d, t, v, s)
			return
		}
		m.ch <- &cachedMetric{desc: d, labels: s.pairs, counter: t == prometheus.CounterValue, v: v}
		return
	}
	metric, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m.fail(d, err)
		return
	}
	m.ch <- metric
}

// build runs emit once into a slice, for metrics made once per evaluation
// and replayed on every scrape until the next.
func build(emit func(m *emitter)) ([]prometheus.Metric, error) {
	ch := make(chan prometheus.Metric, 256)
	done := make(chan []prometheus.Metric)
	go func() {
		var out []prometheus.Metric
		for m := range ch {
			out = append(out, m)
		}
		done <- out
	}()
	m := &emitter{ch: ch}
	emit(m)
	close(ch)
	return <-done, m.err
}

// MetricNames is every metric name the exporter can emit, sorted: the
// deploy rules and dashboard are checked against it.
func MetricNames() []string { return metricNames() }

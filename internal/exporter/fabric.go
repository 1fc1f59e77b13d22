package exporter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// Fabric port metrics are labelled by node GUID and port: descriptions
// are not unique (two switches both called "MF0;switch" are common) and
// a label set that collides would fail the whole scrape.
var fabricPortLabels = []string{"guid", "name", "port"}

func fabricDesc(name, help string, labels ...string) *prometheus.Desc {
	return newDesc(prometheus.BuildFQName(Namespace, "fabric", name), help, append(append([]string{}, fabricPortLabels...), labels...))
}

var (
	fabricCounterDescs = func() map[string]*prometheus.Desc {
		m := map[string]*prometheus.Desc{}
		for _, c := range counters.Table {
			if c.PMA != "" {
				m[c.PMA] = fabricDesc(c.Metric, c.Help+" (PMA, queried over the fabric).")
			}
		}
		return m
	}()
	fabricStateDesc     = fabricDesc("port_active", "Whether the port's logical state is Active (1) or not (0).", "state")
	fabricRateDesc      = fabricDesc("port_rate_bytes_per_second", "Signalling rate the link trained at (width × lane rate), in bytes per second.")
	fabricLinkDesc      = fabricDesc("port_link_info", "The port's link: node type, width, speed and the remote end; value is always 1.", "node_type", "width", "speed", "remote_guid", "remote_name", "remote_port")
	fabricSaturatedDesc = fabricDesc("port_saturated", "A PMA counter sits at its field's maximum and has stopped counting: its true value is unknown. Present only when saturated.", "field")
	fabricSMDesc        = newDesc(Namespace+"_fabric_subnet_manager_info", "A subnet manager the fabric reports (saquery SMIR, else sminfo); value is always 1.", []string{"guid", "lid", "priority", "state"})
	fabricNodesDesc     = newDesc(Namespace+"_fabric_nodes", "Nodes discovered, by type.", []string{"type"})
	fabricScanAtDesc    = newDesc(Namespace+"_fabric_scan_timestamp_seconds", "When the fabric result served was gathered (scans are cached between scrapes).", nil)
	fabricScanDurDesc   = newDesc(Namespace+"_fabric_scan_duration_seconds", "How long the fabric scan served took.", nil)
)

// fabricResult is one fabric scan and what the rules made of it.
type fabricResult struct {
	snap     *fabric.Snapshot
	data     []fabric.PortErrors // ibqueryerrors --counters: every port whose PMA answered
	findings []check.Finding
	took     time.Duration
	// metrics are built once per scan and replayed on every scrape until
	// the next: a 1,024-HCA fabric is some 60,000 series.
	metrics []prometheus.Metric
	emitErr error
}

// fabricCollector serves the last fabric scan and starts a new one in the
// background when it is older than the interval: a scrape never waits for
// a large fabric, except the first, and that at most FabricWait.
type fabricCollector struct {
	cache *cached[fabricResult]
}

func newFabricCollector(o Options) collector {
	timeout := max(o.FabricInterval, 2*time.Minute)
	return &fabricCollector{cache: &cached[fabricResult]{
		interval: o.FabricInterval, wait: o.FabricWait, now: o.Now, evalTimeout: timeout,
		eval: func(ctx context.Context) (fabricResult, error) { return ScanFabric(ctx, o.FabricRunner, o.FabricCheck) },
	}}
}

// ScanFabric discovers the fabric once (fabric.Scan), reads every port's
// data counters from the same discovery cache, and applies the fabric rules.
func ScanFabric(ctx context.Context, r fabric.Runner, o fabriccheck.Options) (fabricResult, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "rdmalab-exporter-")
	if err != nil {
		return fabricResult{}, err
	}
	defer os.RemoveAll(dir)
	// No thresholds: every non-zero error counter is listed, so a port
	// ibqueryerrors does not list has zero errors rather than "below some
	// threshold in /etc/infiniband-diags".
	zero := filepath.Join(dir, "thresholds")
	if err := os.WriteFile(zero, nil, 0o644); err != nil {
		return fabricResult{}, err
	}
	dr := &dataRunner{Runner: r, thresholds: zero}
	s, err := fabric.Scan(ctx, dr, fabric.ScanOptions{})
	if err != nil {
		return fabricResult{}, err
	}
	fs, err := fabriccheck.Run(s, o)
	if err != nil {
		return fabricResult{}, err
	}
	res := fabricResult{snap: s, findings: fs}
	// A port whose PMA did not answer prints no data line: it has no data
	// counters, and the others still do.
	if _, err := fabric.CheckQueryErrors(dr.out, dr.err); err != nil {
		s.Errors = append(s.Errors, "data counters: "+err.Error())
	} else if res.data, err = fabric.ParseIBQueryErrors(string(dr.out.Stdout)); err != nil {
		s.Errors = append(s.Errors, "data counters: "+err.Error())
	}
	res.took = time.Since(start)
	res.metrics, res.emitErr = build(func(m *emitter) { emitFabric(m, res) })
	return res, nil
}

// dataRunner passes every tool through and, when fabric.Scan reads the
// error counters from its discovery cache, also reads the data counters
// of every port from that same cache: one discovery for both.
type dataRunner struct {
	fabric.Runner
	thresholds string
	once       sync.Once
	out        fabric.Output
	err        error
}

func (d *dataRunner) Run(ctx context.Context, name string, args ...string) (fabric.Output, error) {
	if name != "ibqueryerrors" {
		return d.Runner.Run(ctx, name, args...)
	}
	args = append(slices.Clone(args), "--threshold-file", d.thresholds)
	var wg sync.WaitGroup
	d.once.Do(func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.out, d.err = d.Runner.Run(ctx, name, append(slices.Clone(args), "--counters")...)
		}()
	})
	out, err := d.Runner.Run(ctx, name, args...)
	wg.Wait()
	return out, err
}

func (c *fabricCollector) update(ctx context.Context, ch chan<- prometheus.Metric) error {
	r := c.cache.get(ctx)
	m := &emitter{ch: ch}
	if r.Have {
		for _, metric := range r.Value.metrics {
			ch <- metric
		}
		m.gauge(fabricScanAtDesc, float64(r.At.UnixNano())/1e9)
	}
	if r.Err != nil {
		return fmt.Errorf("fabric scan: %w", r.Err)
	}
	if !r.Have {
		return fmt.Errorf("fabric: first scan still running")
	}
	if r.Value.emitErr != nil {
		return r.Value.emitErr
	}
	return m.err
}

func emitFabric(m *emitter, r fabricResult) {
	s := r.snap
	m.gauge(fabricScanDurDesc, r.took.Seconds())
	types := map[fabric.NodeType]int{}
	for _, n := range s.Nodes {
		types[n.Type]++
	}
	for t, n := range types {
		m.gauge(fabricNodesDesc, float64(n), string(t))
	}
	type key struct {
		guid host.GUID
		port int
	}
	ports := map[key]*fabric.Port{}
	for i := range s.Ports {
		p := &s.Ports[i]
		ports[key{p.NodeGUID, p.Num}] = p
		if !p.PortGUID.IsZero() {
			ports[key{p.PortGUID, p.Num}] = p
		}
	}
	emitted := map[key]bool{}
	for i := range s.Ports {
		p := &s.Ports[i]
		k := key{p.NodeGUID, p.Num}
		if emitted[k] {
			continue
		}
		emitted[k] = true
		port := strconv.Itoa(p.Num)
		active := 0.0
		if p.State == portstate.Active {
			active = 1
		}
		// The guid label keeps nodes that share a description apart; the
		// name is the description as the fabric reports it.
		guid, name := p.NodeGUID.String(), p.NodeDesc
		m.gauge(fabricStateDesc, active, guid, name, port, p.State.String())
		if p.RateGbps > 0 {
			m.gauge(fabricRateDesc, linkrate.BytesPerSecond(p.RateGbps), guid, name, port)
		}
		rg, rn, rp := "", "", ""
		if p.Remote != nil {
			rg, rn, rp = p.Remote.NodeGUID.String(), p.Remote.NodeDesc, strconv.Itoa(p.Remote.Port)
			if p.Remote.NodeGUID.IsZero() {
				rg, rn = p.Remote.PortGUID.String(), p.Remote.NodeDesc
			}
		}
		m.gauge(fabricLinkDesc, 1, guid, name, port, string(p.NodeType), p.Width, p.Speed, rg, rn, rp)
	}
	// Data counters for every port whose PMA answered; error counters are
	// then known for those ports too (zero unless ibqueryerrors listed them).
	counted := map[*fabric.Port]bool{}
	for _, d := range r.data {
		p := ports[key{d.GUID, d.Port}]
		if p == nil || counted[p] {
			continue
		}
		counted[p] = true
		vals := map[string]uint64{}
		// A port whose error query got no answer has unknown error
		// counters: only its data counters are served.
		for _, c := range counters.Table {
			if c.PMA != "" && c.Kind == counters.Error && p.CounterError == "" {
				vals[c.PMA] = 0
			}
		}
		for n, v := range d.Counters {
			vals[n] = v
		}
		for n, v := range p.Counters {
			vals[n] = v
		}
		emitFabricCounters(m, p, vals)
	}
	// Ports with errors but no data line (the second query failed).
	for i := range s.Ports {
		if p := &s.Ports[i]; p.Counters != nil && !counted[p] {
			counted[p] = true
			emitFabricCounters(m, p, p.Counters)
		}
	}
	for _, sm := range s.SMs {
		m.gauge(fabricSMDesc, 1, sm.GUID.String(), strconv.Itoa(sm.LID), strconv.Itoa(sm.Priority), sm.State)
	}
	emitFindings(m, "fabric", r.findings)
}

func emitFabricCounters(m *emitter, p *fabric.Port, vals map[string]uint64) {
	port, guid, name := strconv.Itoa(p.Num), p.NodeGUID.String(), p.NodeDesc
	for n, v := range vals {
		c, ok := counters.ByPMA(n)
		if !ok {
			continue
		}
		m.counter(fabricCounterDescs[n], float64(v)*c.Scale, guid, name, port)
		if c.Saturated(v) {
			m.gauge(fabricSaturatedDesc, 1, guid, name, port, n)
		}
	}
}

package exporter

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/hostfs"
)

var (
	findingDesc = newDesc(Namespace+"_finding",
		"A finding that is not a pass (severity fail, warn or unknown), by check id and subject; value is always 1. `rdmalab doctor` explains it.",
		[]string{"check", "severity", "subject"})
	findingsDesc = newDesc(Namespace+"_findings",
		"Findings of the last evaluation, by source (host, fabric) and outcome.", []string{"source", "outcome"})
	findingsAtDesc = newDesc(Namespace+"_findings_evaluated_timestamp_seconds",
		"When the findings served were evaluated (they are cached between evaluations).", []string{"source"})
)

// topology is the full inventory of the host and doctor's findings on it,
// evaluated at most once per FindingsInterval and served cached, with
// their metrics made once per evaluation.
type topology struct {
	snap                     *host.Snapshot
	findings                 []check.Finding
	topoMetrics, findMetrics []prometheus.Metric
	// the same metrics rendered for the text path
	topoText, findText *textBlock
	topoErr, findErr   error
}

func newTopologyCache(fsys *hostfs.FS, o Options) *cached[topology] {
	return &cached[topology]{
		interval: o.FindingsInterval, wait: o.ScrapeTimeout, now: o.Now, evalTimeout: o.ScrapeTimeout,
		eval: func(context.Context) (topology, error) {
			s := readHost(fsys, o)
			t := topology{snap: s}
			t.topoMetrics, t.topoErr = build(func(m *emitter) { emitTopology(m, s) })
			t.topoText = textOf(t.topoMetrics)
			if !o.NoFindings {
				t.findings = hostcheck.Run(s, o.Expect)
				t.findMetrics, t.findErr = build(func(m *emitter) { emitFindings(m, "host", t.findings) })
				t.findText = textOf(t.findMetrics)
			}
			return t, nil
		},
	}
}

// topologyCollector serves the PCIe links and GPU↔NIC paths of the last
// full inventory.
type topologyCollector struct{ cache *cached[topology] }

func (c *topologyCollector) update(ctx context.Context, ch chan<- prometheus.Metric) error {
	r := c.cache.get(ctx)
	if r.Have {
		for _, m := range r.Value.topoMetrics {
			ch <- m
		}
	}
	return firstErr(r.Err, r.Have, "topology", r.Value.topoErr)
}

func (c *topologyCollector) text(ctx context.Context) ([]*textBlock, error) {
	r := c.cache.get(ctx)
	var out []*textBlock
	if r.Have {
		out = append(out, r.Value.topoText)
	}
	return out, firstErr(r.Err, r.Have, "topology", r.Value.topoErr)
}

// findingsCollector serves doctor's host findings of the last evaluation.
type findingsCollector struct{ cache *cached[topology] }

func (c *findingsCollector) update(ctx context.Context, ch chan<- prometheus.Metric) error {
	r := c.cache.get(ctx)
	m := &emitter{ch: ch}
	if r.Have {
		for _, metric := range r.Value.findMetrics {
			ch <- metric
		}
		m.gauge(findingsAtDesc, float64(r.At.UnixNano())/1e9, "host")
	}
	err := m.err
	if r.Value.findErr != nil {
		err = r.Value.findErr
	}
	return firstErr(r.Err, r.Have, "findings", err)
}

func (c *findingsCollector) text(ctx context.Context) ([]*textBlock, error) {
	r := c.cache.get(ctx)
	var out []*textBlock
	var err error
	if r.Have {
		at := newTextBlock()
		err = at.addMetric(prometheus.MustNewConstMetric(findingsAtDesc, prometheus.GaugeValue, float64(r.At.UnixNano())/1e9, "host"))
		out = append(out, r.Value.findText, at)
	}
	if r.Value.findErr != nil {
		err = r.Value.findErr
	}
	return out, firstErr(r.Err, r.Have, "findings", err)
}

// firstErr is a cached collector's error for this scrape: the last
// evaluation's, or none yet, or an emitting error.
func firstErr(evalErr error, have bool, what string, emitErr error) error {
	switch {
	case evalErr != nil:
		return evalErr
	case !have:
		return fmt.Errorf("%s: first evaluation still running", what)
	}
	return emitErr
}

// emitFindings sends one series per distinct non-pass (check, severity,
// subject) and the count per outcome. Two findings with the same labels
// are one series: a duplicate would fail the whole scrape.
func emitFindings(m *emitter, source string, fs []check.Finding) {
	counts := map[check.Outcome]int{check.Fail: 0, check.Warn: 0, check.Unknown: 0, check.Pass: 0}
	seen := map[[3]string]bool{}
	for _, f := range fs {
		counts[f.Outcome]++
		if f.Outcome == check.Pass {
			continue
		}
		k := [3]string{f.Check, string(f.Outcome), f.Subject}
		if seen[k] {
			continue
		}
		seen[k] = true
		m.gauge(findingDesc, 1, k[0], k[1], k[2])
	}
	for o, n := range counts {
		m.gauge(findingsDesc, float64(n), source, string(o))
	}
}

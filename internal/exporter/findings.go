package exporter

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
)

var (
	findingDesc = prometheus.NewDesc(Namespace+"_finding",
		"A finding that is not a pass (severity fail, warn or unknown), by check id and subject; value is always 1. `rdmalab doctor` explains it.",
		[]string{"check", "severity", "subject"}, nil)
	findingsDesc = prometheus.NewDesc(Namespace+"_findings",
		"Findings of the last evaluation, by source (host, fabric) and outcome.", []string{"source", "outcome"}, nil)
	findingsAtDesc = prometheus.NewDesc(Namespace+"_findings_evaluated_timestamp_seconds",
		"When the findings served were evaluated (they are cached between evaluations).", []string{"source"}, nil)
)

// findingsCollector serves doctor's host findings, evaluated at most once
// per interval.
type findingsCollector struct {
	cache *cached[[]check.Finding]
}

func newFindingsCollector(o Options) *findingsCollector {
	return &findingsCollector{cache: &cached[[]check.Finding]{
		interval: o.FindingsInterval, wait: o.ScrapeTimeout, now: o.Now, evalTimeout: o.ScrapeTimeout,
		eval: func(context.Context) ([]check.Finding, error) {
			s, err := readHost(o)
			if err != nil {
				return nil, err
			}
			return hostcheck.Run(s, o.Expect), nil
		},
	}}
}

func (c *findingsCollector) update(ctx context.Context, ch chan<- prometheus.Metric) error {
	r := c.cache.get(ctx)
	m := &emitter{ch: ch}
	if r.Have {
		emitFindings(m, "host", r.Value)
		m.gauge(findingsAtDesc, float64(r.At.UnixNano())/1e9, "host")
	}
	if r.Err != nil {
		return r.Err
	}
	if !r.Have {
		return fmt.Errorf("findings: first evaluation still running")
	}
	return m.err
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

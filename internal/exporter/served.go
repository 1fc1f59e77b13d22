package exporter

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lastPoll is what a background poller (PHY, NCCL RAS) made last. A
// scrape copies it and runs nothing: the tools behind it take seconds
// and never run inside a scrape.
type lastPoll struct {
	mu      sync.RWMutex
	metrics []prometheus.Metric
	at      time.Time
	err     error
	polled  bool
	// polledDesc is the poller's <name>_polled_timestamp_seconds.
	polledDesc *prometheus.Desc
	cancel     context.CancelFunc
	done       chan struct{}
}

// start runs poll now and then every interval in the background, until
// close: each call stores what a scrape serves.
func (l *lastPoll) start(interval time.Duration, poll func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// set stores one poll's metrics, when it was made and what went wrong.
func (l *lastPoll) set(ms []prometheus.Metric, at time.Time, err error) {
	l.mu.Lock()
	l.metrics, l.at, l.err, l.polled = ms, at, err, true
	l.mu.Unlock()
}

// stamp is the poll's timestamp metric.
func (l *lastPoll) stamp() prometheus.Metric {
	return prometheus.MustNewConstMetric(l.polledDesc, prometheus.GaugeValue, float64(l.at.UnixNano())/1e9)
}

// update copies the last poll's metrics and its timestamp (nothing before
// the first poll).
func (l *lastPoll) update(_ context.Context, ch chan<- prometheus.Metric) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.polled {
		return nil
	}
	for _, m := range l.metrics {
		ch <- m
	}
	ch <- l.stamp()
	return l.err
}

func (l *lastPoll) close() {
	l.cancel()
	<-l.done
}

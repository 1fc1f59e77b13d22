package exporter

import (
	"context"
	"sync"
	"time"
)

// cached runs an expensive evaluation at most once per interval, in the
// background: a scrape gets the last result at once and, when that is
// stale, starts a refresh for the scrapes after it. Only a scrape with
// nothing to serve yet waits for the evaluation in flight, at most wait.
type cached[T any] struct {
	interval, wait time.Duration
	now            func() time.Time
	eval           func(context.Context) (T, error)
	// evalTimeout bounds one evaluation, which outlives the scrape that
	// started it.
	evalTimeout time.Duration

	mu      sync.Mutex
	have    bool
	last    T
	lastErr error
	at      time.Time     // when last was evaluated
	tried   time.Time     // when the latest evaluation ended
	running chan struct{} // closed when the evaluation in flight ends
}

// result is what a scrape serves.
type result[T any] struct {
	Value T
	Have  bool      // false until one evaluation has succeeded
	At    time.Time // when Value was evaluated
	Err   error     // the latest evaluation's error, if it failed
}

func (c *cached[T]) get(ctx context.Context) result[T] {
	c.mu.Lock()
	if c.running == nil && (c.tried.IsZero() || c.now().Sub(c.tried) >= c.interval) {
		c.running = make(chan struct{})
		go c.refresh(c.running)
	}
	running, have := c.running, c.have
	c.mu.Unlock()

	if running != nil && !have {
		t := time.NewTimer(c.wait)
		defer t.Stop()
		select {
		case <-running:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return result[T]{Value: c.last, Have: c.have, At: c.at, Err: c.lastErr}
}

func (c *cached[T]) refresh(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), c.evalTimeout)
	defer cancel()
	v, err := c.eval(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastErr = err
	// A failed evaluation also waits out the interval, so a broken fabric
	// is not rescanned on every scrape.
	c.tried = c.now()
	if err == nil {
		c.last, c.have, c.at = v, true, c.tried
	}
	c.running = nil
	close(done)
}

package launch

import (
	"context"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
)

// Preflight probes every node at once, at most 64 at a time, each within
// timeout (reachable, host key known, what need names present) and
// returns the unready ones with the reason. bench and nccl run both ask
// it before anything runs.
func Preflight(ctx context.Context, l Launcher, nodes []cluster.Node, need func(cluster.Node) []string, timeout time.Duration) map[string]string {
	unready := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, n := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := l.Probe(pctx, n, need(n)); err != nil {
				mu.Lock()
				unready[n.Name] = err.Error()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return unready
}

package benchrun

import (
	"context"
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/route"
)

// coverRun is a cover plan and, when the fabric is read live, the runner
// that scans it before and after the run.
type coverRun struct {
	*bench.CoverPlan
	live fabric.Runner
}

// planCover reads the fabric (files, or live through its runner) and
// plans the cover rounds over it.
func planCover(ctx context.Context, in route.Input, c *cluster.Cluster) (*coverRun, error) {
	f, src, err := route.Load(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("--schedule cover: %w", err)
	}
	cp, err := bench.NewCoverPlan(f, src, c)
	if err != nil {
		return nil, err
	}
	cr := &coverRun{CoverPlan: cp}
	if in.FabricFile == "" && in.Runner != nil {
		cr.live = in.Runner
	}
	return cr, nil
}

// plan is the cover rounds as the runner's plan.
func (cp *coverRun) plan() bench.Plan {
	return bench.FixedPlan("cover", fmt.Sprintf("cover: %d round(s) planned from the fabric's routes that together cross every link host traffic reaches; then up to %d follow-up rounds the localiser chooses", len(cp.Rounds()), bench.MaxFollowUps), cp.Rounds())
}

// runCover measures the cover rounds, then up to MaxFollowUps rounds the
// localiser asks for while directions were slow and it can learn more.
func (r *Runner) runCover(ctx context.Context, cp *coverRun, prior []bench.Record) ([]bench.Record, error) {
	if cp.live != nil {
		before, scanErr := fabric.Scan(ctx, cp.live, fabric.ScanOptions{})
		var after *fabric.Snapshot
		defer func() {
			if scanErr == nil && ctx.Err() == nil { // an interrupt does not wait for a scan
				after, scanErr = fabric.Scan(ctx, cp.live, fabric.ScanOptions{})
			}
			cp.Scanned(before, after, scanErr)
		}()
	}
	retest := r.Retest
	r.Retest = false // suspects are re-paired after the follow-ups
	recs, err := r.Run(ctx, prior)
	r.Retest = retest
	if err != nil {
		return recs, err
	}
	round := len(cp.Rounds())
	for range bench.MaxFollowUps {
		rep := bench.Analyze(r.Cluster, r.Engine.Name(), r.Engine.Test(), r.Engine.Latency(), r.records, r.Out(), nil)
		next := cp.Locator(r.Cluster, r.records, rep).NextRound()
		if len(next) == 0 {
			break
		}
		round++
		pairs := cp.Pairs(next)
		var names []string
		for _, p := range pairs {
			names = append(names, r.Cluster.Nodes[p.A].Name+" ↔ "+r.Cluster.Nodes[p.B].Name)
		}
		r.progress("follow-up round %d (the localiser's): %s\n", round, strings.Join(names, ", "))
		r.runRound(ctx, round, pairs)
		if err := r.logError(); err != nil {
			return r.records, err
		}
		if ctx.Err() != nil {
			return r.records, ctx.Err()
		}
	}
	// Suspect nodes are re-paired with known-good partners (as Google's
	// cluster-health-scanner does), unless a cable between switches
	// explains them: every partner's route to them may cross that cable.
	if r.Retest {
		rep := bench.Analyze(r.Cluster, r.Engine.Name(), r.Engine.Test(), r.Engine.Latency(), r.records, r.Out(), nil)
		v := cp.Locator(r.Cluster, r.records, rep).Verdict()
		if ft := cp.Fault(v); ft == nil || ft.Kind != "link" || (v.State != "confirmed" && v.State != "named") {
			r.retest(ctx)
		}
	}
	return r.records, r.logError()
}

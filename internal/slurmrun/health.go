package slurmrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/slurm"
)

// Stage reports which check a health run is in, so a timeout can name it.
type Stage struct {
	mu   sync.Mutex
	name string
}

// Enter records the check now running.
func (s *Stage) Enter(name string) {
	s.mu.Lock()
	s.name = name
	s.mu.Unlock()
}

// Name is the check running now.
func (s *Stage) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

// HealthOptions configures one health run.
type HealthOptions struct {
	Node string
	// TimeLimit bounds the checks (slurmd kills a HealthCheckProgram
	// after 60 s without saying why; rdmalab stops first and says where).
	TimeLimit time.Duration
	// DryRun decides without changing the node.
	DryRun bool
}

// Health runs checks on this node within the time limit, then drains or
// resumes it as Decide says. A controller that does not answer yet (the
// first run, before slurmd registered) changes nothing and is an error.
func Health(ctx context.Context, r Runner, opt HealthOptions, checks func(ctx context.Context, stage *Stage) []check.Finding) (slurm.HealthResult, error) {
	res := slurm.HealthResult{Node: opt.Node}
	node, err := ShowNode(ctx, r, opt.Node)
	if err != nil {
		return res, fmt.Errorf("node %s: %w", opt.Node, err)
	}
	res.State = node.State
	limit := opt.TimeLimit
	if limit <= 0 {
		limit = 50 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stage := &Stage{}
	done := make(chan []check.Finding, 1)
	go func() { done <- checks(cctx, stage) }()
	select {
	case fs := <-done:
		res.Findings = fs
	case <-cctx.Done():
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.TimedOutIn = stage.Name()
		if res.TimedOutIn == "" {
			res.TimedOutIn = "start-up"
		}
	}
	var failing []check.Finding
	for _, f := range res.Findings {
		if f.Outcome == check.Fail {
			failing = append(failing, f)
		}
	}
	check.Sort(failing)
	res.Decision = slurm.Decide(node, failing, res.TimedOutIn)
	if opt.DryRun {
		return res, nil
	}
	switch res.Decision.Action {
	case slurm.DrainNode:
		err = Drain(ctx, r, opt.Node, res.Decision.Reason)
	case slurm.ResumeNode:
		err = Resume(ctx, r, opt.Node)
	default:
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("%s node %s: %w", res.Decision.Action, opt.Node, err)
	}
	res.Applied = true
	return res, nil
}

package exporter

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/ncclrun"
)

// NCCL RAS metrics: the state of every rank of the job the RAS endpoint
// (--nccl-ras) belongs to, polled in the background and served from the
// last poll. A RAS report gathers from every process of the job over
// NCCL's RAS network (seconds on a large job, up to its timeouts), so it
// never runs inside a scrape.
var (
	rasStateDesc = newDesc(Namespace+"_nccl_rank_state",
		"The state of an NCCL rank as the last RAS poll showed it: 1, for its one current state (ok, init, finalizing, behind, error, missing, dead; docs/exporter.md).",
		[]string{"comm", "rank", "host", "state"})
	rasUpDesc = newDesc(Namespace+"_nccl_ras_up",
		"Whether the last poll of the NCCL RAS endpoint (--nccl-ras) answered with a report that parsed (1) or not (0: no job there, or it did not answer in time; no rank states are served then).", nil)
	rasPolledDesc = newDesc(Namespace+"_nccl_ras_polled_timestamp_seconds",
		"When the NCCL RAS endpoint was last polled (out of band, every --nccl-ras.interval), whether or not it answered.", nil)
	rasSuccessDesc = newDesc(Namespace+"_nccl_ras_last_success_timestamp_seconds",
		"When the NCCL RAS endpoint last answered with a report that parsed; absent until it has.", nil)
)

// Rank states, worst last: a rank in two conditions is shown in the worse.
const (
	RankOK         = "ok"         // reported, launched as far as its peers, no error
	RankInit       = "init"       // init_state 7: still initialising
	RankFinalizing = "finalizing" // ncclCommFinalize or destroy called
	RankBehind     = "behind"     // launched fewer of a collective than the ranks ahead (one poll: lagging, not yet a hang)
	RankError      = "error"      // an init error, an async error, or its abort flag set
	RankMissing    = "missing"    // RAS got no data from it (unresponsive)
	RankDead       = "dead"       // RAS considers it dead (unreachable for 60 s)
)

// RankStates are the states rdmalab_nccl_rank_state takes, best first.
var RankStates = []string{RankOK, RankInit, RankFinalizing, RankBehind, RankError, RankMissing, RankDead}

// rankKey is one rank of one communicator.
type rankKey struct {
	comm string
	rank int
}

type rankState struct {
	host  string
	state string
}

// rankStates reads each rank's one state from a report: the ranks it
// names (every rank in JSON; in text only those an entry names).
func rankStates(r *nccl.RASReport) map[rankKey]rankState {
	out := map[rankKey]rankState{}
	worse := func(a, b string) bool { return slices.Index(RankStates, a) > slices.Index(RankStates, b) }
	set := func(k rankKey, host, state string) {
		old, seen := out[k]
		if seen && !worse(state, old.state) {
			state = old.state
		}
		out[k] = rankState{host: cmp.Or(host, old.host), state: state}
	}
	for _, c := range r.Comms {
		comm := cmp.Or(c.Hash, c.ID)
		for _, k := range c.Ranks {
			st := RankOK
			switch {
			case k.InitState != 0 && k.InitState != 7 || k.AsyncError != 0 || k.Abort:
				st = RankError
			case k.Finalize || k.Destroy:
				st = RankFinalizing
			case k.InitState == 7:
				st = RankInit
			}
			set(rankKey{comm, k.Rank}, k.Host, st)
		}
		for _, k := range c.Missing {
			st := RankMissing
			if k.Dead {
				st = RankDead
			}
			set(rankKey{comm, k.Rank}, k.Host, st)
		}
		for _, m := range c.Mismatches {
			top := m.Max()
			for _, g := range m.Groups {
				for _, k := range g.Members {
					st := RankOK
					if g.Count < top {
						st = RankBehind
					}
					set(rankKey{comm, k.Rank}, k.Host, st)
				}
			}
		}
	}
	return out
}

// rasPoller polls the RAS endpoint in the background.
type rasPoller struct {
	lastPoll
	// first is closed once the first poll is served (or the poller
	// stopped): --textfile waits for it.
	first     chan struct{}
	firstOnce sync.Once
}

func newRASPoller(o Options) *rasPoller {
	p := &rasPoller{lastPoll: lastPoll{polledDesc: rasPolledDesc}, first: make(chan struct{})}
	var lastOK time.Time
	var lastErr string
	p.start(o.NCCLRASInterval, func(ctx context.Context) {
		var rep *nccl.RASReport
		err := safely(func() error {
			b, err := ncclrun.QueryRAS(ctx, o.NCCLRAS, o.NCCLRASTimeout)
			if err == nil {
				rep, err = nccl.ParseRAS(b)
			}
			return err
		})
		if ctx.Err() != nil {
			return
		}
		now := o.Now()
		switch {
		case err == nil:
			lastOK = now
			if lastErr != "" {
				o.Logger.Info("NCCL RAS endpoint answers again", "addr", o.NCCLRAS)
			}
			lastErr = ""
		case err.Error() != lastErr: // once per change, not every poll
			lastErr = err.Error()
			o.Logger.Warn("NCCL RAS poll", "addr", o.NCCLRAS, "err", err)
		}
		ms, berr := build(func(m *emitter) { emitRAS(m, rep, err, lastOK) })
		if berr != nil {
			o.Logger.Warn("NCCL RAS metrics", "err", berr)
		}
		// An endpoint that does not answer is rdmalab_nccl_ras_up 0, not a
		// failed collector: no job running there is an ordinary state.
		p.set(ms, now, nil)
		p.firstOnce.Do(func() { close(p.first) })
	})
	return p
}

func emitRAS(m *emitter, rep *nccl.RASReport, err error, lastOK time.Time) {
	up := 0.0
	if err == nil && rep != nil {
		up = 1
		states := rankStates(rep)
		keys := make([]rankKey, 0, len(states))
		for k := range states {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b rankKey) int { return cmp.Or(cmp.Compare(a.comm, b.comm), cmp.Compare(a.rank, b.rank)) })
		for _, k := range keys {
			s := states[k]
			m.gauge(rasStateDesc, 1, k.comm, strconv.Itoa(k.rank), s.host, s.state)
		}
	}
	m.gauge(rasUpDesc, up)
	if !lastOK.IsZero() {
		m.gauge(rasSuccessDesc, float64(lastOK.UnixNano())/1e9)
	}
}

func (p *rasPoller) close() {
	p.lastPoll.close()
	p.firstOnce.Do(func() { close(p.first) })
}

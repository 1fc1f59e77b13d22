package nccl

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
)

// The checks of an ncclras report and a poll of a live RAS endpoint.
var (
	CheckRASRanks = check.Entry{ID: "nccl.ras.ranks", Title: "Every rank of every communicator answers RAS",
		Why:    "A rank RAS gets no data from (INCOMPLETE: stopped, exited, unreachable) or has declared DEAD (60 s unreachable) stops every collective of its communicators: the job hangs or dies there.",
		Source: "NCCL ras.rst; ncclras text (Errors: INCOMPLETE, DEAD, #g-c INCOMPLETE) and JSON (missing_ranks: unresponsive, considered_dead)",
		Fixes:  []string{"look at the process named on its host (dmesg, nvidia-smi, the job's log) before restarting the job"},
		Needs:  "an ncclras report (text or -f json) or a live RAS endpoint", UnknownWhen: "RAS collected no communicator data"}
	CheckRASStatus = check.Entry{ID: "nccl.ras.status", Title: "No communicator is in error or aborting",
		Why:    "A communicator in ABORT or with an initialisation or asynchronous error on a rank will not complete another collective.",
		Source: "ncclras Status/Errors columns; JSON init_state (0 initialised, 7 in progress), async_error, abort_flag",
		Fixes:  []string{"read the rank's own NCCL_DEBUG=WARN lines (rdmalab nccl judge its log)"},
		Needs:  "the report's communicator table or ranks", UnknownWhen: "never"}
	CheckRASProgress = check.Entry{ID: "nccl.ras.progress", Title: "The ranks of a communicator launched the same collectives (one report)",
		Why:    "A MISMATCH in collective counts names lagging ranks, but NCCL launches asynchronously: one snapshot's skew can be normal, and so can a hang. One report with a mismatch leaves the question open (unproven, never healthy) until a second poll shows whether the lagging rank moves: frozen counts are a hang (nccl.ras.hang).",
		Source: "NCCL ras.rst (MISMATCH needs repetition); docs/examples/08_ras",
		Fixes:  []string{"poll it: rdmalab nccl ras --host HOST --interval 5s --polls 3"},
		Needs:  "one report's collective counts", UnknownWhen: "one report shows a collective-count mismatch: whether the lagging rank moves needs polls"}
	CheckRASHang = check.Entry{ID: "nccl.ras.hang", Title: "No rank stays behind, frozen, across polls",
		Why:    "A rank whose collective count stays the same across polls while the others are ahead is stuck there (a hang the whole communicator waits on); one that lags but moves is a straggler (slow GPU, NIC or link).",
		Source: "NCCL ras.rst (the same counts on repeated queries indicate a stuck rank); rdmalab nccl ras",
		Fixes:  []string{"on the rank's host: rdmalab doctor, the rank's GPU and rail NIC; retest its rail with rdmalab bench"},
		Needs:  "two or more polls of a live RAS endpoint", UnknownWhen: "never: one poll is nccl.ras.progress"}
	CheckRASCollection = check.Entry{ID: "nccl.ras.collection", Title: "RAS gathered its data without timeouts",
		Why:    "Communication timeouts while RAS gathers mean some processes answered late or not at all: the report may be partial.",
		Source: "ncclras Warnings: TIMEOUT; JSON ras.timeouts_count",
		Fixes:  []string{"rerun ncclras with a longer -t"},
		Needs:  "the report", UnknownWhen: "never"}
	CheckRASRead = check.Entry{ID: "nccl.ras.read", Title: "The RAS report was read as written",
		Why:    "NCCL 2.28.x wrote invalid JSON for a missing rank (no comma between nvml_dev and status); the repair that reads it is named so nothing is silently guessed.",
		Source: "NCCL client_support.cc JSON writer",
		Needs:  "the report", UnknownWhen: "never"}
)

// RASCatalog is the checks an ncclras report and a poll of a live RAS
// endpoint report. Part of Catalog.
var RASCatalog = []check.Entry{
	CheckRASRanks,
	CheckRASStatus,
	CheckRASProgress,
	CheckRASHang,
	CheckRASCollection,
	CheckRASRead,
}

// JudgeRASFile reads and judges one ncclras report (o: what follows a
// suspect rank to its rail, nil for nothing).
func JudgeRASFile(name string, b []byte, o *RASOptions) ([]check.Finding, any, error) {
	r, err := ParseRAS(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	fs := JudgeRAS(filepath.Base(name), r, o)
	check.Sort(fs)
	return fs, r, nil
}

func commName(c RASComm) string {
	switch {
	case c.ID != "" && c.Hash != "":
		return fmt.Sprintf("communicator %s (%s)", c.ID, c.Hash)
	case c.Hash != "":
		return "communicator " + c.Hash
	}
	return "communicator " + c.ID
}

// JudgeRAS judges one report: missing and dead ranks, communicators in
// error, and collective-count mismatches (unknown: one report can tell a
// hang from launch skew neither way, so it is not healthy either).
//
// With snapshots in o, a named suspect rank is followed to its GPU's rail
// NIC and port, and the finding offers the bench command that retests it.
func JudgeRAS(source string, r *RASReport, o *RASOptions) []check.Finding {
	o = o.withReport(r)
	fs := judgeRASState(source, r, o)
	fs = append(fs, judgeRASProgress(source, r, o, check.Unknown)...)
	return fs
}

func judgeRASState(source string, r *RASReport, o *RASOptions) []check.Finding {
	var fs []check.Finding
	// add reports a finding of the rule e; the pointer is for setting its
	// specific fixes or path at once, before the next add.
	add := func(e check.Entry, o check.Outcome, host, subject, msg string, ev ...check.Evidence) *check.Finding {
		f := e.Reporter(host).New(o, subject, "%s", msg)
		f.Evidence = ev
		fs = append(fs, f)
		return &fs[len(fs)-1]
	}
	ev := func(what, value string) check.Evidence {
		return check.Evidence{What: what, Value: value, Source: source}
	}
	for _, rep := range r.Repairs {
		add(CheckRASRead, check.Warn, "", "ncclras JSON", rep, ev("repair", rep))
	}
	lookHere := func(host string, pid int) []string {
		return []string{fmt.Sprintf("on %s: is PID %d still there (ps -p %d), what did it print last (its NCCL_DEBUG=WARN lines), dmesg for GPU Xid or NIC errors", host, pid, pid)}
	}
	bad := 0
	seenPID := map[int]bool{}
	for _, c := range r.Comms {
		for _, k := range c.Missing {
			bad++
			seenPID[k.PID] = true
			state := "sent RAS no data (INCOMPLETE: the process stopped, exited or is unreachable; RAS declares it DEAD after 60 s)"
			if k.Dead {
				state = "is considered DEAD by RAS (unreachable for 60 s): its communicators cannot complete another collective"
			}
			f := add(CheckRASRanks, check.Fail, k.Host, fmt.Sprintf("rank %d", k.Rank), fmt.Sprintf("%s of %s %s", k.Where(), commName(c), state),
				ev("missing rank", k.Where()))
			f.Fix = lookHere(k.Host, k.PID)
			o.attachPath(f, k)
		}
		if len(c.Missing) == 0 && slices.Contains(c.Errors, "INCOMPLETE") {
			bad++
			msg := fmt.Sprintf("%s is INCOMPLETE: RAS is missing data from some of its ranks", commName(c))
			if c.CommsInGroup > 0 && c.RanksInGroup < c.CommsInGroup*c.Size {
				msg = fmt.Sprintf("%s is INCOMPLETE: %d of %d ranks answered RAS", commName(c), c.RanksInGroup, c.CommsInGroup*c.Size)
			}
			add(CheckRASRanks, check.Fail, "", strings.TrimPrefix(commName(c), "communicator "), msg+" (the report does not name them: rerun ncclras -v)").Fix = []string{"ncclras -v on a node of the job names the missing ranks"}
		}
	}
	for _, p := range r.MissingProcesses {
		if seenPID[p.PID] {
			continue
		}
		bad++
		add(CheckRASRanks, check.Fail, p.Host, fmt.Sprintf("PID %d", p.PID), fmt.Sprintf("process %d on %s managing GPU %s sent RAS no communicator data (INCOMPLETE: stopped, exited or unreachable)", p.PID, p.Host, p.GPU),
			ev("missing process", fmt.Sprintf("PID %d on %s, GPU %s", p.PID, p.Host, p.GPU))).Fix = lookHere(p.Host, p.PID)
	}
	for _, p := range r.DeadProcesses {
		bad++
		add(CheckRASRanks, check.Fail, p.Host, fmt.Sprintf("PID %d", p.PID), fmt.Sprintf("process %d on %s managing GPU %s is considered DEAD by RAS (unreachable via the RAS network for 60 s)", p.PID, p.Host, p.GPU),
			ev("dead process", fmt.Sprintf("PID %d on %s, GPU %s", p.PID, p.Host, p.GPU))).Fix = lookHere(p.Host, p.PID)
	}
	if n := r.DeadCount - len(r.DeadProcesses); n > 0 {
		bad++
		add(CheckRASRanks, check.Fail, "", "DEAD", fmt.Sprintf("%d job process(es) considered DEAD by RAS that the report does not list (rerun ncclras -v)", n))
	}
	if n := r.MissingCount - len(r.MissingProcesses); n > 0 && bad == 0 {
		bad++
		add(CheckRASRanks, check.Fail, "", "INCOMPLETE", fmt.Sprintf("RAS is missing communicator data from %d job process(es) the report does not list (rerun ncclras -v)", n))
	}
	switch {
	case bad > 0:
	case r.NoCommData || len(r.Comms) == 0:
		add(CheckRASRanks, check.Unknown, "", "communicators", "RAS collected no communicator data: no NCCL communicator answered, so whether the ranks are alive is not in the report").Fix =
			[]string{"run ncclras (or rdmalab nccl ras --host HOST) on a node of the job while it runs"}
	default:
		ranks := 0
		for _, c := range r.Comms {
			ranks += max(len(c.Ranks), c.RanksInGroup, c.Size*max(c.CommsInGroup, 1)*boolInt(len(c.Ranks) == 0 && c.RanksInGroup == 0))
		}
		add(CheckRASRanks, check.Pass, "", "communicators", fmt.Sprintf("every rank of %d communicator(s) answered RAS (%d ranks)", len(r.Comms), ranks))
	}

	// status and errors
	statusBad := 0
	for _, c := range r.Comms {
		if c.Status == "ABORT" || slices.Contains(c.Errors, "ERROR") {
			statusBad++
			msg := fmt.Sprintf("%s is %s with errors %s", commName(c), cmpOr(c.Status, "in error"), strings.Join(c.Errors, ","))
			if len(c.RankErrors) > 0 {
				msg += ": " + strings.Join(c.RankErrors, "; ")
			}
			add(CheckRASStatus, check.Fail, "", strings.TrimPrefix(commName(c), "communicator "), msg)
		}
		for _, k := range c.Ranks {
			var why []string
			if k.InitState != 0 && k.InitState != 7 {
				why = append(why, fmt.Sprintf("init_state %d (an initialisation error)", k.InitState))
			}
			if k.AsyncError != 0 {
				why = append(why, fmt.Sprintf("async_error %d (%s)", k.AsyncError, cmpOr(NCCLResult(k.AsyncError), "an asynchronous error")))
			}
			if k.Abort {
				why = append(why, "abort_flag set")
			}
			if len(why) > 0 {
				statusBad++
				o.attachPath(add(CheckRASStatus, check.Fail, k.Host, fmt.Sprintf("rank %d", k.Rank), fmt.Sprintf("%s of %s: %s", k.Where(), commName(c), strings.Join(why, ", "))), k)
			}
		}
	}
	if statusBad == 0 && len(r.Comms) > 0 {
		var st []string
		for _, c := range r.Comms {
			if c.Status != "" && !slices.Contains(st, c.Status) {
				st = append(st, c.Status)
			}
		}
		add(CheckRASStatus, check.Pass, "", "communicators", "no communicator in error or aborting"+strings.TrimSuffix(" ("+strings.Join(st, ", ")+")", " ()"))
	}
	if r.Timeouts > 0 {
		add(CheckRASCollection, check.Warn, "", "RAS", fmt.Sprintf("RAS met %d communication timeout(s) while gathering: some processes answered late or not at all, so the report may be partial", r.Timeouts))
	}
	return fs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lag is one collective's mismatch read as who is behind.
type lag struct {
	comm   RASComm
	op     string
	top    int64
	topN   int
	behind []RASCountGroup
	ahead  []RASRank // named ranks at the top count
	// named are the lagging ranks RAS named, with their count
	named []RASRank
}

func lagsOf(r *RASReport) []lag {
	var out []lag
	for _, c := range r.Comms {
		for _, m := range c.Mismatches {
			l := lag{comm: c, op: m.Op, top: m.Max()}
			for _, g := range m.Groups {
				if g.Count == l.top {
					l.topN += g.NRanks
					l.ahead = append(l.ahead, g.Members...)
					continue
				}
				l.behind = append(l.behind, g)
				l.named = append(l.named, g.Members...)
			}
			out = append(out, l)
		}
	}
	return out
}

func opCount(n int64) string {
	if n < 0 {
		return "no operation"
	}
	return fmt.Sprintf("#%d", n)
}

func (l lag) behindText() string {
	var parts []string
	for _, g := range l.behind {
		if len(g.Members) == 0 {
			parts = append(parts, fmt.Sprintf("%d rank(s) at %s %s (not named by RAS)", g.NRanks, l.op, opCount(g.Count)))
			continue
		}
		for _, k := range g.Members {
			parts = append(parts, fmt.Sprintf("%s at %s %s", k.Where(), l.op, opCount(g.Count)))
		}
	}
	return strings.Join(parts, "; ")
}

func (l lag) host() string {
	var hosts []string
	for _, k := range l.named {
		if !slices.Contains(hosts, k.Host) {
			hosts = append(hosts, k.Host)
		}
	}
	if len(hosts) == 1 {
		return hosts[0]
	}
	return ""
}

// judgeRASProgress reports each collective-count mismatch of one report as
// lag: unknown when that report is all there is (it decides nothing either
// way), a warning beside polls that already showed no rank stays behind.
func judgeRASProgress(source string, r *RASReport, o *RASOptions, lag check.Outcome) []check.Finding {
	var fs []check.Finding
	for _, l := range lagsOf(r) {
		msg := fmt.Sprintf("%s: %s, while %d rank(s) reached %s %s", commName(l.comm), l.behindText(), l.topN, l.op, opCount(l.top))
		if len(l.named) == 0 && len(l.ahead) > 0 {
			var ah []string
			for _, k := range l.ahead {
				ah = append(ah, k.Where())
			}
			msg += " (RAS names the minority, here the ranks ahead: " + strings.Join(ah, ", ") + ")"
		}
		msg += ": lagging rank(s) — one poll is not a verdict (NCCL launches collectives asynchronously; a straggler is called only once it stays frozen across polls)"
		host := l.host()
		fix := "rdmalab nccl ras --host " + cmpOr(host, "HOST") + " --interval 5s --polls 3   # on a node of the job, or with NCCL_RAS_ADDR listening beyond localhost"
		f := CheckRASProgress.Reporter(host).New(lag, strings.TrimPrefix(commName(l.comm), "communicator ")+" "+l.op, "%s", msg)
		f.Evidence = []check.Evidence{{What: l.op + " counts", Value: l.behindText(), Source: source}}
		f.Fix = []string{fix}
		if len(l.named) == 1 {
			o.attachPath(&f, l.named[0])
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 && len(r.Comms) > 0 && !r.NoCommData {
		fs = append(fs, CheckRASProgress.Reporter("").New(check.Pass, "communicators", "no collective-count mismatch: the ranks that answered launched the same number of each collective"))
	}
	return fs
}

// RASPoll is one poll of a live RAS endpoint.
type RASPoll struct {
	At     time.Time  `json:"at"`
	Report *RASReport `json:"report,omitempty"`
	Err    string     `json:"error,omitempty"`
}

// JudgeRASPolls judges polls in order: the last report's ranks and
// status, and across the polls each lagging rank: frozen in every poll is
// a hang (fail), behind but moving a straggler (warn), behind in one poll
// only launch skew.
func JudgeRASPolls(source string, polls []RASPoll, o *RASOptions) []check.Finding {
	var ok []RASPoll
	for _, p := range polls {
		if p.Report != nil {
			ok = append(ok, p)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	last := ok[len(ok)-1]
	o = o.withReport(last.Report)
	fs := judgeRASState(source, last.Report, o)
	if len(ok) < 2 {
		fs = append(fs, judgeRASProgress(source, last.Report, o, check.Unknown)...)
		if len(polls) > 1 {
			f := CheckRASHang.Reporter("").New(check.Unknown, "polls", "only 1 of %d polls answered: whether a lagging rank moves is unknown", len(polls))
			f.Fix = []string{"poll again with a longer --timeout"}
			fs = append(fs, f)
		}
		return fs
	}
	span := last.At.Sub(ok[0].At).Round(time.Second)
	type key struct{ comm, op string }
	commKey := func(c RASComm) string { return cmpOr(c.Hash, c.ID) }
	// per poll: the lags by communicator and collective
	byPoll := make([]map[key]lag, len(ok))
	for i, p := range ok {
		byPoll[i] = map[key]lag{}
		for _, l := range lagsOf(p.Report) {
			byPoll[i][key{commKey(l.comm), l.op}] = l
		}
	}
	var out []check.Finding
	seen := 0
	for k, l := range byPoll[len(ok)-1] {
		// a rank behind in every poll: its counts and the top's
		inAll := true
		for _, m := range byPoll {
			if _, ok := m[k]; !ok {
				inAll = false
			}
		}
		if !inAll {
			seen++
			continue // behind in the last poll only: one poll of skew
		}
		ranks := l.named
		if len(ranks) == 0 {
			// unnamed (text report, RAS named the ranks ahead): follow the
			// lowest group's count instead
			ranks = []RASRank{{Rank: -1}}
		}
		for _, rk := range ranks {
			var counts, tops []int64
			for _, m := range byPoll {
				ml := m[k]
				tops = append(tops, ml.top)
				c, found := countOf(ml, rk)
				if !found {
					counts = nil
					break
				}
				counts = append(counts, c)
			}
			if counts == nil {
				continue
			}
			who, host := rk.Where(), rk.Host
			if rk.Rank < 0 {
				who, host = fmt.Sprintf("%d rank(s) RAS did not name", l.behind[0].NRanks), ""
			}
			frozen := allSame(counts)
			subject := strings.TrimPrefix(commName(l.comm), "communicator ") + " " + l.op
			if rk.Rank >= 0 {
				subject = fmt.Sprintf("rank %d", rk.Rank)
			}
			if frozen {
				msg := fmt.Sprintf("%s stuck at %s %s while others reached %s for %d polls (%s): a hang at this rank — the rest of %s waits on it",
					who, l.op, opCount(counts[0]), opCount(tops[len(tops)-1]), len(ok), span, commName(l.comm))
				if rk.Host != "" {
					msg = fmt.Sprintf("rank %d on host %s stuck at %s %s while others reached %s for %d polls (%s): a hang at this rank (%s) — the rest of %s waits on it",
						rk.Rank, rk.Host, l.op, opCount(counts[0]), opCount(tops[len(tops)-1]), len(ok), span, rk.Where(), commName(l.comm))
				}
				f := CheckRASHang.Reporter(host).New(check.Fail, subject, "%s", msg)
				f.Evidence = []check.Evidence{{What: l.op + " count per poll", Value: joinCounts(counts) + " (others: " + joinCounts(tops) + ")", Source: source}}
				f.Fix = hangFix(rk)
				if rk.Rank >= 0 {
					o.attachPath(&f, rk)
				}
				out = append(out, f)
				continue
			}
			f := CheckRASHang.Reporter(host).New(check.Warn, subject, "%s lags but moves: %s %s over %d polls (%s) while others %s: a straggler (slow, not stuck)", who, l.op, joinCounts(counts), len(ok), span, joinCounts(tops))
			f.Evidence = []check.Evidence{{What: l.op + " count per poll", Value: joinCounts(counts), Source: source}}
			f.Fix = hangFix(rk)
			if rk.Rank >= 0 {
				o.attachPath(&f, rk)
			}
			out = append(out, f)
		}
	}
	skew := 0
	for _, m := range byPoll[:len(ok)-1] {
		skew += len(m)
	}
	if len(out) == 0 {
		msg := fmt.Sprintf("no rank stayed behind across %d polls (%s)", len(ok), span)
		if skew+seen > 0 {
			msg += fmt.Sprintf(": counts differed in some polls and moved on — launch skew, not a hang")
		}
		out = append(out, CheckRASHang.Reporter("").New(check.Pass, "polls", "%s", msg))
		if seen > 0 {
			out = append(out, judgeRASProgress(source, last.Report, o, check.Warn)...)
		}
	}
	check.Sort(out)
	return append(fs, out...)
}

func countOf(l lag, rk RASRank) (int64, bool) {
	if rk.Rank < 0 {
		if len(l.behind) == 0 {
			return 0, false
		}
		lo := l.behind[0].Count
		for _, g := range l.behind {
			lo = min(lo, g.Count)
		}
		return lo, true
	}
	for _, g := range l.behind {
		for _, k := range g.Members {
			if k.Rank == rk.Rank {
				return g.Count, true
			}
		}
	}
	return 0, false
}

func allSame(v []int64) bool {
	for _, x := range v[1:] {
		if x != v[0] {
			return false
		}
	}
	return true
}

func joinCounts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = opCount(x)
	}
	return strings.Join(s, " → ")
}

func hangFix(rk RASRank) []string {
	if rk.Host == "" {
		return []string{"ncclras -f json names every rank's counts: poll with it (rdmalab nccl ras uses it on NCCL ≥ 2.28.7)"}
	}
	return []string{fmt.Sprintf("on %s: rdmalab doctor (GPU %s's rail NIC, its port and counters), then py-spy/gdb on PID %d to see where it waits", rk.Host, cmpOr(rk.GPUName(), "?"), rk.PID),
		fmt.Sprintf("rdmalab nccl ras --host %s --snapshot %s=%s.json names the GPU's rail NIC and port, and the bench command that retests it", rk.Host, rk.Host, rk.Host)}
}

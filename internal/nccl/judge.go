package nccl

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// Fractions of the NIC ceiling a busbw plateau is judged by. NCCL's ring
// reaches 85–92% of line rate on a healthy fabric (seed 001: 22 of 25 GB/s
// on 200 Gb/s); a 5× drop means RDMA is not being used.
const (
	HealthyFraction  = 0.80
	DegradedFraction = 0.50
)

// maxPlausibleGBps is faster than any GPU memory (HBM3e ≈ 8 TB/s): an
// algbw above it means the operation did no work.
const maxPlausibleGBps = 10000

// JudgeOptions is what the judge knows beyond the file.
type JudgeOptions struct {
	// Collective overrides what the output or file name says (all_reduce, …).
	Collective string `json:"collective,omitempty"`
	// NIC is what one rail carries; RateGbps 0 means unknown, and busbw is
	// then reported but not judged.
	NIC linkrate.Link `json:"nic"`
	// RailsPerNode is how many NICs per node NCCL spreads inter-node
	// traffic over (0 counts as 1).
	RailsPerNode int `json:"rails_per_node,omitempty"`
	// NICSource says where NIC and RailsPerNode come from (a flag, a snapshot).
	NICSource string `json:"nic_source,omitempty"`
	// Algo is the NCCL_ALGO the run used, "" when unknown.
	Algo string `json:"algo,omitempty"`
	// AllowSocket accepts NET/Socket between nodes (no RDMA expected).
	AllowSocket bool `json:"allow_socket,omitempty"`
	// GDRExpected is, per host, whether GPUDirect RDMA was predicted on.
	GDRExpected map[string]bool `json:"gdr_expected,omitempty"`
	// Nodes is how many nodes the run spanned when the launch knows it
	// (nccl run, or nccl judge --nodes for output that names no hosts);
	// the distinct hosts of the output's rank lines win when present.
	Nodes int `json:"nodes,omitempty"`
	// RanksPerNode is --ranks-per-node: with Nodes, the rank count of an
	// output without "#  Rank" lines.
	RanksPerNode int `json:"ranks_per_node,omitempty"`
	// Hosts must each appear in an NCCL_DEBUG log; nil takes them from the
	// nccl-tests rank lines.
	Hosts []string `json:"hosts,omitempty"`
	// RAS follows an ncclras report's suspect rank to its rail, the
	// rail's cable and routes (nil: the report alone).
	RAS *RASOptions `json:"-"`
}

// Sniff reports whether b is nccl-tests output or an NCCL_DEBUG log: a
// run header, the JSON marker, or a line in NCCL's host:pid:tid [dev]
// form (text that merely mentions NCCL is not).
func Sniff(b []byte) bool {
	if bytes.Contains(b, []byte(`"nccl-tests structured output"`)) {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		t, _ := StripMPIPrefix(line)
		t = strings.TrimSpace(t)
		switch {
		case nthreadRE().MatchString(t), collStartRE().MatchString(t), testFailureRE().MatchString(t), isHeader(t):
			return true
		case ncclLineRE().MatchString(t) && (strings.Contains(t, " NCCL INFO ") || strings.Contains(t, " NCCL WARN ")):
			return true
		}
	}
	return false
}

// FileResult is the payload of a judged file.
type FileResult struct {
	File string       `json:"file"`
	Runs []RunSummary `json:"runs,omitempty"`
	Log  *DebugLog    `json:"nccl_debug,omitempty"`
}

// RunSummary is a judged nccl-tests run.
type RunSummary struct {
	*TestRun
	Nodes int `json:"nodes"`
	// PlateauBusbwGBps is the busbw the verdict uses (out-of-place, median
	// of the three largest sizes); PeakBusbwGBps the best seen.
	PlateauBusbwGBps float64 `json:"plateau_busbw_gbps"`
	PeakBusbwGBps    float64 `json:"peak_busbw_gbps"`
	// ExpectedGBps is the NIC ceiling busbw is judged against, 0 unknown.
	ExpectedGBps float64 `json:"expected_gbps,omitempty"`
}

// JudgeFile judges nccl-tests output and/or an NCCL_DEBUG log in b. It
// returns the findings and a *FileResult payload; the error is for bytes
// that are neither.
func JudgeFile(name string, b []byte, opt JudgeOptions) ([]check.Finding, any, error) {
	if SniffRAS(b) {
		return JudgeRASFile(name, b, opt.RAS)
	}
	if !Sniff(b) {
		return nil, nil, fmt.Errorf("%s: neither nccl-tests output, an NCCL_DEBUG log nor an ncclras report", name)
	}
	res := &FileResult{File: name}
	var fs []check.Finding
	subject := filepath.Base(name)
	runs := ParseTests(b)
	for i, r := range runs {
		sub := subject
		if len(runs) > 1 {
			sub = fmt.Sprintf("%s run %d", subject, i+1)
		}
		f, s := JudgeTests(sub, r, opt)
		fs = append(fs, f...)
		res.Runs = append(res.Runs, s)
	}
	log := ParseDebug(b)
	if log.informative() {
		o := opt
		if o.Hosts == nil && len(runs) > 0 {
			o.Hosts = runs[0].Hosts()
		}
		fs = append(fs, JudgeDebug(log, o)...)
		res.Log = log
	}
	if len(runs) == 0 && res.Log == nil {
		return nil, nil, fmt.Errorf("%s: NCCL lines but no nccl-tests table and nothing about transports", name)
	}
	check.Sort(fs)
	return fs, res, nil
}

// BusFactor is nccl-tests' busbw/algbw ratio for a collective over n ranks:
// the share of the data each rank's busiest link carries.
func BusFactor(collective string, n int) (float64, bool) {
	if n < 1 {
		return 0, false
	}
	f := float64(n)
	switch collective {
	case "all_reduce":
		return 2 * (f - 1) / f, true
	case "reduce_scatter", "all_gather", "alltoall", "gather", "scatter", "hypercube":
		return (f - 1) / f, true
	case "broadcast", "reduce", "sendrecv":
		return 1, true
	}
	return 0, false
}

// JudgeTests judges one nccl-tests run: complete, correct, and the
// large-message busbw plateau against what the NICs carry.
func JudgeTests(subject string, r *TestRun, opt JudgeOptions) ([]check.Finding, RunSummary) {
	// the hosts the output names win; --nodes (or the launch) stands in
	// for output that names none
	s := RunSummary{TestRun: r, Nodes: len(r.Hosts())}
	if s.Nodes == 0 && opt.Nodes > 0 {
		s.Nodes = opt.Nodes
	}
	if opt.Collective != "" {
		r.Collective = opt.Collective
	}
	var fs []check.Finding
	// add reports a finding of the rule e; the pointer is for setting its
	// specific fixes at once, before the next add.
	add := func(e check.Entry, o check.Outcome, msg string, ev ...check.Evidence) *check.Finding {
		f := e.Reporter("").New(o, subject, "%s", msg)
		f.Evidence = ev
		fs = append(fs, f)
		return &fs[len(fs)-1]
	}
	ev := func(what, value string) check.Evidence {
		return check.Evidence{What: what, Value: value, Source: subject}
	}

	// complete
	switch {
	case r.Truncated:
		add(CheckTestsComplete, check.Fail, fmt.Sprintf("JSON output ends mid-document after %d sizes: the run (or the capture) was cut short", len(r.Rows)))
	case len(r.Rows) == 0:
		add(CheckTestsComplete, check.Fail, "no result rows: the run stopped before its first size (a hang at init, or a crash)")
	case r.Started && !r.Concluded:
		add(CheckTestsComplete, check.Fail, fmt.Sprintf("\"Collective test starting\" without \"concluded\": the run stopped after %s", humanBytes(r.Rows[len(r.Rows)-1].SizeBytes)),
			ev("last size", humanBytes(r.Rows[len(r.Rows)-1].SizeBytes)))
	case r.Format == "text" && r.AvgBusbwGBps == nil && r.FromHeader:
		add(CheckTestsComplete, check.Unknown, fmt.Sprintf("a table pasted from its column header, ending at %s without the \"# Avg bus bandwidth\" line: whether the run concluded is not in the paste", humanBytes(r.Rows[len(r.Rows)-1].SizeBytes)),
			ev("last size", humanBytes(r.Rows[len(r.Rows)-1].SizeBytes))).Fix = []string{"paste the whole output, down to \"# Avg bus bandwidth\""}
	case r.Format == "text" && r.AvgBusbwGBps == nil:
		add(CheckTestsComplete, check.Fail, fmt.Sprintf("no \"# Avg bus bandwidth\" line: the run stopped after %s (killed, timed out, or hung)", humanBytes(r.Rows[len(r.Rows)-1].SizeBytes)),
			ev("last size", humanBytes(r.Rows[len(r.Rows)-1].SizeBytes)))
	default:
		add(CheckTestsComplete, check.Pass, fmt.Sprintf("%d sizes up to %s, run concluded", len(r.Rows), humanBytes(r.Rows[len(r.Rows)-1].SizeBytes)))
	}
	if len(r.Rows) == 0 {
		return fs, s
	}

	// correct: #wrong > 0 or an out-of-bounds FAIL is FAIL whatever the bandwidth
	worst, worstAt, unchecked := 0.0, int64(0), 0
	for _, row := range r.Rows {
		for _, p := range []Perf{row.OutOfPlace, row.InPlace} {
			if !p.Checked {
				unchecked++
				continue
			}
			if p.Wrong > worst {
				worst, worstAt = p.Wrong, row.SizeBytes
			}
		}
	}
	wrongCounts := r.CheckColumn == "#wrong"
	switch {
	case r.OOBFailed || (wrongCounts && worst > 0):
		n := "?"
		if r.OutOfBounds != nil {
			n = fmt.Sprint(*r.OutOfBounds)
		}
		f := add(CheckTestsCorrectness, check.Fail, fmt.Sprintf("corrupted results: %s sizes out of bounds, #wrong up to %g at %s — whatever the bandwidth, this run is wrong", n, worst, humanBytes(worstAt)),
			ev("Out of bounds values", n), ev("largest #wrong", fmt.Sprintf("%g at %s", worst, humanBytes(worstAt))))
		f.Fix = []string{"rerun without in-network reduction (SHARP/INC) and with NCCL_ALGO=Ring to isolate it", "check the NIC and switch firmware and the RDMA MTU on every hop"}
	case unchecked == 2*len(r.Rows):
		f := add(CheckTestsCorrectness, check.Unknown, "results were not validated (validation: 0, N/A in every row): corruption would not show")
		f.Fix = []string{"rerun with -c 1 (the default)"}
	default:
		add(CheckTestsCorrectness, check.Pass, fmt.Sprintf("every checked size correct (%s 0, out of bounds %s)", r.CheckColumn, orQ(r.OutOfBounds)))
	}

	// implausible in-place or out-of-place algbw
	for _, row := range r.Rows {
		if row.InPlace.AlgbwGBps > maxPlausibleGBps || row.OutOfPlace.AlgbwGBps > maxPlausibleGBps {
			add(CheckTestsImplausible, check.Warn, fmt.Sprintf("algbw %.0f GB/s at %s is faster than any GPU memory: the operation did no work (single rank in-place); such rows say nothing about the fabric",
				max(row.InPlace.AlgbwGBps, row.OutOfPlace.AlgbwGBps), humanBytes(row.SizeBytes)))
			break
		}
	}

	// every number a measurement: inf, NaN or a busbw beyond any GPU
	// interconnect is an error of the run or the capture, never a result
	if msg := badMeasurement(r.Rows); msg != "" {
		add(CheckTestsMeasurement, check.Fail, msg).Fix = []string{"rerun and keep the whole output; a number beyond physics is never judged as bandwidth"}
		return fs, s
	}

	// plateau
	n, nWhy := rankCount(r, opt)
	family := r.Collective
	if family == "" {
		family = collectiveFromColumns(r, n)
	}
	plateau, peak, peakAt, rising := Plateau(r.Rows)
	s.PlateauBusbwGBps, s.PeakBusbwGBps = plateau, peak
	last := r.Rows[len(r.Rows)-1]
	if r.AvgBusbwGBps != nil {
		fs[0].Evidence = append(fs[0].Evidence, ev("Avg bus bandwidth (not used: it averages tiny sizes in)", fmt.Sprintf("%g GB/s", *r.AvgBusbwGBps)))
	}
	if peak > 0 && plateau < 0.8*peak && peakAt < last.SizeBytes {
		add(CheckTestsPlateau, check.Warn, fmt.Sprintf("busbw falls at large sizes: %.2f GB/s at %s, %.2f GB/s at the largest sizes (%.0f%%): memory pressure, PCIe or fabric congestion, or a rail going slow mid-run",
			peak, humanBytes(peakAt), plateau, 100*plateau/peak), ev("peak busbw", fmt.Sprintf("%.2f GB/s at %s", peak, humanBytes(peakAt))), ev("plateau busbw", fmt.Sprintf("%.2f GB/s", plateau)))
	} else if rising {
		add(CheckTestsPlateau, check.Warn, fmt.Sprintf("busbw still rising at the largest size (%s): the plateau was not reached, so the run understates the fabric", humanBytes(last.SizeBytes))).Fix =
			[]string{"rerun with -e 8G (or at least 1G) so the large-message plateau shows"}
	}

	// busbw against the NICs
	expl := ""
	if factor, ok := busFactorOf(family, n); ok {
		expl = fmt.Sprintf("%s over %d ranks: busbw = algbw × %.3g", family, n, factor)
	}
	if nWhy != "" {
		expl = strings.TrimPrefix(expl+"; "+nWhy, "; ")
	}
	hosts := r.Hosts()
	switch {
	case n == 1:
		add(CheckTestsBusbw, check.Unknown, fmt.Sprintf("single rank: nothing crosses a link (busbw %.2f GB/s by definition), so this says nothing about the fabric", plateau)).Fix =
			[]string{"run across at least two nodes (rdmalab nccl run --cluster FILE) to measure the network"}
		return fs, s
	case s.Nodes == 1:
		add(CheckTestsBusbw, check.Unknown, fmt.Sprintf("one node (%s): traffic stays on NVLink/PCIe, not the network; plateau busbw %.2f GB/s", cmpOr(strings.Join(hosts, ","), "--nodes 1"), plateau),
			ev("busbw plateau", fmt.Sprintf("%.2f GB/s", plateau)), ev("factor", expl)).Fix = []string{"run across at least two nodes (rdmalab nccl run --cluster FILE) to measure the network"}
		return fs, s
	case s.Nodes == 0:
		msg := fmt.Sprintf("plateau busbw %.2f GB/s, but the output names no hosts and --nodes was not given: how many nodes (and so NICs) carried it is unknown", plateau)
		if nWhy != "" {
			msg = fmt.Sprintf("plateau busbw %.2f GB/s over %d ranks (%s), but the output names no hosts and --nodes was not given: how many nodes (and so NICs) carried it is unknown", plateau, n, nWhy)
		}
		f := add(CheckTestsBusbw, check.Unknown, msg, ev("busbw plateau", fmt.Sprintf("%.2f GB/s", plateau)))
		if nWhy != "" {
			f.Evidence = append(f.Evidence, ev("ranks", nWhy))
		}
		f.Fix = []string{fmt.Sprintf("give the node count: rdmalab nccl judge %s --nodes N --ranks-per-node R --expect-rate RATE --rails RAILS (N × R = the %s ranks of the run)", subject, cmpOr(itoaPos(n), "run's"))}
		return fs, s
	case opt.NIC.RateGbps <= 0:
		f := add(CheckTestsBusbw, check.Unknown, fmt.Sprintf("plateau busbw %.2f GB/s over %d nodes, but the NIC rate is unknown, so it is not judged", plateau, s.Nodes),
			ev("busbw plateau", fmt.Sprintf("%.2f GB/s", plateau)))
		if expl != "" {
			f.Evidence = append(f.Evidence, ev("factor", expl))
		}
		f.Fix = []string{fmt.Sprintf("give the NIC: rdmalab nccl judge %s --expect-rate 200 --rails 8 (the rate of one rail and the rails per node), or run through rdmalab nccl run, which knows the cluster", subject)}
		return fs, s
	}
	rails := max(opt.RailsPerNode, 1)
	ceiling := linkrate.BusbwCeilingGBps(opt.NIC, rails)
	s.ExpectedGBps = ceiling
	why := fmt.Sprintf("%d × %s = %.1f GB/s per node (%s)", rails, opt.NIC.Describe(), ceiling, cmpOr(opt.NICSource, "given"))
	evs := []check.Evidence{ev("busbw plateau", fmt.Sprintf("%.2f GB/s (out-of-place, median of the 3 largest sizes)", plateau)), ev("NIC ceiling", why)}
	if expl != "" {
		evs = append(evs, ev("factor", expl))
	}
	if len(hosts) == 0 && opt.Nodes > 0 {
		evs = append(evs, ev("nodes", fmt.Sprintf("%d (--nodes; the output names no hosts)", opt.Nodes)))
	}
	frac := plateau / ceiling
	fell := peak > 0 && plateau < 0.8*peak
	if fell {
		evs = append(evs, ev("peak busbw before the fall", fmt.Sprintf("%.2f GB/s at %s (%.0f%% of the ceiling)", peak, humanBytes(peakAt), 100*peak/ceiling)))
	}
	// all_reduce's ring formula overstates what Tree and in-network
	// reduction (NVLS, CollNet/SHARP) move per rank: up to twice the NIC.
	reduces := family == "all_reduce" || (family == "" && last.Redop != "" && last.Redop != "none")
	explained := reduces && !strings.EqualFold(opt.Algo, "Ring") && frac <= 2*1.05
	switch {
	case frac > 1.05 && explained:
		f := add(CheckTestsBusbw, check.Warn, fmt.Sprintf("busbw %.2f GB/s is above what the NICs can carry (%.1f GB/s, %.0f%%): nccl-tests computes busbw with the ring factor, and Tree/NVLS/CollNet (SHARP) move less data per rank, so this is the formula, not a faster network — it proves nothing about the NICs", plateau, ceiling, 100*frac), evs...)
		f.Fix = []string{"judge the network with NCCL_ALGO=Ring (rdmalab nccl run sets it) and --algo Ring"}
	case frac > 1.05:
		msg := fmt.Sprintf("busbw %.2f GB/s is %.0f%% of what the NICs can carry (%.1f GB/s): beyond physics, so a measurement error or a wrong expectation (more rails or a faster NIC than given, or a run that did not cross the network) — never a good result", plateau, 100*frac, ceiling)
		if strings.EqualFold(opt.Algo, "Ring") {
			msg = fmt.Sprintf("busbw %.2f GB/s with NCCL_ALGO=Ring is %.0f%% of what the NICs can carry (%.1f GB/s): the expectation is wrong (more rails or a faster NIC than given) or the run did not cross the network", plateau, 100*frac, ceiling)
		}
		f := add(CheckTestsBusbw, check.Fail, msg, evs...)
		f.Fix = []string{"check --expect-rate and --rails against the nodes (rdmalab inventory), and that the ranks ran on different nodes"}
	case frac >= HealthyFraction:
		add(CheckTestsBusbw, check.Pass, fmt.Sprintf("busbw plateau %.2f GB/s is %.0f%% of the NIC ceiling %.1f GB/s", plateau, 100*frac, ceiling), evs...)
	case frac >= DegradedFraction:
		add(CheckTestsBusbw, check.Warn, fmt.Sprintf("busbw plateau %.2f GB/s is %.0f%% of the NIC ceiling %.1f GB/s (healthy ≥ %.0f%%): a slow rail, GPUDirect off on some ranks, or congestion", plateau, 100*frac, ceiling, 100*HealthyFraction), evs...)
	case fell && peak/ceiling >= HealthyFraction:
		// the path carried line rate at smaller sizes: it is RDMA, and the fall is the problem
		add(CheckTestsBusbw, check.Fail, fmt.Sprintf("busbw at the largest sizes %.2f GB/s is %.0f%% of the NIC ceiling %.1f GB/s, after reaching %.0f%% at %s: the path is RDMA, the fall at large sizes is the fault (see nccl.tests.plateau)",
			plateau, 100*frac, ceiling, 100*peak/ceiling, humanBytes(peakAt)), evs...)
	default:
		f := add(CheckTestsBusbw, check.Fail, fmt.Sprintf("busbw plateau %.2f GB/s is %.0f%% of the NIC ceiling %.1f GB/s: RDMA is likely not used (NET/Socket) or GPUDirect is off", plateau, 100*frac, ceiling), evs...)
		f.Fix = []string{"rerun with NCCL_DEBUG=INFO and look for NET/Socket or a channel without /GDRDMA (rdmalab judge the log)"}
	}
	return fs, s
}

func itoaPos(n int) string {
	if n > 0 {
		return fmt.Sprint(n)
	}
	return ""
}

// badMeasurement names the first number of the table that is not a
// measurement: inf or NaN anywhere, or a busbw beyond what any GPU
// interconnect or NIC carries (twice NVLink 5, the all_reduce formula's
// most with in-switch reduction).
func badMeasurement(rows []Row) string {
	limit := 2 * 1.05 * linkrate.NVLinkMaxGBps
	for _, row := range rows {
		for _, p := range []struct {
			half string
			Perf
		}{{"out-of-place", row.OutOfPlace}, {"in-place", row.InPlace}} {
			for _, v := range []struct {
				name string
				x    float64
			}{{"time", p.TimeUS}, {"algbw", p.AlgbwGBps}, {"busbw", p.BusbwGBps}} {
				if math.IsInf(v.x, 0) || math.IsNaN(v.x) {
					return fmt.Sprintf("%s %s is %g at %s: not a measurement (a zero time or a broken timer), so the run's numbers cannot be judged", p.half, v.name, v.x, humanBytes(row.SizeBytes))
				}
			}
			if p.BusbwGBps > limit {
				return fmt.Sprintf("%s busbw %g GB/s at %s is beyond any GPU interconnect or NIC (the fastest, NVLink 5, carries %d GB/s per direction; even in-switch reduction cannot double it past %.0f GB/s): a measurement error, never a result",
					p.half, p.BusbwGBps, humanBytes(row.SizeBytes), linkrate.NVLinkMaxGBps, limit)
			}
		}
	}
	return ""
}

// typeBytes is the size of an nccl-tests data type.
func typeBytes(t string) int64 {
	switch strings.ToLower(t) {
	case "int8", "uint8", "char", "f8e4m3", "f8e5m2", "fp8_e4m3", "fp8_e5m2":
		return 1
	case "half", "float16", "bfloat16", "bf16", "fp16":
		return 2
	case "float", "float32", "int32", "uint32", "int":
		return 4
	case "double", "float64", "int64", "uint64":
		return 8
	}
	return 0
}

// perRankCount is size / (count × type size) at the largest size: 1 where
// count is the whole buffer (all_reduce, broadcast, reduce, sendrecv), the
// rank count where it is one rank's share (all_gather, reduce_scatter,
// alltoall, gather, scatter). 0 when the columns cannot say.
func perRankCount(r *TestRun) int64 {
	for i := len(r.Rows) - 1; i >= 0; i-- {
		row := r.Rows[i]
		tb := typeBytes(row.Type)
		if tb == 0 || row.Count <= 0 || row.SizeBytes <= 0 {
			continue
		}
		if row.SizeBytes%(row.Count*tb) != 0 {
			return 0
		}
		return row.SizeBytes / (row.Count * tb)
	}
	return 0
}

// rankCount is how many ranks the run had, and how that is known: the
// "#  Rank" lines, the size and count columns, --nodes × --ranks-per-node,
// nThread × nGpus of a lone process, or busbw/algbw (rounded: a range
// when it cannot tell one count from the next).
func rankCount(r *TestRun, opt JudgeOptions) (int, string) {
	if len(r.Ranks) > 0 {
		return len(r.Ranks), ""
	}
	if k := perRankCount(r); k > 1 {
		row := r.Rows[len(r.Rows)-1]
		return int(k), fmt.Sprintf("%d ranks from the size and count columns: %d B / (%d × %d-byte %s) = %d (each rank's share)", k, row.SizeBytes, row.Count, typeBytes(row.Type), row.Type, k)
	}
	if opt.Nodes > 0 && opt.RanksPerNode > 0 {
		return opt.Nodes * opt.RanksPerNode, fmt.Sprintf("%d ranks from --nodes %d × --ranks-per-node %d", opt.Nodes*opt.RanksPerNode, opt.Nodes, opt.RanksPerNode)
	}
	n := r.NThread * r.NGPUs
	if m, coll, why := InferRanks(r); m > 1 && m != n {
		if r.Collective == "" && coll != "" && perRankCount(r) != 1 {
			r.Collective = coll
		}
		return m, why
	}
	return n, ""
}

// collectiveFromColumns names what the columns show when no header or
// command line named the collective: a per-rank count is the (n−1)/n
// family (reduce_scatter when it reduces), else the busbw/algbw ratio.
func collectiveFromColumns(r *TestRun, n int) string {
	if k := perRankCount(r); k > 1 {
		last := r.Rows[len(r.Rows)-1]
		if last.Redop != "" && last.Redop != "none" {
			return "reduce_scatter"
		}
		return "all_gather/alltoall/gather/scatter"
	}
	return inferCollective(r, n)
}

// busFactorOf is BusFactor with the (n−1)/n family named as one.
func busFactorOf(coll string, n int) (float64, bool) {
	if coll == "all_gather/alltoall/gather/scatter" {
		coll = "all_gather"
	}
	return BusFactor(coll, n)
}

// inferCollective names the collective from the busbw/algbw ratio of the
// largest size when exactly one collective fits it, the root column and
// the reduction op; "" when ambiguous (2 ranks: all_reduce and sendrecv
// both have factor 1).
func inferCollective(r *TestRun, n int) string {
	last := r.Rows[len(r.Rows)-1].OutOfPlace
	if n < 2 || last.AlgbwGBps <= 0 {
		return ""
	}
	ratio := last.BusbwGBps / last.AlgbwGBps
	row := r.Rows[len(r.Rows)-1]
	rooted := row.Root != nil && *row.Root >= 0
	reduces := row.Redop != "" && row.Redop != "none"
	var fit []string
	for _, c := range []string{"all_reduce", "reduce_scatter", "all_gather", "alltoall", "gather", "scatter", "broadcast", "reduce", "sendrecv"} {
		f, _ := BusFactor(c, n)
		isRooted := slices.Contains([]string{"broadcast", "reduce", "gather", "scatter"}, c)
		isReduce := slices.Contains([]string{"all_reduce", "reduce", "reduce_scatter"}, c)
		if math.Abs(f-ratio) > 0.02*f || (row.Root != nil && isRooted != rooted) || (isReduce && !reduces) {
			continue
		}
		fit = append(fit, c)
	}
	if len(fit) == 1 {
		return fit[0]
	}
	return ""
}

// InferRanks reads the number of ranks from the largest size's busbw/algbw
// ratio, nccl-tests' bus factor: 2(n−1)/n for all_reduce, (n−1)/n for
// reduce_scatter, all_gather, alltoall, gather, scatter. The collective is
// r.Collective, else the only one that fits (a ratio over 1 is all_reduce;
// under 1 with a reduction op, reduce_scatter). 0 when the ratio cannot
// tell (broadcast, reduce and sendrecv have factor 1 at any n).
func InferRanks(r *TestRun) (n int, collective, why string) {
	if len(r.Rows) == 0 {
		return 0, "", ""
	}
	row := r.Rows[len(r.Rows)-1]
	p := row.OutOfPlace
	if p.AlgbwGBps <= 0 || p.BusbwGBps <= 0 {
		return 0, "", ""
	}
	ratio := p.BusbwGBps / p.AlgbwGBps
	coll := r.Collective
	if coll == "" {
		switch {
		case ratio > 1.02:
			coll = "all_reduce"
		case ratio < 0.98 && row.Redop != "" && row.Redop != "none":
			coll = "reduce_scatter"
		case ratio < 0.98:
			coll = "all_gather" // alltoall, gather, scatter share the factor
		default:
			return 0, "", ""
		}
	}
	var m float64
	switch coll {
	case "all_reduce":
		if ratio >= 2 {
			return 0, "", ""
		}
		m = 2 / (2 - ratio)
	case "reduce_scatter", "all_gather", "alltoall", "gather", "scatter", "hypercube":
		if ratio >= 1 {
			return 0, "", ""
		}
		m = 1 / (1 - ratio)
	default:
		return 0, "", ""
	}
	n = int(math.Round(m))
	if f, ok := BusFactor(coll, n); n < 2 || !ok || math.Abs(f-ratio) > 0.03*f {
		return 0, "", ""
	}
	formula := "(n−1)/n"
	if coll == "all_reduce" {
		formula = "2(n−1)/n"
	}
	// busbw and algbw are printed to two decimals: the ratio is known
	// only within their rounding, and near 2 (or 1) many counts fit it
	// (64 ranks read as 73). Say the range rather than guess inside it.
	lo, hi := ranksFor(coll, (p.BusbwGBps-0.005)/(p.AlgbwGBps+0.005)), ranksFor(coll, (p.BusbwGBps+0.005)/math.Max(p.AlgbwGBps-0.005, 1e-9))
	if lo >= 2 && int(math.Ceil(lo)) < int(math.Floor(hi)) {
		n = int(math.Ceil(lo))
		return n, coll, fmt.Sprintf("between %d and %d ranks by busbw/algbw = %.2f/%.2f = %.4g = %s for %s at %s; the two decimals printed cannot tell which (no \"#  Rank\" lines; give --nodes and --ranks-per-node)",
			n, int(math.Floor(hi)), p.BusbwGBps, p.AlgbwGBps, ratio, formula, coll, humanBytes(row.SizeBytes))
	}
	return n, coll, fmt.Sprintf("%d ranks inferred: busbw/algbw = %.2f/%.2f = %.3g = %s for %s at %s (no \"#  Rank\" lines in the output)",
		n, p.BusbwGBps, p.AlgbwGBps, ratio, formula, coll, humanBytes(row.SizeBytes))
}

// ranksFor inverts the bus factor: the rank count a busbw/algbw ratio
// means for coll (+Inf at the factor's limit).
func ranksFor(coll string, ratio float64) float64 {
	limit := 1.0
	if coll == "all_reduce" {
		limit = 2
	}
	if ratio >= limit {
		return math.Inf(1)
	}
	return limit / (limit - ratio)
}

// Plateau returns the busbw the verdict uses: the median out-of-place busbw
// of the three largest sizes; the peak busbw and its size; and whether busbw
// was still rising at the end (the last size >10% over the third-last).
func Plateau(rows []Row) (plateau, peak float64, peakAt int64, rising bool) {
	if len(rows) == 0 {
		return 0, 0, 0, false
	}
	sorted := slices.Clone(rows)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].SizeBytes < sorted[j].SizeBytes })
	tail := sorted[max(0, len(sorted)-3):]
	vals := make([]float64, len(tail))
	for i, r := range tail {
		vals[i] = r.OutOfPlace.BusbwGBps
	}
	slices.Sort(vals)
	plateau = vals[len(vals)/2]
	for _, r := range sorted {
		if r.OutOfPlace.BusbwGBps > peak {
			peak, peakAt = r.OutOfPlace.BusbwGBps, r.SizeBytes
		}
	}
	if len(tail) == 3 && tail[0].OutOfPlace.BusbwGBps > 0 {
		rising = tail[2].OutOfPlace.BusbwGBps > 1.1*tail[0].OutOfPlace.BusbwGBps
	}
	return plateau, peak, peakAt, rising
}

func orQ(p *int) string {
	if p == nil {
		return "not printed"
	}
	return fmt.Sprint(*p)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

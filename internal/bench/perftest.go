// Package bench judges pairwise benchmarks of a cluster against what the
// link can carry and against the peers: the results log's records, the
// perftest output parsers, the schedules' plans, the cover localiser's
// verdict and the findings. It runs nothing: internal/benchrun measures.
package bench

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// PerftestResult is one perftest run's table.
type PerftestResult struct {
	Kind string `json:"kind"` // bw or lat
	// Unit is the bandwidth unit the table used: "Gb/sec", "MiB/sec", or
	// "MB/sec" (perftest 4.x; it means MiB/s too).
	Unit     string        `json:"unit,omitempty"`
	Rows     []PerftestRow `json:"rows"`
	LinkType string        `json:"link_type,omitempty"` // IB, Ethernet
	MTUBytes int           `json:"mtu_bytes,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
	// Test is the banner perftest prints ("RDMA_Read Latency Test"),
	// Device the HCA it ran on (rxe0 is software RoCE).
	Test   string `json:"test,omitempty"`
	Device string `json:"device,omitempty"`
}

// Operation is the verb the run measured: write, read, send or atomic
// ("" when the banner is missing).
func (r *PerftestResult) Operation() string {
	t := strings.ToLower(r.Test)
	for _, op := range []string{"write", "read", "send", "atomic"} {
		if strings.Contains(t, op) {
			return op
		}
	}
	return ""
}

// Software reports whether the device is a software RDMA provider
// (Soft-RoCE rxe, soft-iWARP siw): its latency is the kernel's, not a NIC's.
func (r *PerftestResult) Software() bool {
	return strings.HasPrefix(r.Device, "rxe") || strings.HasPrefix(r.Device, "siw")
}

// PerftestRow is one message size. Bandwidths are in Gb/s whatever the
// table's unit; latencies in microseconds.
type PerftestRow struct {
	Bytes       int64   `json:"bytes"`
	Iterations  int64   `json:"iterations"`
	PeakGbps    float64 `json:"peak_gbps,omitempty"`
	AvgGbps     float64 `json:"avg_gbps,omitempty"`
	MsgRateMpps float64 `json:"msg_rate_mpps,omitempty"`
	MinUs       float64 `json:"t_min_us,omitempty"`
	MaxUs       float64 `json:"t_max_us,omitempty"`
	TypicalUs   float64 `json:"t_typical_us,omitempty"`
	AvgUs       float64 `json:"t_avg_us,omitempty"`
	StdevUs     float64 `json:"t_stdev_us,omitempty"`
	P99Us       float64 `json:"p99_us,omitempty"`
	P999Us      float64 `json:"p99_9_us,omitempty"`
}

var (
	rowRE  = lazyre.New(`^\s*\d+\s+\d+\s`)
	unitRE = lazyre.New(`BW average\[([^\]]+)\]`)
	mtuRE  = lazyre.New(`^\s*Mtu\s*:\s*(\d+)`)
	linkRE = lazyre.New(`^\s*Link type\s*:\s*(\S+)`)
	// The banner: "RDMA_Write BW Test", "Send Latency Test".
	testRE   = lazyre.New(`^\s*([A-Za-z_ ]+ (?:BW|Latency) Test)\s*$`)
	deviceRE = lazyre.New(`Device\s*:\s*(\S+)`)
	// perftest's warnings, however a version spells them: "WARNING: CPU
	// is not PCIe relaxed ordering compliant.", "Warning: ...",
	// "Conflicting CPU frequency values detected ... CPU Frequency is not
	// max.", "... won't be measured".
	warnRE = lazyre.New(`(?i)^warning\b|conflicting cpu frequency|cpu frequency is not max|won't be measured`)
)

// ParsePerftest reads the output of any perftest bandwidth or latency test
// of any generation: 4.x MB/sec tables, --report_gbits, MiB/sec, -a sweeps,
// latency tables with or without percentile columns, warnings printed
// inside the table, and loopback runs whose server and client lines are
// interleaved (identical rows are kept once). A line that looks like a row
// but does not parse is an error that quotes it, never a zero.
func ParsePerftest(text string) (*PerftestResult, error) {
	r := &PerftestResult{}
	var cols []string
	var header string
	again := false // the same table again: the other side of a loopback run
	seen := map[int64]PerftestRow{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.ReplaceAll(sc.Text(), "\t", " ")
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "#bytes"):
			if len(r.Rows) > 0 && strings.Join(strings.Fields(trim), " ") == header {
				again = true
				continue
			}
			if len(r.Rows) > 0 {
				return nil, fmt.Errorf("perftest output line %d: a second result table; give one run's output at a time: %q", n, trim)
			}
			cols = headerColumns(trim)
			header = strings.Join(strings.Fields(trim), " ")
			if strings.Contains(trim, "BW ") {
				r.Kind = "bw"
				if m := unitRE().FindStringSubmatch(trim); m != nil {
					r.Unit = m[1]
				}
			} else {
				r.Kind = "lat"
			}
			continue
		case mtuRE().MatchString(line):
			r.MTUBytes, _ = strconv.Atoi(mtuRE().FindStringSubmatch(line)[1])
			continue
		case linkRE().MatchString(line):
			r.LinkType = linkRE().FindStringSubmatch(line)[1]
			continue
		case cols == nil && testRE().MatchString(line):
			r.Test = strings.TrimSpace(testRE().FindStringSubmatch(line)[1])
			continue
		case warnRE().MatchString(trim):
			if !slices.Contains(r.Warnings, trim) {
				r.Warnings = append(r.Warnings, trim)
			}
			continue
		}
		if m := deviceRE().FindStringSubmatch(line); m != nil && r.Device == "" {
			r.Device = m[1]
		}
		if cols == nil || !rowRE().MatchString(line) {
			continue
		}
		row, err := parseRow(trim, cols, r.Unit)
		if err != nil {
			return nil, fmt.Errorf("perftest output line %d: %v: %q", n, err, trim)
		}
		if prev, ok := seen[row.Bytes]; ok {
			if again && prev != row {
				return nil, fmt.Errorf("perftest output line %d: a second result table with other numbers; give one run's output at a time: %q", n, trim)
			}
			continue // the other side of a loopback run, interleaved or not
		}
		if again {
			return nil, fmt.Errorf("perftest output line %d: a second result table; give one run's output at a time: %q", n, trim)
		}
		seen[row.Bytes] = row
		r.Rows = append(r.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cols == nil {
		return nil, fmt.Errorf("perftest output has no result table (no #bytes header): did the test run? last line: %q", lastNonEmpty(text))
	}
	if len(r.Rows) == 0 {
		return nil, fmt.Errorf("perftest output has a %s table header but no rows: last line: %q", r.Kind, lastNonEmpty(text))
	}
	return r, nil
}

// headerColumns names the columns of a table header, in header order.
func headerColumns(h string) []string {
	type col struct {
		at   int
		name string
	}
	var cols []col
	for _, c := range []struct{ key, col string }{
		{"#iterations", "iterations"}, {"BW peak", "peak"}, {"BW average", "avg"}, {"MsgRate", "rate"},
		{"t_min", "min"}, {"t_max", "max"}, {"t_typical", "typical"}, {"t_avg", "tavg"}, {"t_stdev", "stdev"},
		{"99% percentile", "p99"}, {"99.9% percentile", "p999"},
	} {
		if i := strings.Index(h, c.key); i >= 0 {
			cols = append(cols, col{i, c.col})
		}
	}
	slices.SortFunc(cols, func(a, b col) int { return a.at - b.at })
	out := []string{"bytes"}
	for _, c := range cols {
		out = append(out, c.name)
	}
	return out
}

func parseRow(line string, cols []string, unit string) (PerftestRow, error) {
	f := strings.Fields(line)
	if len(f) != len(cols) {
		return PerftestRow{}, fmt.Errorf("%d fields, the table header has %d", len(f), len(cols))
	}
	var row PerftestRow
	toGbps := 1.0
	switch unit {
	case "MB/sec", "MiB/sec":
		toGbps = 8 * (1 << 20) / 1e9
	case "", "Gb/sec":
	default:
		return row, fmt.Errorf("unknown bandwidth unit %q", unit)
	}
	for i, c := range cols {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return row, fmt.Errorf("column %s is %q, not a number", c, f[i])
		}
		switch c {
		case "bytes":
			row.Bytes = int64(v)
		case "iterations":
			row.Iterations = int64(v)
		case "peak":
			row.PeakGbps = v * toGbps
		case "avg":
			row.AvgGbps = v * toGbps
		case "rate":
			row.MsgRateMpps = v
		case "min":
			row.MinUs = v
		case "max":
			row.MaxUs = v
		case "typical":
			row.TypicalUs = v
		case "tavg":
			row.AvgUs = v
		case "stdev":
			row.StdevUs = v
		case "p99":
			row.P99Us = v
		case "p999":
			row.P999Us = v
		}
	}
	return row, nil
}

func lastNonEmpty(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Best is the row a bandwidth verdict uses (the largest message) and the
// row a latency verdict uses (the smallest).
func (r *PerftestResult) Best() PerftestRow {
	best := r.Rows[0]
	for _, row := range r.Rows {
		if (r.Kind == "bw" && row.Bytes > best.Bytes) || (r.Kind == "lat" && row.Bytes < best.Bytes) {
			best = row
		}
	}
	return best
}

// ParsePerftestRuns reads text holding one or more perftest runs one after
// the other (a session transcript, a server's output then its client's,
// two tests pasted together): a new run starts at a test banner once the
// run before it has a result row. Runs with the same test and the same
// rows (the two sides of a loopback run printed one after the other) are
// kept once. Each run is parsed by ParsePerftest.
func ParsePerftestRuns(text string) ([]*PerftestResult, error) {
	var segs []string
	var cur strings.Builder
	header, row := false, false
	for _, line := range strings.SplitAfter(text, "\n") {
		plain := strings.ReplaceAll(strings.TrimRight(line, "\r\n"), "\t", " ")
		if testRE().MatchString(plain) && row {
			segs = append(segs, cur.String())
			cur.Reset()
			header, row = false, false
		}
		switch {
		case strings.HasPrefix(strings.TrimSpace(plain), "#bytes"):
			header = true
		case header && rowRE().MatchString(plain):
			row = true
		}
		cur.WriteString(line)
	}
	segs = append(segs, cur.String())
	var runs []*PerftestResult
	at := 0 // lines before the segment, for errors that name a line
	for i, s := range segs {
		r, err := ParsePerftest(s)
		if err != nil {
			if len(segs) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("run %d of %d (from line %d): %w", i+1, len(segs), at+1, err)
		}
		at += strings.Count(s, "\n")
		if n := len(runs); n > 0 && runs[n-1].Test == r.Test && slices.Equal(runs[n-1].Rows, r.Rows) {
			continue
		}
		runs = append(runs, r)
	}
	return runs, nil
}

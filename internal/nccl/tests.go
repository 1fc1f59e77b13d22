// Package nccl proves the GPU data path: it predicts from host snapshots
// what NCCL will do (rail NIC per GPU, path level, GPUDirect RDMA, RoCE GID
// index, bootstrap interface), writes the environment that makes it so,
// and judges nccl-tests output, NCCL_DEBUG logs, nccl run's results and
// RAS reports. Every judgement is a check.Finding. It runs nothing:
// internal/ncclrun launches nccl-tests and polls RAS.
package nccl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// TestRun is one nccl-tests run as it printed itself.
type TestRun struct {
	// Collective is all_reduce, all_gather, … when the output names it
	// ("# Collective test starting: all_reduce_perf", or the command line
	// before the table), else "": never the file's name.
	Collective string `json:"collective,omitempty"`
	// Format is "text" or "json".
	Format string `json:"format"`
	// CheckColumn is the header's correctness column: "#wrong" (a count)
	// or "error" (older nccl-tests: the largest deviation).
	CheckColumn string `json:"check_column,omitempty"`
	NThread     int    `json:"nthread,omitempty"`
	NGPUs       int    `json:"ngpus,omitempty"`
	// Validation is the -c setting; nil when not printed.
	Validation *bool      `json:"validation,omitempty"`
	Ranks      []TestRank `json:"ranks,omitempty"`
	Rows       []Row      `json:"rows"`
	// OutOfBounds is "# Out of bounds values : N OK|FAILED"; nil when absent.
	OutOfBounds *int `json:"out_of_bounds,omitempty"`
	OOBFailed   bool `json:"out_of_bounds_failed,omitempty"`
	// AvgBusbwGBps is the "# Avg bus bandwidth" line, kept only to show that
	// it is not what the verdict uses; nil when absent.
	AvgBusbwGBps *float64 `json:"avg_busbw_gbps,omitempty"`
	// Started/Concluded are nccl-tests ≥ 2.17's "# Collective test
	// starting/concluded" lines.
	Started   bool `json:"started,omitempty"`
	Concluded bool `json:"concluded,omitempty"`
	// Truncated is set for JSON output cut before its end.
	Truncated bool `json:"truncated,omitempty"`
	// StrayLines counts lines inside the table that were not rows (NCCL
	// INFO lines, "Connect QP" noise).
	StrayLines int `json:"stray_lines,omitempty"`
	// NCCLVersion is "NCCL version X" when printed.
	NCCLVersion string `json:"nccl_version,omitempty"`
	// FromHeader is a table that starts at its column header (pasted
	// without the lines nccl-tests prints before it).
	FromHeader bool `json:"from_header,omitempty"`
}

// TestRank is one "#  Rank  0 Group  0 Pid 1234 on host device 0 [0x31] NAME" line.
type TestRank struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id,omitempty"`
	Name   string `json:"name,omitempty"`
}

// Row is one message size.
type Row struct {
	SizeBytes  int64  `json:"size_bytes"`
	Count      int64  `json:"count"`
	Type       string `json:"type,omitempty"`
	Redop      string `json:"redop,omitempty"`
	Root       *int   `json:"root,omitempty"`
	OutOfPlace Perf   `json:"out_of_place"`
	InPlace    Perf   `json:"in_place"`
}

// Perf is one half of a row.
type Perf struct {
	TimeUS    float64 `json:"time_us"`
	AlgbwGBps float64 `json:"algbw_gbps"`
	BusbwGBps float64 `json:"busbw_gbps"`
	// Wrong is the #wrong count (or the older error value); Checked is
	// false when nccl-tests printed N/A (validation off).
	Wrong   float64 `json:"wrong"`
	Checked bool    `json:"checked"`
}

// Hosts lists the distinct hosts of the ranks in rank order.
func (r *TestRun) Hosts() []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range r.Ranks {
		if !seen[k.Host] {
			seen[k.Host] = true
			out = append(out, k.Host)
		}
	}
	return out
}

// ompiTag is what `mpirun --tag-output` puts before each line. Open MPI
// tags each chunk it forwards, so a line that straddles two chunks carries
// a second tag in its middle: "… 7.96 [1,0]<stdout>:     0 …".
var ompiTag = lazyre.New(`\[\d+,\d+\]<std(?:out|err)>:`)

// UntangleMPITags puts the streams of an `mpirun --tag-output` log back
// into whole lines. Open MPI tags each chunk it forwards and each line
// inside one, but the chunks of different ranks reach mpirun as they
// come, so on a busy node one rank's line can be cut by another rank's
// chunk:
//
//	[1,0]<stdout>:#      4096  [1,1]<stdout>:n2:7:7 [0] NCCL INFO …\n[1,0]<stdout>:  1024  float …\n
//
// A tag owns the text after it up to its first newline; text after that
// newline and before the next tag is mpirun's own and passes as is. Each
// line is written, tagged once, when its stream completes it; lines still
// open at the end (a rank killed mid-line) close the output in the order
// they opened. Text without tags is returned unchanged, and untangled
// text untangles to itself.
func UntangleMPITags(b []byte) []byte {
	if !bytes.Contains(b, []byte("]<std")) {
		return b
	}
	locs := ompiTag().FindAllIndex(b, -1)
	if locs == nil {
		return b
	}
	out := bytes.NewBuffer(make([]byte, 0, len(b)+64))
	out.Write(b[:locs[0][0]])
	type open struct {
		tag  string
		line []byte
	}
	var pending []open // few: one per rank stream with a cut line
	for i, loc := range locs {
		tag := string(b[loc[0]:loc[1]])
		end := len(b)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		own, rest := b[loc[1]:end], []byte(nil)
		if nl := bytes.IndexByte(own, '\n'); nl >= 0 {
			own, rest = own[:nl+1], own[nl+1:]
		}
		k := slices.IndexFunc(pending, func(o open) bool { return o.tag == tag })
		ends := bytes.HasSuffix(own, []byte("\n"))
		switch {
		case k >= 0 && ends:
			out.WriteString(tag)
			out.Write(pending[k].line)
			out.Write(own)
			pending = slices.Delete(pending, k, k+1)
		case k >= 0:
			pending[k].line = append(pending[k].line, own...)
		case ends:
			out.WriteString(tag)
			out.Write(own)
		default:
			pending = append(pending, open{tag, slices.Clone(own)})
		}
		out.Write(rest)
	}
	for _, o := range pending {
		out.WriteString(o.tag)
		out.Write(o.line)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// StripMPIPrefix removes Open MPI --tag-output tags (at the start and,
// where a chunk boundary put one, inside the line) and returns the rank
// the first one named (-1 when none).
func StripMPIPrefix(line string) (string, int) {
	loc := ompiTag().FindStringIndex(line)
	if loc == nil {
		return line, -1
	}
	tag := line[loc[0]:loc[1]]
	_, r, _ := strings.Cut(strings.TrimPrefix(tag, "["), ",")
	r, _, _ = strings.Cut(r, "]")
	n, err := strconv.Atoi(r)
	if err != nil || loc[0] != 0 {
		n = -1
	}
	return ompiTag().ReplaceAllString(line, ""), n
}

var (
	rankLineRE  = lazyre.New(`^#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	nthreadRE   = lazyre.New(`^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+).*?validation:\s*(\d)`)
	collStartRE = lazyre.New(`^#\s*Collective test starting:\s*(\S+)`)
	collEndRE   = lazyre.New(`^#\s*Collective test concluded`)
	oobRE       = lazyre.New(`^#\s*Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)`)
	avgRE       = lazyre.New(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	versionRE   = lazyre.New(`NCCL version (\S+)`)
	perfNameRE  = lazyre.New(`(?:\b|nccl_)(all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|gather|scatter|hypercube)_perf\b`)
)

// ParseTests reads nccl-tests output (either text layout, or -J/--json
// output) and returns its runs in order. Lines that belong to neither are
// skipped: nccl-tests output is always mixed with launcher and NCCL noise.
func ParseTests(b []byte) []*TestRun {
	b = UntangleMPITags(b)
	if bytes.Contains(b, []byte(`"nccl-tests structured output"`)) {
		b = ompiTag().ReplaceAll(b, nil) // JSON is not line-based: untag it whole
	}
	if i := bytes.Index(b, []byte(`"nccl-tests structured output"`)); i >= 0 {
		if j := bytes.LastIndexByte(b[:i], '{'); j >= 0 {
			return []*TestRun{parseJSON(b[j:], string(b[:j]))}
		}
	}
	var runs []*TestRun
	var cur *TestRun
	var mid []string // header columns between count and time
	hint, version := "", ""
	inTable := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	newRun := func() {
		cur = &TestRun{Format: "text", Collective: hint}
		runs = append(runs, cur)
		mid, inTable = nil, false
	}
	for sc.Scan() {
		line, _ := StripMPIPrefix(sc.Text())
		t := strings.TrimSpace(line)
		if m := perfNameRE().FindStringSubmatch(t); m != nil && !strings.HasPrefix(t, "#") {
			hint = m[1] // a command line before the run
		}
		switch {
		case collStartRE().MatchString(t):
			name := strings.TrimSuffix(collStartRE().FindStringSubmatch(t)[1], "_perf")
			hint = name
			newRun()
			cur.Started = true
			continue
		case nthreadRE().MatchString(t):
			if cur == nil || len(cur.Rows) > 0 || cur.NThread != 0 {
				newRun()
			}
			m := nthreadRE().FindStringSubmatch(t)
			cur.NThread, _ = strconv.Atoi(m[1])
			cur.NGPUs, _ = strconv.Atoi(m[2])
			v := m[3] == "1"
			cur.Validation = &v
			continue
		}
		if m := versionRE().FindStringSubmatch(t); m != nil && !strings.Contains(t, "NCCL INFO") {
			version = m[1] // rank 0 prints it bare, before or inside the table
		}
		if isHeader(t) && (cur == nil || len(cur.Rows) > 0) {
			// a table pasted from its column header (blogs, tickets): no
			// nThread line, no ranks, maybe no end
			newRun()
			cur.FromHeader = true
		}
		if cur == nil {
			continue
		}
		switch {
		case rankLineRE().MatchString(t):
			m := rankLineRE().FindStringSubmatch(t)
			r := TestRank{Host: m[2], BusID: m[4], Name: strings.TrimSpace(m[5])}
			r.Rank, _ = strconv.Atoi(m[1])
			r.Device, _ = strconv.Atoi(m[3])
			cur.Ranks = append(cur.Ranks, r)
		case isHeader(t):
			mid, cur.CheckColumn = headerMiddle(t)
			inTable = true
		case oobRE().MatchString(t):
			m := oobRE().FindStringSubmatch(t)
			n, _ := strconv.Atoi(m[1])
			cur.OutOfBounds, cur.OOBFailed = &n, m[2] == "FAILED"
			inTable = false
		case avgRE().MatchString(t):
			if v, err := strconv.ParseFloat(avgRE().FindStringSubmatch(t)[1], 64); err == nil {
				cur.AvgBusbwGBps = &v
			}
			inTable = false
		case collEndRE().MatchString(t):
			cur.Concluded = true
			inTable = false
		case inTable && !strings.HasPrefix(t, "#") && t != "":
			if row, ok := parseRow(t, mid); ok {
				cur.Rows = append(cur.Rows, row)
			} else {
				cur.StrayLines++
			}
		}
	}
	// a version line alone is not a run
	out := runs[:0]
	for _, r := range runs {
		if r.NThread > 0 || len(r.Rows) > 0 || r.Started {
			if r.NCCLVersion == "" {
				r.NCCLVersion = version
			}
			out = append(out, r)
		}
	}
	return out
}

// isHeader reports nccl-tests' column header, with its "#" or without
// (as pasted).
func isHeader(t string) bool {
	f := strings.Fields(strings.TrimPrefix(t, "#"))
	return len(f) > 4 && f[0] == "size" && f[1] == "count" && (strings.Contains(t, "#wrong") || strings.Contains(t, "error"))
}

// headerMiddle returns the columns between count and time (type, redop,
// root in some combination) and the correctness column's name.
func headerMiddle(t string) ([]string, string) {
	f := strings.Fields(strings.TrimPrefix(t, "#"))
	var mid []string
	for _, c := range f[2:] {
		if c == "time" {
			break
		}
		mid = append(mid, c)
	}
	check := "error"
	if strings.Contains(t, "#wrong") {
		check = "#wrong"
	}
	return mid, check
}

// parseRow reads a data row from both ends: size and count first, the
// eight time/algbw/busbw/check fields last, and type/redop/root between,
// where nccl-tests leaves redop blank for alltoall.
func parseRow(t string, mid []string) (Row, bool) {
	f := strings.Fields(t)
	if len(f) < 11 || len(f) > 10+len(mid) {
		return Row{}, false
	}
	var r Row
	var err error
	if r.SizeBytes, err = strconv.ParseInt(f[0], 10, 64); err != nil || r.SizeBytes < 0 {
		return Row{}, false
	}
	if r.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil || r.Count < 0 {
		return Row{}, false
	}
	middle := f[2 : len(f)-8]
	r.Type = middle[0]
	if _, err := strconv.ParseFloat(r.Type, 64); err == nil {
		return Row{}, false // a number where the type goes: not a row
	}
	for _, m := range middle[1:] {
		if n, err := strconv.Atoi(m); err == nil {
			r.Root = &n
		} else {
			r.Redop = m
		}
	}
	var ok1, ok2 bool
	r.OutOfPlace, ok1 = parsePerf(f[len(f)-8 : len(f)-4])
	r.InPlace, ok2 = parsePerf(f[len(f)-4:])
	return r, ok1 && ok2
}

func parsePerf(f []string) (Perf, bool) {
	var p Perf
	var err [3]error
	p.TimeUS, err[0] = strconv.ParseFloat(f[0], 64)
	p.AlgbwGBps, err[1] = strconv.ParseFloat(f[1], 64)
	p.BusbwGBps, err[2] = strconv.ParseFloat(f[2], 64)
	for _, e := range err {
		if e != nil {
			return Perf{}, false
		}
	}
	if p.TimeUS < 0 || p.AlgbwGBps < 0 || p.BusbwGBps < 0 {
		return Perf{}, false
	}
	if f[3] != "N/A" {
		w, e := strconv.ParseFloat(f[3], 64)
		if e != nil || w < 0 {
			return Perf{}, false
		}
		p.Wrong, p.Checked = w, true
	}
	return p, true
}

// parseJSON reads nccl-tests' structured output. A document cut short
// keeps the sizes that were complete and is marked Truncated.
func parseJSON(b []byte, before string) *TestRun {
	r := &TestRun{Format: "json", CheckColumn: "#wrong"}
	if m := perfNameRE().FindStringSubmatch(before); m != nil {
		r.Collective = m[1]
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	// walk tokens so that a cut document still yields its complete sizes
	var depth int
	var key string
	inBench := false
	for {
		tok, err := dec.Token()
		if err != nil {
			r.Truncated = depth > 0
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			if depth == 0 {
				return r
			}
		case string:
			if depth == 1 {
				key = v
				if key == "benchmark" {
					inBench = true
				} else if key == "version" {
					if t, err := dec.Token(); err == nil {
						r.NCCLVersion = fmt.Sprint(t)
					}
				}
				continue
			}
			if inBench && depth == 3 { // "33554432": {...}
				size, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					continue
				}
				var obj map[string]any
				if err := dec.Decode(&obj); err != nil {
					r.Truncated = true
					return r
				}
				if row, ok := jsonRow(size, obj); ok {
					r.Rows = append(r.Rows, row)
				}
			}
		}
	}
	return r
}

func jsonRow(size int64, o map[string]any) (Row, bool) {
	num := func(k string) (float64, bool) {
		switch v := o[k].(type) {
		case json.Number:
			f, err := v.Float64()
			return f, err == nil
		case string:
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
		return 0, false
	}
	perf := func(p string) (Perf, bool) {
		var q Perf
		var ok [3]bool
		q.TimeUS, ok[0] = num(p + "_time")
		q.AlgbwGBps, ok[1] = num(p + "_algbw")
		q.BusbwGBps, ok[2] = num(p + "_busbw")
		if w, isNum := num(p + "_error"); isNum {
			q.Wrong, q.Checked = w, true
		}
		return q, ok[0] && ok[1] && ok[2]
	}
	r := Row{SizeBytes: size}
	if c, ok := num("count"); ok {
		r.Count = int64(c)
	}
	r.Type, _ = o["type"].(string)
	r.Redop, _ = o["redop"].(string)
	if root, ok := num("root"); ok {
		n := int(root)
		r.Root = &n
	}
	var ok1, ok2 bool
	r.OutOfPlace, ok1 = perf("oop")
	r.InPlace, ok2 = perf("ip")
	return r, ok1 && ok2
}

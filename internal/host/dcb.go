package host

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

var (
	dcbCmdRE     = lazyre.New(`\bdcb\s+(?:-\S+\s+)*(\w+)\s+(\w+)\s+dev\s+(\S+)`)
	lldptoolRE   = lazyre.New(`\blldptool\b.*\s-i\s+(\S+)`)
	dcbMapLineRE = lazyre.New(`^(prio-pfc|pg-pfc|prio-tc|dscp-prio|default-prio|requests|indications)\s+(.*)$`)
	counterRE    = lazyre.New(`^([a-z][a-z0-9_]*):\s+(\d+)$`)
	stepNumberRE = lazyre.New(`^\(\d+\)\s*`)
)

// SniffDCB reports whether b looks like iproute2 `dcb` output (text or
// -j) or lldptool's PFC TLV.
func SniffDCB(b []byte) bool {
	if bytes.Contains(b, []byte(`"prio_pfc"`)) || bytes.Contains(b, []byte(`"dscp_prio"`)) || bytes.Contains(b, []byte(`"prio_tc"`)) {
		return true
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(linePrefixRE().ReplaceAllString(sc.Text(), ""))
		if dcbMapLineRE().MatchString(line) && !dcbCmdRE().MatchString(line) || strings.HasPrefix(line, "PFC enabled:") {
			return true
		}
	}
	return false
}

// ParseDCB reads `dcb pfc|ets|app show dev IF` output as text or JSON
// (`dcb -j`), and lldptool's "PFC enabled:" line. The interface comes from
// the command shown ("" when none is). A DSCP APP table makes the trust
// dscp: mlx5 lists DSCP entries only while it trusts DSCP (the source says
// so). PFC request/indication counts become tx/rx_prioN_pause counters.
// Set commands (`dcb app replace …`) are not readings and are skipped.
func ParseDCB(b []byte, src string) ([]RoCEQoS, error) {
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return parseDCBJSON(t, src)
	}
	var l qosList
	get, q := l.get, l.current
	found := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(linePrefixRE().ReplaceAllString(sc.Text(), ""))
		line = strings.TrimSpace(stepNumberRE().ReplaceAllString(line, ""))
		at := fmt.Sprintf("%s line %d", src, n)
		if m := dcbCmdRE().FindStringSubmatch(line); m != nil {
			get(m[3]) // a set command (replace, add) names the device too; its arguments are not a reading
			continue
		}
		if m := lldptoolRE().FindStringSubmatch(line); m != nil {
			get(m[1])
			continue
		}
		if strings.HasPrefix(line, "PFC enabled:") {
			var on []int
			for _, f := range strings.Fields(strings.TrimPrefix(line, "PFC enabled:")) {
				if f == "none" {
					continue
				}
				p, err := strconv.Atoi(f)
				if err != nil || p > 7 || p < 0 {
					return nil, fmt.Errorf("line %d: priority %q: want 0-7", n, f)
				}
				on = append(on, p)
			}
			q().PFC = Got(orEmpty(on), at)
			found = true
			continue
		}
		if m := counterRE().FindStringSubmatch(line); m != nil && strings.Contains(m[1], "pause") {
			v, _ := strconv.ParseUint(m[2], 10, 64)
			addCounter(q(), m[1], v, at)
			continue
		}
		m := dcbMapLineRE().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		found = true
		// An author's note after the values ("<-- RoCE", "# lossless")
		// is not the format: cut, and named as skipped.
		values, note := cutNote(m[2])
		if note != "" {
			q().Skipped = append(q().Skipped, fmt.Sprintf("line %d: note %q", n, note))
		}
		var pairs []string
		for _, kv := range strings.Fields(values) {
			if !strings.Contains(kv, ":") {
				// A stray word between the pairs: not a reading.
				q().Skipped = append(q().Skipped, fmt.Sprintf("line %d: %q (not N:VALUE)", n, kv))
				continue
			}
			pairs = append(pairs, kv)
		}
		switch m[1] {
		case "prio-pfc", "pg-pfc":
			on := []int{}
			for _, kv := range pairs {
				p, v, err := dcbPair(kv, 7)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				switch v {
				case "on":
					on = append(on, p)
				case "off":
				default:
					return nil, fmt.Errorf("line %d: %q: want on or off", n, kv)
				}
			}
			q().PFC = Got(on, at)
		case "prio-tc":
			tcs := []int{-1, -1, -1, -1, -1, -1, -1, -1}
			for _, kv := range pairs {
				p, v, err := dcbPair(kv, 7)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				tc, err := strconv.Atoi(v)
				if err != nil || tc < 0 || tc > 7 {
					return nil, fmt.Errorf("line %d: tc %q: want 0-7", n, v)
				}
				tcs[p] = tc
			}
			q().PrioTC = Got(tcs, at)
		case "dscp-prio":
			mp := map[int]int{}
			for _, kv := range pairs {
				k, v, ok := strings.Cut(kv, ":")
				d, err := ParseDSCP(k)
				if !ok || err != nil {
					return nil, fmt.Errorf("line %d: %q: want DSCP:PRIO", n, kv)
				}
				p, err := strconv.Atoi(v)
				if err != nil || p < 0 || p > 7 {
					return nil, fmt.Errorf("line %d: priority %q: want 0-7", n, v)
				}
				mp[d] = p
			}
			e := q()
			if e.DSCPPrio == nil {
				e.DSCPPrio = Got(mp, at)
			} else {
				for d, p := range mp {
					e.DSCPPrio.Value[d] = p
				}
			}
			if len(mp) > 0 {
				e.Trust = Got("dscp", at+" (DSCP APP entries: mlx5 lists them only under trust dscp)")
			}
		case "requests", "indications":
			dir := "tx"
			if m[1] == "indications" {
				dir = "rx"
			}
			for _, kv := range pairs {
				p, v, err := dcbPair(kv, 7)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				c, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: count %q", n, v)
				}
				addCounter(q(), fmt.Sprintf("%s_prio%d_pause", dir, p), c, at+" (PFC "+m[1]+")")
			}
		}
	}
	if !found {
		return nil, ErrNoQoS
	}
	return l.readings(), nil
}

// notes are how authors annotate a pasted line; a dcb map line's values
// hold none of them.
var notes = []string{"<--", "<-", "←", "#", "//", ";"}

// cutNote splits a dcb map line's values from an annotation after them.
func cutNote(v string) (values, note string) { return cutNoteAt(v, notes) }

// cutNoteAt splits a line at the first of marks.
func cutNoteAt(v string, marks []string) (values, note string) {
	cut := len(v)
	for _, mark := range marks {
		if i := strings.Index(v, mark); i >= 0 && i < cut {
			cut = i
		}
	}
	return strings.TrimSpace(v[:cut]), strings.TrimSpace(v[cut:])
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func addCounter(q *RoCEQoS, name string, v uint64, src string) {
	if q.Counters == nil {
		q.Counters = Got(map[string]uint64{}, src)
	}
	q.Counters.Value[name] = v
}

// dcbPair reads "3:on" with a key 0..max.
func dcbPair(kv string, max int) (int, string, error) {
	k, v, ok := strings.Cut(kv, ":")
	p, err := strconv.Atoi(k)
	if !ok || err != nil || p < 0 || p > max {
		return 0, "", fmt.Errorf("%q: want N:VALUE with N 0-%d", kv, max)
	}
	return p, v, nil
}

// parseDCBJSON reads `dcb -j … show` objects: prio_pfc (an array of
// booleans by priority, or an object keyed by priority), prio_tc
// (priority → tc), dscp_prio ([[dscp, prio], …]) as iproute2 prints them;
// one object, several, or a list of them.
func parseDCBJSON(b []byte, src string) ([]RoCEQoS, error) {
	var objs []map[string]json.RawMessage
	if b[0] == '[' {
		if err := json.Unmarshal(b, &objs); err != nil {
			return nil, fmt.Errorf("dcb JSON: %w", err)
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(b))
		for dec.More() {
			var o map[string]json.RawMessage
			if err := dec.Decode(&o); err != nil {
				return nil, fmt.Errorf("dcb JSON: %w", err)
			}
			objs = append(objs, o)
		}
	}
	q := RoCEQoS{}
	found := false
	for _, o := range objs {
		if raw, ok := o["prio_pfc"]; ok {
			m, err := prioMap[bool](raw)
			if err != nil {
				return nil, fmt.Errorf("dcb JSON prio_pfc: %w", err)
			}
			on := []int{}
			for p := 0; p < 8; p++ {
				if m[p] {
					on = append(on, p)
				}
			}
			q.PFC, found = Got(on, src+" (prio_pfc)"), true
		}
		if raw, ok := o["prio_tc"]; ok {
			m, err := prioMap[int](raw)
			if err != nil {
				return nil, fmt.Errorf("dcb JSON prio_tc: %w", err)
			}
			tcs := []int{-1, -1, -1, -1, -1, -1, -1, -1}
			for p, tc := range m {
				if tc < 0 || tc > 7 {
					return nil, fmt.Errorf("dcb JSON prio_tc: tc %d: want 0-7", tc)
				}
				tcs[p] = tc
			}
			q.PrioTC, found = Got(tcs, src+" (prio_tc)"), true
		}
		if raw, ok := o["dscp_prio"]; ok {
			// iproute2 prints each entry as [dscp, prio] (some versions
			// add a trailing " " element); the DSCP may be a name.
			var rows [][]json.RawMessage
			if err := json.Unmarshal(raw, &rows); err != nil {
				return nil, fmt.Errorf("dcb JSON dscp_prio: %w", err)
			}
			var pairs [][2]int
			for _, r := range rows {
				if len(r) < 2 {
					return nil, fmt.Errorf("dcb JSON dscp_prio: entry %s: want [dscp, prio]", r)
				}
				var d, p int
				if err := json.Unmarshal(r[0], &d); err != nil {
					var name string
					if json.Unmarshal(r[0], &name) != nil {
						return nil, fmt.Errorf("dcb JSON dscp_prio: DSCP %s", r[0])
					}
					if d, err = ParseDSCP(name); err != nil {
						return nil, fmt.Errorf("dcb JSON dscp_prio: %w", err)
					}
				}
				if err := json.Unmarshal(r[1], &p); err != nil {
					return nil, fmt.Errorf("dcb JSON dscp_prio: priority %s", r[1])
				}
				pairs = append(pairs, [2]int{d, p})
			}
			mp := map[int]int{}
			for _, pr := range pairs {
				if pr[0] < 0 || pr[0] > 63 || pr[1] < 0 || pr[1] > 7 {
					return nil, fmt.Errorf("dcb JSON dscp_prio: %d:%d: want DSCP 0-63, priority 0-7", pr[0], pr[1])
				}
				mp[pr[0]] = pr[1]
			}
			q.DSCPPrio, found = Got(mp, src+" (dscp_prio)"), true
			if len(mp) > 0 {
				q.Trust = Got("dscp", src+" (DSCP APP entries: mlx5 lists them only under trust dscp)")
			}
		}
	}
	if !found {
		return nil, ErrNoQoS
	}
	return []RoCEQoS{q}, nil
}

// prioMap reads {"0": v, …} or [v0, v1, …] indexed by priority 0-7.
func prioMap[T any](raw json.RawMessage) (map[int]T, error) {
	out := map[int]T{}
	var obj map[string]T
	if err := json.Unmarshal(raw, &obj); err == nil {
		for k, v := range obj {
			p, err := strconv.Atoi(k)
			if err != nil || p < 0 || p > 7 {
				return nil, fmt.Errorf("priority %q: want 0-7", k)
			}
			out[p] = v
		}
		return out, nil
	}
	var arr []T
	if err := json.Unmarshal(raw, &arr); err != nil {
		return nil, err
	}
	if len(arr) > 8 {
		return nil, fmt.Errorf("%d priorities: want at most 8", len(arr))
	}
	for p, v := range arr {
		out[p] = v
	}
	return out, nil
}

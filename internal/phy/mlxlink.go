package phy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// mlxlink and mstlink (mstflint's build of it) print sections: a title,
// a line of dashes, then "Name : value" rows (text), or one JSON envelope
// {"result": {"output": {<section>: {...}}}, "status": {...}} (--json).
// Both become the same sections of named values, then one Port.

var (
	mlxlinkCmdRE  = lazyre.New(`\b(?:mlxlink|mstlink)\b.*?\s-d\s+(\S+)`)
	mlxlinkPortRE = lazyre.New(`\s-p\s+(\d+)`)
	promptHostRE  = lazyre.New(`^\s*(?:\[?[\w.-]+@([\w.-]+)[^\]#$]*\]?\s*[#$]|[#$])\s*`)
	dashesRE      = lazyre.New(`^-{4,}$`)
	textRowRE     = lazyre.New(`^([A-Za-z][^:]*?)\s*:\s?(.*)$`)
	rangeRE       = lazyre.New(`^(.*?)\s*\[\s*(-?[\d.]+|-?inf)\s*\.\.\s*(-?[\d.]+|-?inf)\s*\]\s*$`)
	binRangeRE    = lazyre.New(`^\[\s*(\d+)\s*(?::\s*(\d+)\s*)?\]$`)
	speedListRE   = lazyre.New(`\(([^)]*)\)\s*$`)
	// The sections every mlxlink run prints one of, as JSON keys and as
	// text titles over dashes.
	mlxlinkJSONKeyRE = lazyre.New(`"(?:Operational Info|Physical Counters and BER Info|Module Info|Histogram of FEC Errors)"\s*:`)
	mlxlinkTitleRE   = lazyre.New(`(?m)^[ \t]*(?:Operational Info|Physical Counters and BER Info|Module Info)[ \t]*\r?\n(?:[ \t]*\r?\n)?[ \t]*-{4,}[ \t]*$`)
)

// SniffMlxlink reports whether b looks like mlxlink/mstlink output: the
// JSON envelope with one of its sections as a key, or a section title on
// its own line over a line of dashes (blank lines between, as forums
// render it).
func SniffMlxlink(b []byte) bool {
	if jsonStart(b) >= 0 && mlxlinkJSONKeyRE().Match(b) && bytes.Contains(b, []byte(`"result"`)) {
		return true
	}
	return mlxlinkTitleRE().Match(b)
}

// value is one mlxlink value: a string, or a list (per-lane values, bin
// pairs, speed names) with an optional mask.
type value struct {
	s    string
	list []string
	isL  bool
}

// sections are mlxlink's sections of named values.
type sections map[string]map[string]value

// ParseMlxlink reads mlxlink/mstlink output (text or --json; a JSON cut
// mid-object is read as far as it is whole, and the cut named) into one
// Port per device shown. name is the file, for sources.
func ParseMlxlink(b []byte, name string) ([]Port, error) {
	if i := jsonStart(b); i >= 0 {
		return parseMlxlinkJSON(b, i, name)
	}
	return parseMlxlinkText(b, name)
}

// jsonStart is where a JSON envelope starts: the first line that is "{".
func jsonStart(b []byte) int {
	off := 0
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] == '{' {
			return off + bytes.IndexByte(l, '{')
		}
		off += len(l)
	}
	return -1
}

// run is one invocation's output: its device and sections.
type run struct {
	host, device string
	port         int
	line         int
	secs         sections
}

func parseMlxlinkText(b []byte, name string) ([]Port, error) {
	var runs []*run
	var skipped []string
	cur := &run{secs: sections{}}
	prev, prevN, section := "", 0, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		raw := strings.TrimRight(sc.Text(), " \t\r")
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if m := mlxlinkCmdRE().FindStringSubmatch(line); m != nil {
			if prev != "" {
				skipped = append(skipped, fmt.Sprintf("line %d: %s", prevN, prev))
			}
			cur = &run{secs: sections{}, device: devName(m[1]), line: n}
			if p := mlxlinkPortRE().FindStringSubmatch(line); p != nil {
				cur.port, _ = strconv.Atoi(p[1])
			}
			if h := promptHostRE().FindStringSubmatch(line); h != nil {
				cur.host = h[1]
			}
			runs = append(runs, cur)
			prev, section = "", ""
			continue
		}
		if dashesRE().MatchString(line) {
			if prev != "" {
				section = prev
				if cur.secs[section] == nil {
					cur.secs[section] = map[string]value{}
				}
				if len(runs) == 0 {
					cur.line = n
					runs = append(runs, cur)
				}
			}
			prev = ""
			continue
		}
		if strings.HasPrefix(line, "-E-") || strings.HasPrefix(line, "-W-") || strings.HasPrefix(line, "-I-") {
			skipped = append(skipped, fmt.Sprintf("line %d: %s", n, line))
			continue
		}
		if m := textRowRE().FindStringSubmatch(line); m != nil && section != "" && !promptHostRE().MatchString(line) {
			cur.secs[section][strings.TrimSpace(m[1])] = textValue(strings.TrimSpace(m[2]))
			prev = ""
			continue
		}
		if prev != "" {
			// The line before was neither a row nor a title: a label.
			skipped = append(skipped, fmt.Sprintf("line %d: %s", prevN, prev))
		}
		prev, prevN = line, n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if prev != "" {
		skipped = append(skipped, fmt.Sprintf("line %d: %s", prevN, prev))
	}
	// Runs of the same device (-c then -e) are one port.
	var out []Port
	byDev := map[string]int{}
	for _, r := range runs {
		if len(r.secs) == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%d", r.device, r.port)
		p := fromSections(r.secs, "mlxlink", fmt.Sprintf("%s line %d", name, r.line))
		p.Host, p.Device, p.Port = r.host, r.device, r.port
		if i, ok := byDev[key]; ok {
			out[i] = merge(out[i], p)
			continue
		}
		byDev[key] = len(out)
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mlxlink section (a title over a line of dashes, then Name : value rows)")
	}
	out[0].Skipped = append(out[0].Skipped, skipped...)
	return out, nil
}

// textValue reads a text row's value: comma lists are per-lane values;
// "0x… (a,b)" speed masks become their names.
func textValue(s string) value {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "0x") {
		if m := speedListRE().FindStringSubmatch(s); m != nil {
			return value{list: splitList(m[1]), isL: true, s: s}
		}
	}
	if rangeRE().MatchString(s) {
		return value{s: s}
	}
	if strings.Contains(s, ",") && !strings.Contains(s, " ") || strings.Contains(s, ", ") && !strings.ContainsAny(s, "()") {
		return value{list: splitList(s), isL: true, s: s}
	}
	return value{s: s}
}

// devName is the device of -d: an mst path's last element, an IB device
// name, or a PCI address.
func devName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// merge keeps a's facts and adds b's where a has none.
func merge(a, b Port) Port {
	if a.FEC == nil {
		a.FEC = b.FEC
	}
	if a.Counters == nil {
		a.Counters = b.Counters
	}
	if a.Histogram == nil {
		a.Histogram = b.Histogram
	}
	if a.Module == nil {
		a.Module = b.Module
	}
	if a.State == "" {
		a.State, a.PhysState, a.Speed, a.Width = b.State, b.PhysState, b.Speed, b.Width
	}
	if a.Enabled == nil {
		a.Enabled, a.Cable = b.Enabled, b.Cable
	}
	return a
}

func parseMlxlinkJSON(b []byte, start int, name string) ([]Port, error) {
	pre := string(b[:start])
	dec := json.NewDecoder(bytes.NewReader(b[start:]))
	dec.UseNumber()
	root, cut := readJSON(dec, nil)
	obj, _ := root.(map[string]any)
	if obj == nil {
		return nil, fmt.Errorf("mlxlink --json: no JSON object read (%s)", cutWhere(cut))
	}
	res, _ := obj["result"].(map[string]any)
	out, _ := res["output"].(map[string]any)
	if out == nil {
		return nil, fmt.Errorf("mlxlink --json: no result.output object (%s)", cutWhere(cut))
	}
	secs := sections{}
	for sec, v := range out {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		secs[sec] = map[string]value{}
		for k, fv := range m {
			secs[sec][k] = jsonValue(fv)
		}
	}
	p := fromSections(secs, "mlxlink --json", name)
	if m := mlxlinkCmdRE().FindStringSubmatch(pre); m != nil {
		p.Device = devName(m[1])
		if pm := mlxlinkPortRE().FindStringSubmatch(pre); pm != nil {
			p.Port, _ = strconv.Atoi(pm[1])
		}
	}
	if cut != "" {
		p.Cut = cut
	}
	if st, ok := obj["status"].(map[string]any); ok {
		code := fmt.Sprint(st["code"])
		if code != "0" && code != "<nil>" {
			msg := fmt.Sprintf("mlxlink status code %s (%v): the sections may be partial", code, st["message"])
			if p.Cut == "" {
				p.Cut = msg
			} else {
				p.Cut += "; " + msg
			}
		}
	}
	return []Port{p}, nil
}

func cutWhere(cut string) string {
	if cut == "" {
		return "the document is whole"
	}
	return "cut in " + cut
}

// readJSON reads one JSON value token by token. Where the input ends or
// breaks it returns what was whole so far and the path it stopped in.
func readJSON(dec *json.Decoder, path []string) (any, string) {
	where := func() string {
		if len(path) == 0 {
			return "the top-level object"
		}
		return strings.Join(path, " → ")
	}
	if len(path) > 64 {
		return nil, where() + " (nested too deep)"
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, where()
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for {
				kt, err := dec.Token()
				if err != nil {
					return m, where()
				}
				if d, ok := kt.(json.Delim); ok && d == '}' {
					return m, ""
				}
				k, ok := kt.(string)
				if !ok {
					return m, where()
				}
				v, cut := readJSON(dec, append(path, k))
				if v != nil {
					m[k] = v
				}
				if cut != "" {
					return m, cut
				}
			}
		case '[':
			var l []any
			for {
				if !dec.More() {
					if _, err := dec.Token(); err != nil {
						return l, where()
					}
					return l, ""
				}
				v, cut := readJSON(dec, append(path, strconv.Itoa(len(l))))
				if cut != "" {
					return l, cut
				}
				l = append(l, v)
			}
		}
		return nil, where()
	case json.Number:
		return t.String(), ""
	case string:
		return t, ""
	case bool:
		return strconv.FormatBool(t), ""
	}
	return nil, ""
}

// jsonValue turns a decoded field into a value: a string, or
// {"values": [...]} (with or without a mask) into a list.
func jsonValue(v any) value {
	switch t := v.(type) {
	case string:
		return textValue(t)
	case map[string]any:
		if l, ok := t["values"].([]any); ok {
			var out []string
			for _, e := range l {
				out = append(out, fmt.Sprint(e))
			}
			mask, _ := t["mask"].(string)
			return value{list: out, isL: true, s: mask}
		}
	}
	return value{}
}

// get finds a value by any of its spellings (MFT releases drift: "(Ext.)"
// suffixes, "Physical state" vs "Physical State").
func (s sections) get(section string, keys ...string) (value, bool) {
	for sec, m := range s {
		if !strings.EqualFold(sec, section) {
			continue
		}
		for _, k := range keys {
			for mk, v := range m {
				if strings.EqualFold(mk, k) || strings.EqualFold(strings.TrimSpace(strings.TrimSuffix(mk, "(Ext.)")), k) {
					return v, true
				}
			}
		}
	}
	return value{}, false
}

// has reports whether the output printed the section (titles compared
// without case: MFT releases spell them differently).
func (s sections) has(section string) bool {
	for k := range s {
		if strings.EqualFold(k, section) {
			return true
		}
	}
	return false
}

func (s sections) str(section string, keys ...string) string {
	v, ok := s.get(section, keys...)
	if !ok {
		return ""
	}
	// A list keeps its text, but a mask's text is the mask: give the names.
	if v.isL && (v.s == "" || strings.HasPrefix(v.s, "0x")) {
		return strings.Join(v.list, ",")
	}
	return v.s
}

func (v value) items() []string {
	if v.isL {
		return v.list
	}
	if v.s == "" {
		return nil
	}
	return splitList(v.s)
}

// fromSections builds a Port from mlxlink's sections.
func fromSections(s sections, tool, source string) Port {
	p := Port{Tool: tool, Source: source}
	const op = "Operational Info"
	p.State = s.str(op, "State")
	p.PhysState = s.str(op, "Physical state")
	p.Speed = s.str(op, "Speed")
	if w, ok := s.get(op, "Width"); ok {
		p.Width, _ = strconv.Atoi(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(w.s)), "x"))
	}
	if f := s.str(op, "FEC"); f != "" && !strings.EqualFold(f, "N/A") {
		p.FEC = &FEC{Active: f, Kind: ClassifyFEC(f)}
	}
	if v, ok := s.get("Supported Info", "Enabled Link Speed"); ok {
		p.Enabled = v.items()
	}
	if v, ok := s.get("Supported Info", "Supported Cable Speed"); ok {
		p.Cable = v.items()
	}
	p.StatusOpcode = s.str("Troubleshooting Info", "Status Opcode")
	p.Recommendation = s.str("Troubleshooting Info", "Recommendation")
	p.Counters = mlxCounters(s)
	p.Histogram = mlxHistogram(s)
	p.Module = mlxModule(s)
	return p
}

func mlxCounters(s sections) *Counters {
	const sec = "Physical Counters and BER Info"
	if !s.has(sec) {
		return nil
	}
	c := &Counters{Window: "window not in the output"}
	if w := s.str(sec, "Time Since Last Clear [Min]", "Time Since Last Clear"); w != "" {
		if v, err := strconv.ParseFloat(w, 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
			c.WindowMin = f64(v)
			c.Window = fmt.Sprintf("%s min since the counters were last cleared", w)
		}
	} else if w := s.str(sec, "Time Since Last Clear [ms]"); w != "" {
		// Some MFT releases print the window in milliseconds.
		if v, err := strconv.ParseFloat(w, 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
			c.WindowMin = f64(v / 60000)
			c.Window = fmt.Sprintf("%.1f min (%s ms) since the counters were last cleared", v/60000, w)
		}
	}
	cnt := func(keys ...string) *uint64 {
		if v, ok := parseCount(s.str(sec, keys...)); ok {
			return u64(v)
		}
		return nil
	}
	ber := func(keys ...string) *BER {
		if b, ok := ParseBER(s.str(sec, keys...)); ok {
			return &b
		}
		return nil
	}
	c.Effective = cnt("Effective Physical Errors")
	c.EffectiveBER = ber("Effective Physical BER")
	c.RawBER = ber("Raw Physical BER")
	c.Symbol = cnt("Symbol Errors")
	if c.Symbol != nil {
		c.SymbolName = "Symbol Errors"
	}
	c.SymbolBER = ber("Symbol BER")
	c.ReceivedBits = cnt("PHY Received Bits")
	c.CorrectedBits = cnt("PHY Corrected Bits")
	c.LinkDown = cnt("Link Down Counter")
	c.Recovery = cnt("Link Error Recovery Counter")
	if v, ok := s.get(sec, "Raw Physical Errors Per Lane"); ok {
		for _, it := range v.items() {
			n, ok := parseCount(it)
			if !ok {
				c.RawLane = nil
				break
			}
			c.RawLane = append(c.RawLane, n)
		}
		if c.RawLane != nil {
			c.RawLaneName = "Raw Physical Errors Per Lane"
		}
	}
	if v, ok := s.get(sec, "Raw Physical BER Per Lane"); ok {
		for _, it := range v.items() {
			if b, ok := ParseBER(it); ok {
				c.RawBERLane = append(c.RawBERLane, b)
			}
		}
	}
	return c
}

func mlxHistogram(s sections) *Histogram {
	var h Histogram
	for sec, m := range s {
		if !strings.EqualFold(sec, "Histogram of FEC Errors") {
			continue
		}
		for k, v := range m {
			if strings.EqualFold(k, "Header") {
				continue
			}
			it := v.items()
			if len(it) != 2 {
				// Text histograms print "[N]  count" rows keyed by the bin.
				it = []string{k, v.s}
			}
			r := binRangeRE().FindStringSubmatch(strings.TrimSpace(it[0]))
			n, ok := parseCount(it[1])
			if r == nil || !ok {
				continue
			}
			lo, _ := strconv.Atoi(r[1])
			hi := lo
			if r[2] != "" {
				hi, _ = strconv.Atoi(r[2])
			}
			h.Bins = append(h.Bins, Bin{Lo: lo, Hi: hi, Count: n})
		}
	}
	if len(h.Bins) == 0 {
		return nil
	}
	// JSON keys sort lexically (Bin 10 before Bin 2): order by the range.
	sort.Slice(h.Bins, func(i, j int) bool { return h.Bins[i].Lo < h.Bins[j].Lo })
	return &h
}

// mlxModule reads Module Info: DDM values carry the module's range in
// brackets ("3.583,3.253 [-9.914..6.999]"); mlxlink does not say whether
// that range is the alarm or the warning level.
func mlxModule(s sections) *Module {
	const sec = "Module Info"
	if !s.has(sec) {
		return nil
	}
	m := &Module{
		Identifier: s.str(sec, "Identifier"),
		CableType:  s.str(sec, "Cable Type"),
		Vendor:     s.str(sec, "Vendor Name"),
		PartNumber: s.str(sec, "Vendor Part Number"),
		Serial:     s.str(sec, "Vendor Serial Number"),
		Thresholds: map[Quantity]Thresholds{},
	}
	tech := strings.ToLower(s.str(sec, "Cable Technology") + " " + m.CableType)
	m.Passive = strings.Contains(tech, "passive copper") || strings.Contains(tech, "copper cable, passive")
	for _, q := range []struct {
		key  string
		q    Quantity
		unit string
	}{
		{"Temperature [C]", Temperature, "C"},
		{"Voltage [mV]", Voltage, "mV"},
		{"Bias Current [mA]", Bias, "mA"},
		{"Tx Power Current [dBm]", TxPower, "dBm"},
		{"Rx Power Current [dBm]", RxPower, "dBm"},
	} {
		v := s.str(sec, q.key)
		if v == "" || strings.EqualFold(v, "N/A") {
			continue
		}
		vals := v
		if r := rangeRE().FindStringSubmatch(v); r != nil {
			vals = r[1]
			lo, e1 := strconv.ParseFloat(r[2], 64)
			hi, e2 := strconv.ParseFloat(r[3], 64)
			if e1 == nil && e2 == nil {
				t := Thresholds{Level: "range", Text: "[" + r[2] + ".." + r[3] + "]"}
				// An infinite bound is no bound (JSON could not carry it either).
				if !math.IsInf(lo, 0) {
					t.AlarmLo = f64(lo)
				}
				if !math.IsInf(hi, 0) {
					t.AlarmHi = f64(hi)
				}
				m.Thresholds[q.q] = t
			}
		}
		items := splitList(vals)
		for i, it := range items {
			f, err := strconv.ParseFloat(it, 64)
			if err != nil {
				continue
			}
			lane := 0
			if len(items) > 1 {
				lane = i + 1
			}
			m.Readings = append(m.Readings, Reading{Quantity: q.q, Lane: lane, Value: f, Unit: q.unit, Text: it})
		}
	}
	for _, k := range []string{"Rx LOS [per lane]", "Tx LOS [per lane]", "Rx CDR LOL [per lane]", "Tx CDR LOL [per lane]", "Tx Fault [per lane]", "Tx Adaptive EQ Fault [per lane]"} {
		v, ok := s.get(sec, k)
		if !ok {
			continue
		}
		f := Flag{Name: strings.TrimSuffix(k, " [per lane]")}
		for _, it := range v.items() {
			f.Lanes = append(f.Lanes, it == "1" || strings.EqualFold(it, "ON") || strings.EqualFold(it, "Yes"))
		}
		f.Text = strings.Join(v.items(), ",")
		m.Flags = append(m.Flags, f)
	}
	return m
}

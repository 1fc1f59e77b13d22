package phy

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// `ethtool -S <if>` prints "NIC statistics:" then "     name: value"
// rows. Real pastes lose the header (`ethtool -S eth0 | grep pause`),
// the indentation (author-trimmed), or carry a comment on every row
// ("rx_discards_phy: 58591428329   # <- drops!"). ReadEthtoolS is the one
// reader of those rows; host's RoCE counters and the PHY facts below are
// both made from it.

var (
	ethtoolSCmdRE  = lazyre.New(`\bethtool\s+(?:-S|--statistics)\s+(\S+)`)
	ethtoolRowRE   = lazyre.New(`^([A-Za-z][A-Za-z0-9_.\-\[\]]*):\s+(\d+)\b\s*(.*)$`)
	ethtoolNoteRE  = lazyre.New(`^(?:#|//|<-|<--|\(|\[|--|;)`)
	ethtoolLaneRE  = lazyre.New(`^rx_err_lane_(\d+)_phy$`)
	ethtoolCLaneRE = lazyre.New(`^rx_corrected_bits_lane_?(\d+)(?:_phy)?$`)
	// An ethtool -S counter name: lower-case words joined by _, the shape
	// every driver uses; the PHY group ends in _phy.
	ethtoolNameRE = lazyre.New(`^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$`)
)

// EthtoolReading is one `ethtool -S` output (or pasted part of one).
type EthtoolReading struct {
	// Netdev is the interface when a command line shows it.
	Netdev string
	// Line is where the reading starts (its header, command or first row).
	Line int
	// Counters are every counter shown; a counter a poster left out is
	// absent, not zero.
	Counters map[string]uint64
	// Rows is the line of each counter.
	Rows map[string]int
	// Headerless is set for a paste without "NIC statistics:" (a grep).
	Headerless bool
	// Annotated lists rows that carried a comment after the value.
	Annotated []int
}

// SniffEthtoolS reports whether b looks like `ethtool -S` output: the
// header, or (a grep or a trimmed paste) at least two rows of counters
// named the way drivers name them with at least one of the mlx5 PHY,
// pause or per-priority counters among them.
func SniffEthtoolS(b []byte) bool {
	if bytes.Contains(b, []byte("NIC statistics:")) {
		return true
	}
	rows, known, other := 0, 0, 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || ethtoolSCmdRE().MatchString(line) || ethtoolNoteRE().MatchString(line) || isPrompt(line) {
			continue
		}
		m := ethtoolRowRE().FindStringSubmatch(line)
		if m == nil || !ethtoolNameRE().MatchString(m[1]) {
			other++
			continue
		}
		rows++
		if strings.HasSuffix(m[1], "_phy") || strings.Contains(m[1], "pause") || strings.Contains(m[1], "_prio") {
			known++
		}
	}
	return rows >= 2 && known >= 1 && other*2 <= rows
}

// isPrompt is a shell prompt line (with or without a command).
func isPrompt(line string) bool {
	return promptHostRE().MatchString(line) && (strings.Contains(line, "@") || strings.HasPrefix(line, "$") || strings.HasPrefix(line, "#"))
}

// ReadEthtoolS reads every `ethtool -S` output in b (a file may hold two,
// before and after). Rows before any header form one headerless reading.
// A counter printed twice in one reading keeps its last value.
func ReadEthtoolS(b []byte) ([]EthtoolReading, error) {
	var out []EthtoolReading
	netdev, cmdLine := "", 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	start := func(headerless bool) {
		out = append(out, EthtoolReading{Netdev: netdev, Line: n, Counters: map[string]uint64{}, Rows: map[string]int{}, Headerless: headerless})
		if cmdLine > 0 {
			out[len(out)-1].Line = cmdLine
		}
	}
	for sc.Scan() {
		n++
		line := strings.TrimSpace(strings.TrimLeft(sc.Text(), " \t*|│>"))
		if m := ethtoolSCmdRE().FindStringSubmatch(line); m != nil {
			netdev, cmdLine = m[1], n
			// A grep after the command: the rows that follow have no header.
			if strings.Contains(line, "|") {
				start(true)
				cmdLine = 0
			}
			continue
		}
		if line == "NIC statistics:" {
			if len(out) > 0 && out[len(out)-1].Headerless && len(out[len(out)-1].Counters) == 0 {
				out = out[:len(out)-1]
			}
			start(false)
			cmdLine = 0
			continue
		}
		m := ethtoolRowRE().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		// Under a header any driver's names count; without one only names
		// shaped like counters, so prose with a colon is not read as one.
		if (len(out) == 0 || out[len(out)-1].Headerless) && !ethtoolNameRE().MatchString(m[1]) {
			continue
		}
		v, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n, m[1], err)
		}
		if len(out) == 0 {
			start(true)
		}
		r := &out[len(out)-1]
		r.Counters[m[1]] = v
		r.Rows[m[1]] = n
		if strings.TrimSpace(m[3]) != "" {
			r.Annotated = append(r.Annotated, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 || len(out) == 1 && len(out[0].Counters) == 0 && out[0].Headerless {
		return nil, fmt.Errorf("no \"NIC statistics:\" section and no counter rows")
	}
	return out, nil
}

// PHYCounter reports whether an ethtool -S counter is one of the mlx5
// PHY error counters these facts are made of.
func PHYCounter(name string) bool {
	switch name {
	case "rx_pcs_symbol_err_phy", "rx_symbol_err_phy", "rx_corrected_bits_phy", "link_down_events_phy", "rx_crc_errors_phy", "rx_bits_phy":
		return true
	}
	return ethtoolLaneRE().MatchString(name) || ethtoolCLaneRE().MatchString(name)
}

// HasPHY reports whether a reading holds any PHY error counter.
func (r EthtoolReading) HasPHY() bool {
	for k := range r.Counters {
		if PHYCounter(k) {
			return true
		}
	}
	return false
}

// ParseEthtoolS reads the PHY facts of every ethtool -S reading in b that
// shows PHY counters (none: an empty list, no error).
func ParseEthtoolS(b []byte, name string) ([]Port, error) {
	rs, err := ReadEthtoolS(b)
	if err != nil {
		return nil, err
	}
	var out []Port
	for _, r := range rs {
		if p, ok := FromEthtoolS(r, name); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// FromEthtoolS makes the PHY facts of one reading; false when it shows
// no PHY counter. The counters run since the driver loaded: the window is
// unknown, and the output never says how long it was.
func FromEthtoolS(r EthtoolReading, name string) (Port, bool) {
	if !r.HasPHY() {
		return Port{}, false
	}
	p := Port{Netdev: r.Netdev, Tool: "ethtool -S", Source: fmt.Sprintf("%s line %d", name, r.Line)}
	c := &Counters{Window: WindowUnknown}
	get := func(k string) *uint64 {
		if v, ok := r.Counters[k]; ok {
			return u64(v)
		}
		return nil
	}
	c.Symbol = get("rx_pcs_symbol_err_phy")
	if c.Symbol != nil {
		c.SymbolName = "rx_pcs_symbol_err_phy"
	}
	c.CorrectedBits = get("rx_corrected_bits_phy")
	c.ReceivedBits = get("rx_bits_phy")
	c.LinkDown = get("link_down_events_phy")
	// Per-lane raw errors: rx_err_lane_<l>_phy, in lane order; a gap (a
	// lane the poster dropped) leaves the list unread rather than shifted.
	c.RawLane = laneCounts(r, ethtoolLaneRE())
	c.RawLaneName = "rx_err_lane_<N>_phy"
	if c.RawLane == nil {
		// Per-lane corrected bits, where the driver prints those instead.
		c.RawLane = laneCounts(r, ethtoolCLaneRE())
		c.RawLaneName = "rx_corrected_bits_lane<N>"
	}
	if c.RawLane == nil {
		c.RawLaneName = ""
	}
	p.Counters = c
	if len(r.Annotated) > 0 {
		p.Skipped = append(p.Skipped, fmt.Sprintf("comments after the value on %d row(s) (from line %d) ignored", len(r.Annotated), r.Annotated[0]))
	}
	if r.Headerless {
		p.Skipped = append(p.Skipped, "no \"NIC statistics:\" header: a partial paste; counters not shown are unknown, not zero")
	}
	return p, true
}

// laneCounts lists the counters named by re (lane number in its first
// group) in lane order; nil when none, or when a lane is missing (a lane
// the poster dropped leaves the list unread rather than shifted).
func laneCounts(r EthtoolReading, re *regexp.Regexp) []uint64 {
	lanes := map[int]uint64{}
	maxLane := -1
	for k, v := range r.Counters {
		if m := re.FindStringSubmatch(k); m != nil {
			l, _ := strconv.Atoi(m[1])
			if l < 64 {
				lanes[l] = v
				maxLane = max(maxLane, l)
			}
		}
	}
	if len(lanes) == 0 || len(lanes) != maxLane+1 {
		return nil
	}
	keys := make([]int, 0, len(lanes))
	for l := range lanes {
		keys = append(keys, l)
	}
	sort.Ints(keys)
	var out []uint64
	for _, l := range keys {
		out = append(out, lanes[l])
	}
	return out
}

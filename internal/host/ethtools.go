package host

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

var (
	ethtoolCmdRE  = lazyre.New(`\bethtool\s+(?:-S|--statistics)\s+(\S+)`)
	ethtoolStatRE = lazyre.New(`^([A-Za-z0-9_.\-\[\]]+):\s+(\d+)$`)
	roceCounterRE = lazyre.New(`^(?:(?:rx|tx)_prio\d_(?:pause|pause_duration|pause_transition|buf_discard|cong_discard|marked|discards|bytes|packets)|(?:rx|tx)_global_pause(?:_duration|_transition)?|(?:rx|tx)_pause(?:_ctrl_phy)?|rx_discards_phy|tx_discards_phy|rx_out_of_buffer|rx_buffer_passed_thres_phy|tx_pause_storm_(?:warning|error)_events|device_stall_(?:minor|critical)_watchdog)$`)
)

// RoCECounter reports whether an ethtool -S counter is one RoCE QoS
// judges: per-priority pause, traffic and drops, global pause, physical
// discards, pause storms.
func RoCECounter(name string) bool { return roceCounterRE().MatchString(name) }

// SniffEthtoolS reports whether b looks like `ethtool -S` output.
func SniffEthtoolS(b []byte) bool { return bytes.Contains(b, []byte("NIC statistics:")) }

// EthtoolReading is one `ethtool -S` output: the interface when the
// command line shows it, and the RoCE counters (RoCECounter).
type EthtoolReading struct {
	Netdev   string
	Line     int // where the reading starts
	Counters map[string]uint64
}

// ParseEthtoolS reads every `ethtool -S` output in b (a file may hold two
// readings, before and after). Counters a poster left out are absent,
// not zero. A counter printed twice in one reading keeps its last value.
func ParseEthtoolS(b []byte) ([]EthtoolReading, error) {
	var out []EthtoolReading
	netdev := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(linePrefixRE().ReplaceAllString(sc.Text(), ""))
		if m := ethtoolCmdRE().FindStringSubmatch(line); m != nil {
			netdev = m[1]
			continue
		}
		if line == "NIC statistics:" {
			out = append(out, EthtoolReading{Netdev: netdev, Line: n, Counters: map[string]uint64{}})
			continue
		}
		m := ethtoolStatRE().FindStringSubmatch(line)
		if m == nil || len(out) == 0 {
			continue
		}
		v, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n, m[1], err)
		}
		if RoCECounter(m[1]) {
			out[len(out)-1].Counters[m[1]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"NIC statistics:\" section")
	}
	return out, nil
}

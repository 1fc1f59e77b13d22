package host

import (
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/phy"
)

var roceCounterRE = lazyre.New(`^(?:(?:rx|tx)_prio\d_(?:pause|pause_duration|pause_transition|buf_discard|cong_discard|marked|discards|bytes|packets)|(?:rx|tx)_global_pause(?:_duration|_transition)?|(?:rx|tx)_pause(?:_ctrl_phy)?|rx_discards_phy|tx_discards_phy|rx_out_of_buffer|rx_buffer_passed_thres_phy|tx_pause_storm_(?:warning|error)_events|device_stall_(?:minor|critical)_watchdog)$`)

// RoCECounter reports whether an ethtool -S counter is one RoCE QoS
// judges: per-priority pause, traffic and drops, global pause, physical
// discards, pause storms.
func RoCECounter(name string) bool { return roceCounterRE().MatchString(name) }

// SniffEthtoolS reports whether b looks like `ethtool -S` output, whole or
// pasted in part (a `| grep` with no header, rows without indentation).
// The rows are read by internal/phy, which also makes the PHY counters'
// facts from them.
func SniffEthtoolS(b []byte) bool { return phy.SniffEthtoolS(b) }

// EthtoolReading is one `ethtool -S` output: the interface when the
// command line shows it, and the RoCE counters (RoCECounter).
type EthtoolReading struct {
	Netdev   string
	Line     int // where the reading starts
	Counters map[string]uint64
}

// ParseEthtoolS reads every `ethtool -S` output in b (a file may hold two
// readings, before and after), keeping the RoCE counters. Counters a
// poster left out are absent, not zero. A counter printed twice in one
// reading keeps its last value. Pastes without the header and with a
// comment after each value are read (phy.ReadEthtoolS).
func ParseEthtoolS(b []byte) ([]EthtoolReading, error) {
	rs, err := phy.ReadEthtoolS(b)
	if err != nil {
		return nil, err
	}
	return RoCEReadings(rs), nil
}

// RoCEReadings keeps the RoCE counters of each reading.
func RoCEReadings(rs []phy.EthtoolReading) []EthtoolReading {
	var out []EthtoolReading
	for _, r := range rs {
		e := EthtoolReading{Netdev: r.Netdev, Line: r.Line, Counters: map[string]uint64{}}
		for k, v := range r.Counters {
			if RoCECounter(k) {
				e.Counters[k] = v
			}
		}
		out = append(out, e)
	}
	return out
}

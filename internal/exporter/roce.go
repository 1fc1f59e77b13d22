package exporter

import (
	"context"
	"os/exec"
	"strconv"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// RoCE metrics: the pause, pause-storm and discard counters of `ethtool -S`
// on each RoCE netdev (CNP and ECN-mark counters are hw_counters, already
// in the port metrics).
var (
	roceLabels        = []string{"device", "port", "netdev"}
	rocePauseDesc     = newDesc(Namespace+"_roce_pause_frames_total", "PFC pause frames per priority (ethtool -S rx/tx_prioN_pause): tx rising means this host's receive side cannot drain, rx that the fabric back-pressures it.", append(roceLabels[:3:3], "priority", "direction"))
	rocePauseDurDesc  = newDesc(Namespace+"_roce_pause_duration_microseconds_total", "Time paused per priority (ethtool -S rx/tx_prioN_pause_duration).", append(roceLabels[:3:3], "priority", "direction"))
	roceGlobalDesc    = newDesc(Namespace+"_roce_global_pause_frames_total", "802.3x global pause frames (ethtool -S rx/tx_global_pause): they stall every priority and exclude PFC.", append(roceLabels[:3:3], "direction"))
	roceDiscardDesc   = newDesc(Namespace+"_roce_discards_total", "Packets dropped at the port (rx_discards_phy) or on a priority (rx_prioN_discards, _buf_discard, _cong_discard): a lossless priority must have none.", append(roceLabels[:3:3], "counter", "priority"))
	roceStormDesc     = newDesc(Namespace+"_roce_pause_storm_events_total", "Pause storm events the NIC detected (tx_pause_storm_warning/error_events); on an error event it stops sending pauses.", append(roceLabels[:3:3], "level"))
	rocePrioCounterRE = lazyre.New(`^(rx|tx)_prio(\d)_(pause|pause_duration|discards|buf_discard|cong_discard)$`)
)

// roceTools lets the per-scrape read run ethtool -S on a live host and
// nothing else: the QoS tools (mlnx_qos, dcb) cost more than a scrape
// should, and their settings change on the topology cadence.
func roceTools(o Options) inventory.Tool {
	if o.Root != "/" {
		return nil
	}
	run := inventory.ExecTool(inventory.ToolTimeout)
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name != "ethtool" {
			return nil, exec.ErrNotFound
		}
		return run(ctx, name, args...)
	}
}

// emitRoCE turns each RoCE netdev's counters and PFC state into metrics.
func emitRoCE(m *emitter, s *host.Snapshot) {
	for _, q := range s.RoCE {
		l := []string{q.Device, strconv.Itoa(q.Port), q.Netdev}
		if q.Counters == nil {
			continue
		}
		for name, v := range q.Counters.Value {
			f := float64(v)
			if mt := rocePrioCounterRE().FindStringSubmatch(name); mt != nil {
				dir, prio, kind := mt[1], mt[2], mt[3]
				switch kind {
				case "pause":
					m.counter(rocePauseDesc, f, append(l[:3:3], prio, dir)...)
				case "pause_duration":
					m.counter(rocePauseDurDesc, f, append(l[:3:3], prio, dir)...)
				default:
					if dir == "rx" {
						m.counter(roceDiscardDesc, f, append(l[:3:3], kind, prio)...)
					}
				}
				continue
			}
			switch name {
			case "rx_global_pause", "tx_global_pause":
				m.counter(roceGlobalDesc, f, append(l[:3:3], name[:2])...)
			case "rx_discards_phy":
				m.counter(roceDiscardDesc, f, append(l[:3:3], "rx_discards_phy", "")...)
			case "tx_pause_storm_warning_events":
				m.counter(roceStormDesc, f, append(l[:3:3], "warning")...)
			case "tx_pause_storm_error_events":
				m.counter(roceStormDesc, f, append(l[:3:3], "error")...)
			}
		}
	}
}

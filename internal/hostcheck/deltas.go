package hostcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/host"
)

// RisingID is the check that compares two snapshots of one host.
const RisingID = "port.errors.rising"

// RisingEntry describes it for the catalog.
var RisingEntry = check.Entry{ID: RisingID, Title: "Error counters do not rise between two snapshots of a host",
	Why:         "Counters since boot may be old history; counters that rise between two snapshots are a live fault.",
	Source:      "ibqueryerrors thresholds 0; RDMA reference §1.6 (small counters saturate)",
	Fixes:       []string{"replace the cable or transceiver of the port", "check the switch side with ibqueryerrors / ethtool -S"},
	Needs:       "two snapshots of one host (same hostname, different collected_at) with the same port's error counters",
	UnknownWhen: "no error counter was readable in both snapshots"}

// RunDeltas compares consecutive snapshots of the same host (same hostname,
// ordered by collection time) and reports error counters that rose, with
// their rate per hour.
func RunDeltas(hosts []*host.Snapshot) []check.Finding {
	byHost := map[string][]*host.Snapshot{}
	for _, s := range hosts {
		byHost[s.Hostname] = append(byHost[s.Hostname], s)
	}
	var out []check.Finding
	for name, snaps := range byHost {
		if len(snaps) < 2 {
			continue
		}
		slices.SortFunc(snaps, func(a, b *host.Snapshot) int { return a.CollectedAt.Compare(b.CollectedAt) })
		for i := 1; i < len(snaps); i++ {
			out = append(out, deltas(name, snaps[i-1], snaps[i])...)
		}
	}
	return out
}

func deltas(name string, a, b *host.Snapshot) []check.Finding {
	hours := b.CollectedAt.Sub(a.CollectedAt).Hours()
	rep := RisingEntry.Reporter(name)
	for _, db := range b.RDMADevices {
		da := a.RDMA(db.Name)
		if da == nil {
			continue
		}
		for _, pb := range db.Ports {
			var pa *host.RDMAPort
			for i := range da.Ports {
				if da.Ports[i].Port == pb.Port {
					pa = &da.Ports[i]
				}
			}
			if pa == nil {
				continue
			}
			sub := portSubject(db.Name, pb.Port)
			var rose []string
			var e []check.Evidence
			compared := 0
			for _, ctr := range errorCounters() {
				before, after, dir := pa.Counters, pb.Counters, "counters"
				if ctr.Family == counters.HWCounters {
					before, after, dir = pa.HWCounters, pb.HWCounters, "hw_counters"
				}
				c := ctr.Sysfs
				x, okA := before[c]
				y, okB := after[c]
				if !okA || !okB {
					continue
				}
				compared++
				if y <= x {
					continue
				}
				d := y - x
				rate := ""
				if hours > 0 {
					rate = fmt.Sprintf(" (%.1f/h)", float64(d)/hours)
				}
				rose = append(rose, fmt.Sprintf("%s +%d%s", c, d, rate))
				e = append(e, ev(c, strconv.FormatUint(x, 10)+" → "+strconv.FormatUint(y, 10), readAt(b, pb.Sources, dir+"/"+c)))
			}
			switch {
			case compared == 0:
				rep.Unknown(sub, "no error counter was readable in both snapshots")
			case len(rose) == 0:
				rep.Pass(sub, "no error counter rose in %s", b.CollectedAt.Sub(a.CollectedAt).Round(1e9))
			default:
				rep.Fail(sub, "error counters rose between snapshots: %s", strings.Join(rose, ", ")).Evidence = e
			}
		}
	}
	return append(pauseDeltas(name, a, b), rep.Findings()...)
}

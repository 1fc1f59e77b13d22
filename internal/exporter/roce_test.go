package exporter

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rdmalab/rdmalab/internal/host"
)

// Each ethtool counter of a RoCE netdev becomes its metric with the
// priority and direction as labels; other counters are not exported twice.
func TestEmitRoCE(t *testing.T) {
	s := &host.Snapshot{RoCE: []host.RoCEQoS{{Netdev: "enp65s0f0np0", Device: "mlx5_0", Port: 1,
		Counters: host.Got(map[string]uint64{"rx_prio3_pause": 120, "tx_prio3_pause": 98000, "tx_prio3_pause_duration": 5000,
			"tx_global_pause": 7, "rx_discards_phy": 3, "rx_prio3_buf_discard": 2, "tx_pause_storm_error_events": 1, "rx_prio0_bytes": 10}, "ethtool -S enp65s0f0np0")}}}
	ch := make(chan prometheus.Metric, 64)
	m := &emitter{ch: ch}
	emitRoCE(m, s)
	close(ch)
	if m.err != nil {
		t.Fatal(m.err)
	}
	var got []string
	for metric := range ch {
		var d dto.Metric
		if err := metric.Write(&d); err != nil {
			t.Fatal(err)
		}
		name := descInfos[metric.Desc()].name
		var ls []string
		for _, l := range d.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		got = append(got, fmt.Sprintf("%s{%s} %g", name, strings.Join(ls, ","), d.GetCounter().GetValue()))
	}
	slices.Sort(got)
	want := []string{
		"rdmalab_roce_discards_total{counter=buf_discard,device=mlx5_0,netdev=enp65s0f0np0,port=1,priority=3} 2",
		"rdmalab_roce_discards_total{counter=rx_discards_phy,device=mlx5_0,netdev=enp65s0f0np0,port=1,priority=} 3",
		"rdmalab_roce_global_pause_frames_total{device=mlx5_0,direction=tx,netdev=enp65s0f0np0,port=1} 7",
		"rdmalab_roce_pause_duration_microseconds_total{device=mlx5_0,direction=tx,netdev=enp65s0f0np0,port=1,priority=3} 5000",
		"rdmalab_roce_pause_frames_total{device=mlx5_0,direction=rx,netdev=enp65s0f0np0,port=1,priority=3} 120",
		"rdmalab_roce_pause_frames_total{device=mlx5_0,direction=tx,netdev=enp65s0f0np0,port=1,priority=3} 98000",
		"rdmalab_roce_pause_storm_events_total{device=mlx5_0,level=error,netdev=enp65s0f0np0,port=1} 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if roceTools(Options{Root: "/tmp"}) != nil {
		t.Error("tools run on a root that is not the live host")
	}
}

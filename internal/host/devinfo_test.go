package host

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A saved ibv_devinfo's active_mtu and max_mtu land on the port, sourced
// to the tool: CX-7 RoCE at 4096, an SR-IOV VF negotiated to 1024.
func TestDevinfoActiveMTU(t *testing.T) {
	for _, tc := range []struct {
		dir, part, dev string
		active, max    int
	}{
		{"ibtools/ibv_devinfo", "deepep-issue-38", "mlx5_2", 4096, 4096},
		{"ibtools/roce-cx5-sriov-vf-k8s", "ibv_devinfo_vf_port_down", "mlx5_1", 1024, 4096},
	} {
		b, name := capture(t, tc.dir, tc.part)
		d := ParseDevinfo(b).RDMA(tc.dev)
		if d == nil || len(d.Ports) != 1 {
			t.Fatalf("%s: %s not parsed", name, tc.dev)
		}
		p := d.Ports[0]
		if p.ActiveMTU == nil || p.ActiveMTU.Value != tc.active || p.ActiveMTU.Source != "ibv_devinfo active_mtu" || p.MaxMTU == nil || p.MaxMTU.Value != tc.max {
			t.Errorf("%s: active %+v max %+v", name, p.ActiveMTU, p.MaxMTU)
		}
	}
	// Without -v-style MTU lines (ibstat's layout) nothing is made up.
	b, name := capture(t, "ibtools/ibstat", "l2fwd-nv-issue-6")
	for _, d := range ParseIBStat(b).RDMADevices {
		for _, p := range d.Ports {
			if p.ActiveMTU != nil || p.MaxMTU != nil {
				t.Errorf("%s: %s port %d has an MTU it never showed", name, d.Name, p.Port)
			}
		}
	}
}

// Whatever the input, a port's MTU is an IB MTU (256…4096) or unknown, and
// a value printed in the input.
func FuzzParseDevinfo(f *testing.F) {
	b, _ := capture(f, "ibtools/ibv_devinfo", "deepep-issue-38")
	f.Add(b)
	f.Add([]byte("hca_id: mlx5_0\n\tport: 1\n\t\tactive_mtu: 3000 (9)\n\t\tmax_mtu: -4096\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range ParseDevinfo(b).RDMADevices {
			for _, p := range d.Ports {
				for _, r := range []*Read[int]{p.ActiveMTU, p.MaxMTU} {
					if r == nil {
						continue
					}
					if !slices.Contains([]int{256, 512, 1024, 2048, 4096}, r.Value) || !strings.Contains(string(b), strconv.Itoa(r.Value)) {
						t.Fatalf("MTU %d from %q", r.Value, b)
					}
				}
			}
		}
	})
}

package cli

import (
	"strings"
	"testing"
)

// doctor on the embedded seed-000 example explains its RoCE QoS: for each
// port what it read (traffic class, trust, DSCP map, PFC, ECN, CNP, rdma_cm
// defaults) and what it concluded, and says nothing is wrong with it.
func TestDoctorExplainsRoCEQoS(t *testing.T) {
	out, _, code := run(t, "doctor", "--snapshot", "example:seed000-epyc", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"roce.qos.path              epyc-lab mlx5_0 port 1 (enp65s0f0np0): traffic_class 106 → DSCP 26 → priority 3 (trust dscp, map /sys/class/net/enp65s0f0np0/qos/dscp2prio line 1) → PFC on 3: lossless",
		"roce.ecn                   epyc-lab mlx5_0 port 1 (enp65s0f0np0): ECN on priority 3 as notification and reaction point",
		"roce.pfc.single            epyc-lab mlx5_0 port 1 (enp65s0f0np0): PFC on 3",
		"roce.cnp                   epyc-lab mlx5_0 port 1 (enp65s0f0np0): CNPs on priority 6",
		"roce.mode                  epyc-lab mlx5_0 port 1 (enp65s0f0np0): rdma_cm defaults to RoCE v2",
		"roce.gid.v2                epyc-lab mlx5_0 port 1: RoCE v2 GID index 3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	js, _, _ := run(t, "doctor", "--snapshot", "example:seed000-epyc", "-o", "json")
	for _, src := range []string{"/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "/sys/class/net/enp65s0f0np0/qos/trust", "/sys/class/net/enp65s0f0np0/qos/pfc line 3", "/sys/class/net/enp65s0f0np0/ecn/roce_np/cnp_dscp", "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"} {
		if !strings.Contains(js, src) {
			t.Errorf("no evidence sourced to %s", src)
		}
	}
}

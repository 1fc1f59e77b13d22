package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The real RoCE captures through judge: the format that claims each, and
// the findings that are not passes (check, subject, message part).
func TestJudgeRoCECaptures(t *testing.T) {
	root := testhost.SharedTestdata(t)
	for _, tc := range []struct {
		file, format string
		bad          []string // "check subject: message part"
		pass         int
	}{
		{"mlnx_qos/setup-nic-lossless-layer3_eth4-mlx5_2_set-x-trace_trust-dscp_pfc-prio3_twice_no-buffer-row.txt", "mlnx_qos",
			[]string{"roce.qos.path eth4: trust dscp, priority 3 is lossless; the DSCP the traffic carries"}, 1},
		{"mlnx_qos/sn2410-roce-blog-2019_eth4_trust-dscp_dscp2prio-map-only_excerpt.txt", "mlnx_qos",
			[]string{"roce.qos.path eth4: PFC priorities not read"}, 0},
		{"mlnx_qos/sn2700-cx5-nfsrdma-blog_mce0_dcbx-firmware_trust-dscp_pfc-prio3_ets-50-50_buffer-row.txt", "mlnx_qos",
			[]string{"roce.qos.path interface not named in the output: trust dscp, priority 3 is lossless"}, 1},
		// DSCP 40 (tclass 160) → priority 5, PFC on 5, ECN everywhere, CNP 48 → 6.
		{"roce-sysfs/spiderpool-rdma-qos-doc_eth0-mlx5_0_qos-query_ecn-np-rp-enable-all-prios_cnp-dscp48_tclass160_md-indented.txt", "mlnx_qos", nil, 4},
		{"show_gids/rdma-manual-readme_mlx5_0-ens11f0-link-local-only_mlx5_1-ib-port-v1-no-netdev.txt", "show_gids",
			[]string{"roce.gid.v2 mlx5_0 port 1: no RoCE v2 GID with an IPv4 address"}, 0},
		{"show_gids/rdma-bench-c-header-comment_star-prefixed_3dev-roce-v1-v2_tabs.txt", "show_gids", nil, 3},
		{"dcb/dpaa2-eth-netdev-2020_lldptool-t-V-PFC_eth1_willing_pfc-enabled-1-3-7.txt", "dcb / lldptool",
			[]string{"roce.pfc.single eth1: PFC on 3 priorities (1,3,7)", "roce.qos.path eth1: trust mode not read"}, 0},
		// The same lab host before its configuration: PFC off on every
		// priority, whatever the unread trust mode, and ECN not shown.
		{"dcb/roce-lab-gpuserver1_cx3-ens6_before-config_script-wrapped_pfc-all-off_no-dscp-map.txt", "dcb / lldptool",
			[]string{"roce.qos.path interface not named in the output: PFC off on every priority, ECN state unread: RoCE traffic is lossy"}, 2},
		{"dcb/roce-lab-gpuserver_cx3-ens6_after-config_dcb-pfc-prio3-on_dcb-app-dscp-AF31-3.txt", "dcb / lldptool",
			[]string{"roce.qos.path ens6: trust dscp, priority 3 is lossless"}, 1},
		{"ethtool-S/bpf-list-2024-xdp-regression_mlx5_kernel-6.5_nonzero-only_rx_discards_phy-441G_tx_global_pause_buffer-passed-thres.txt", "ethtool -S",
			[]string{"roce.pause interface not named in the output: since the counters were cleared: tx_global_pause 44414017, rx_discards_phy 441063206498"}, 0},
		{"roce-sysfs/roce-storage-target-notes_cx6-mlxen0-1_mst-status_ibdev2netdev_cma_roce_mode-RoCE-v2.txt", "cma_roce_mode", nil, 2},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := One(tc.file, b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != tc.format {
				t.Errorf("format %q, want %q", r.Format, tc.format)
			}
			var bad []check.Finding
			pass := 0
			for _, f := range r.Findings {
				if f.Outcome == check.Pass {
					pass++
				} else {
					bad = append(bad, f)
				}
			}
			if len(bad) != len(tc.bad) || pass != tc.pass {
				t.Fatalf("%d not passing (want %d), %d passing (want %d): %+v", len(bad), len(tc.bad), pass, tc.pass, bad)
			}
			for i, f := range bad {
				if got := f.Check + " " + f.Subject + ": " + f.Message; !strings.HasPrefix(got, tc.bad[i]) {
					t.Errorf("got  %s\nwant %s…", got, tc.bad[i])
				}
			}
		})
	}
	// An answer that cannot be tied to a device is refused, naming why.
	b, _ := os.ReadFile(filepath.Join(root, "roce-sysfs/roce-notes-zh_cma_roce_mode-two-commands-one-output-line.txt"))
	if _, err := One("zh.txt", b, Options{}); err == nil || !strings.Contains(err.Error(), "cannot tell which device") {
		t.Errorf("err = %v", err)
	}
}

// seed000Query is what a QoS query script (the spiderpool capture's
// shape) prints for seed 000's first port, healthy: the saved-output twin
// of the testhost tree, so judge and doctor can be held to the same
// verdicts fault by fault.
const seed000Query = `======== show configuration for device enp65s0f0np0 / mlx5_0========
Priority trust state: dscp
PFC configuration:
        priority    0   1   2   3   4   5   6   7
        enabled     0   0   0   1   0   0   0   0
ECN Enabled for priority 3: /sys/class/net/enp65s0f0np0/ecn/roce_np/enable/3 = 1
ECN Enabled for priority 3: /sys/class/net/enp65s0f0np0/ecn/roce_rp/enable/3 = 1
QOS for CNP: /sys/class/net/enp65s0f0np0/ecn/roce_np/cnp_dscp = 48
QOS for rdma: /sys/class/infiniband/mlx5_0/tc/1/traffic_class = Global tclass=106
`

// The injected faults of hostcheck's seed-000 tests, as saved outputs:
// each gives exactly the same check as doctor on the faulty tree.
func TestJudgeRoCEFaults(t *testing.T) {
	pfc := func(flags string) func(string) string {
		return func(s string) string {
			return strings.Replace(s, "enabled     0   0   0   1   0   0   0   0", "enabled     "+flags, 1)
		}
	}
	for _, tc := range []struct {
		name, check, want string
		edit              func(string) string
	}{
		{"healthy", "", "", func(s string) string { return s }},
		{"PFC off", "roce.qos.path", "traffic_class 106 → DSCP 26 → priority 3, PFC off: RoCE traffic is lossy (ECN only)", pfc("0   0   0   0   0   0   0   0")},
		{"PFC on the wrong priority", "roce.qos.path", "priority 3, PFC off: RoCE traffic is lossy (ECN only) while priority 4 is lossless", pfc("0   0   0   0   1   0   0   0")},
		{"trust pcp", "roce.qos.path", "priority 0, PFC off, no ECN on it: RoCE traffic is lossy while priority 3 is lossless; trust pcp", func(s string) string {
			return strings.Replace(s, "trust state: dscp", "trust state: pcp", 1)
		}},
		{"NCCL_IB_TC unset", "roce.qos.path", "traffic_class not forced, NCCL_IB_TC unset → DSCP 0 → priority 0, PFC off: NCCL traffic is lossy while priority 3 is lossless", func(s string) string {
			return strings.Replace(s, " = Global tclass=106", " = ", 1)
		}},
		{"ECN off on the lossless priority", "roce.ecn", "ECN off on priority 3", func(s string) string {
			return strings.ReplaceAll(s, "enable/3 = 1", "enable/3 = 0")
		}},
		{"traffic_class forced to 0", "roce.qos.path", "DSCP 0 is no standard RoCE class (set traffic_class 106: DSCP 26)", func(s string) string {
			return strings.Replace(s, "Global tclass=106", "Global tclass=0", 1)
		}},
		{"PFC on two priorities", "roce.pfc.single", "PFC on 2 priorities (3,6)", pfc("0   0   0   1   0   0   1   0")},
		{"CNPs on the data's priority", "roce.cnp", "CNPs ride priority 3", func(s string) string {
			return strings.Replace(s, "cnp_dscp = 48", "cnp_dscp = 26", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := One("epyc-lab-qos.txt", []byte(tc.edit(seed000Query)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var bad []check.Finding
			for _, f := range r.Findings {
				if f.Outcome != check.Pass {
					bad = append(bad, f)
				}
			}
			if tc.check == "" {
				if len(bad) != 0 || len(r.Findings) != 4 {
					t.Fatalf("healthy: %+v", r.Findings)
				}
				return
			}
			if len(bad) != 1 || bad[0].Check != tc.check || bad[0].Subject != "mlx5_0 port 1 (enp65s0f0np0)" || !strings.Contains(bad[0].Message, tc.want) {
				t.Fatalf("want one %s on enp65s0f0np0 containing %q, got %+v", tc.check, tc.want, bad)
			}
		})
	}
	// Two ethtool -S readings in one file, pauses rising on priority 3.
	two := "$ ethtool -S enp65s0f0np0\nNIC statistics:\n     tx_prio3_pause: 40\n$ ethtool -S enp65s0f0np0\nNIC statistics:\n     tx_prio3_pause: 250040\n"
	r, err := One("pauses.txt", []byte(two), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, f := range r.Findings {
		if f.Outcome != check.Pass {
			bad = append(bad, f.Check+" "+f.Subject+": "+f.Message)
		}
	}
	if len(bad) != 1 || bad[0] != "roce.pause enp65s0f0np0: pause counters rose in two readings: tx_prio3_pause +250000" {
		t.Errorf("%q", bad)
	}
}

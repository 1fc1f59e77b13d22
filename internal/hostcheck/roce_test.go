package hostcheck

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// seedNet is the netdev directory of seed 000's first RoCE port.
const seedNet = "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/net/enp65s0f0np0/"

// roceFaults are injected into seed 000's first RoCE port (mlx5_0,
// enp65s0f0np0); each must give exactly its finding and nothing else that
// is not passing, on that port.
var roceFaults = []struct {
	name, check, want string
	edit              func(t *testing.T, root string)
	// ethtool, when set, is what a stand-in ethtool prints for the
	// faulty port (the others get quietPorts).
	ethtool string
}{
	{"PFC off", "roce.qos.path", "traffic_class 106 → DSCP 26 → priority 3, PFC off: RoCE traffic is lossy (ECN only)", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0")
	}, ""},
	{"PFC on the wrong priority", "roce.qos.path", "priority 3, PFC off: RoCE traffic is lossy (ECN only) while priority 4 is lossless", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   1   0   0   0")
	}, ""},
	{"trust pcp", "roce.qos.path", "priority 0, PFC off, no ECN on it: RoCE traffic is lossy while priority 3 is lossless; trust pcp on a routed RoCE v2 fabric", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/trust", "pcp")
	}, ""},
	{"NCCL_IB_TC unset", "roce.qos.path", "traffic_class not forced, NCCL_IB_TC unset → DSCP 0 → priority 0, PFC off: NCCL traffic is lossy while priority 3 is lossless", func(t *testing.T, r string) {
		write(t, r, "sys/class/infiniband/mlx5_0/tc/1/traffic_class", "")
	}, ""},
	{"ECN off on the lossless priority", "roce.ecn", "ECN off on priority 3", func(t *testing.T, r string) {
		write(t, r, seedNet+"ecn/roce_np/enable/3", "0")
		write(t, r, seedNet+"ecn/roce_rp/enable/3", "0")
	}, ""},
	{"PFC on two priorities", "roce.pfc.single", "PFC on 2 priorities (3,6)", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   1   0")
	}, ""},
	{"CNPs on the data's priority", "roce.cnp", "CNPs ride priority 3 with the data", func(t *testing.T, r string) {
		write(t, r, seedNet+"ecn/roce_np/cnp_dscp", "26")
	}, ""},
	{"rdma_cm defaults to RoCE v1", "roce.mode", "rdma_cm defaults to IB/RoCE v1: its connections do not route", func(t *testing.T, r string) {
		write(t, r, "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode", "IB/RoCE v1")
	}, ""},
	{"pause storm", "roce.pause", "pause storm: tx_pause_storm_error_events 2", nil,
		"NIC statistics:\n     rx_prio3_pause: 120\n     tx_prio3_pause: 98000\n     tx_pause_storm_error_events: 2\n"},
	{"link-local GIDs only on an active port", "roce.gid.v2", "no RoCE v2 GID with an IPv4 address", func(t *testing.T, r string) {
		for _, i := range []string{"2", "3"} {
			write(t, r, mlx0+"gids/"+i, "0000:0000:0000:0000:0000:0000:0000:0000")
		}
	}, ""},
}

func notPassingRoCE(fs []check.Finding) []check.Finding {
	var out []check.Finding
	for _, f := range fs {
		if f.Outcome != check.Pass && (strings.HasPrefix(f.Check, "roce.") || strings.HasPrefix(f.Check, "fleet.roce")) {
			out = append(out, f)
		}
	}
	return out
}

// Seed 000's healthy tree reads its full RoCE QoS from sysfs (and the
// ports' active_mtu from a replayed ibv_devinfo -v) and passes every RoCE
// rule on every port.
func TestRoCEHealthySeed(t *testing.T) {
	s := roceTree(t, nil, "")
	if bad := notPassingRoCE(Run(s, Options{})); len(bad) > 0 {
		t.Fatalf("healthy seed 000: %+v", bad)
	}
	q := s.RoCEQoSOf("enp65s0f0np0")
	if q == nil || q.Trust == nil || q.PFC == nil || q.CNPDSCP == nil || q.TrafficClass == nil || q.ECNNotify == nil {
		t.Fatalf("QoS not read: %+v", q)
	}
	if q.TrafficClass.Value != 106 || q.TrafficClass.Source != "/sys/class/infiniband/mlx5_0/tc/1/traffic_class" || !slices.Equal(q.PFC.Value, []int{3}) || q.CNPDSCP.Value != 48 {
		t.Errorf("read %+v %+v %+v", q.TrafficClass, q.PFC, q.CNPDSCP)
	}
}

// PFC off on every priority is lossy whatever the unread trust mode maps
// the traffic to: with ECN on, a warning (lossy by design, ECN only); with
// ECN unread, a failure (the before-config dcb capture, judge's test).
func TestRoCEPFCOffTrustUnread(t *testing.T) {
	s := roceTree(t, func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0")
		if err := os.Remove(filepath.Join(r, seedNet+"qos/trust")); err != nil {
			t.Fatal(err)
		}
	}, "")
	var got []string
	for _, f := range Run(s, Options{}) {
		if f.Check == "roce.qos.path" && f.Subject == "mlx5_0 port 1 (enp65s0f0np0)" {
			got = append(got, string(f.Outcome)+" "+f.Message)
			if len(f.Fix) == 0 {
				t.Error("no fix")
			}
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "warn PFC off on every priority: RoCE traffic is lossy (ECN only, on priority 3)") {
		t.Errorf("got %q", got)
	}
}

// quietPorts is a synthetic ethtool -S of a healthy lossless port (no
// capture of one exists in the shared testdata): a few pauses, no storm.
const quietPorts = "NIC statistics:\n     rx_prio3_pause: 120\n     tx_prio3_pause: 40\n     tx_pause_storm_error_events: 0\n     rx_discards_phy: 0\n"

// standIn puts a tool on PATH that replays recorded output: the script
// prints byPort[its last argument], else byPort[""]. It is a replay, not
// the tool: RDMA NICs are not on this machine.
func standIn(t *testing.T, dir, name string, byPort map[string]string) {
	t.Helper()
	script := "#!/bin/sh\n# replay of recorded " + name + " output (a stand-in: no RDMA NIC here)\nfor last; do :; done\ncase \"$last\" in\n"
	// The default ("" → *) must come last in the case.
	for _, port := range slices.Backward(slices.Sorted(maps.Keys(byPort))) {
		out := byPort[port]
		f := filepath.Join(dir, name+"-"+strings.NewReplacer("/", "_", "*", "any").Replace(port)+".out")
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		pat := port
		if pat == "" {
			pat = "*"
		}
		script += fmt.Sprintf("  %s) /bin/cat '%s';;\n", pat, f)
	}
	script += "esac\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// roceTree collects seed 000 with edit applied and, when ethtool is set,
// a stand-in ethtool that prints it for enp65s0f0np0 (and quietPorts for
// the other ports), through inventory's real tool runner.
func roceTree(t *testing.T, edit func(t *testing.T, root string), ethtool string) *host.Snapshot {
	t.Helper()
	root := testhost.WriteTree(t, testhost.Seed000())
	if edit != nil {
		edit(t, root)
	}
	return roceTreeWith(t, root, ethtool, seedDevinfo(t, nil))
}

// roceTreeWith collects root with stand-ins for ethtool (when set) and
// ibv_devinfo (when devinfo is not empty).
func roceTreeWith(t *testing.T, root, ethtool, devinfo string) *host.Snapshot {
	t.Helper()
	opt := inventory.Options{Now: func() time.Time { return time.Unix(0, 0) }}
	bin := t.TempDir()
	if ethtool != "" {
		standIn(t, bin, "ethtool", map[string]string{"enp65s0f0np0": ethtool, "": quietPorts})
	}
	if devinfo != "" {
		standIn(t, bin, "ibv_devinfo", map[string]string{"": devinfo})
	}
	t.Setenv("PATH", bin) // only the stand-ins: the machine's own dcb or ethtool must not answer
	opt.Tools = inventory.ExecTool(inventory.ToolTimeout)
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return inventory.Collect(fs, opt)
}

func TestRoCEInjectedFaults(t *testing.T) {
	for _, tc := range roceFaults {
		t.Run(tc.name, func(t *testing.T) {
			s := roceTree(t, tc.edit, tc.ethtool)
			bad := notPassingRoCE(Run(s, Options{}))
			if len(bad) != 1 {
				t.Fatalf("want exactly one %s finding, got %d: %+v", tc.check, len(bad), bad)
			}
			f := bad[0]
			wantSub := "mlx5_0 port 1 (enp65s0f0np0)"
			if tc.check == "roce.gid.v2" {
				wantSub = "mlx5_0 port 1"
			}
			if f.Check != tc.check || f.Subject != wantSub || !strings.Contains(f.Message, tc.want) || !realFix(f.Fix) {
				t.Errorf("got %s %q %q (fix %v), want %s %q containing %q", f.Check, f.Subject, f.Message, f.Fix, tc.check, wantSub, tc.want)
			}
		})
	}
}

// Two readings of seed 000 whose stand-in ethtool shows priority 3's
// pauses rising on one port: exactly that port's roce.pause warning.
func TestRoCEPauseRising(t *testing.T) {
	before := roceTree(t, nil, quietPorts)
	after := roceTree(t, nil, strings.Replace(quietPorts, "tx_prio3_pause: 40", "tx_prio3_pause: 250040", 1))
	after.CollectedAt = before.CollectedAt.Add(10 * time.Minute)
	bad := notPassingRoCE(Doctor([]*host.Snapshot{before, after}, Options{}))
	if len(bad) != 1 || bad[0].Check != "roce.pause" || bad[0].Subject != "mlx5_0 port 1 (enp65s0f0np0)" || !strings.Contains(bad[0].Message, "pause counters rose in 10m0s: tx_prio3_pause +250000") {
		t.Fatalf("%+v", bad)
	}
	if e := bad[0].Evidence; len(e) != 1 || e[0].Value != "40 → 250040" || e[0].Source != "ethtool -S enp65s0f0np0 → ethtool -S enp65s0f0np0" {
		t.Errorf("evidence %+v", e)
	}
}

// An inbox host: no MLNX_OFED qos/ or ecn/ files, the QoS comes from a
// stand-in mlnx_qos or dcb on PATH replaying real captured output, read
// through inventory's tool runner, each value sourced to the command.
func TestRoCEStandInQoSTools(t *testing.T) {
	inbox := func(t *testing.T, r string) {
		for _, nd := range []string{"enp65s0f0np0", "enp65s0f1np1", "enp97s0f0np0", "enp97s0f1np1"} {
			real, err := filepath.EvalSymlinks(filepath.Join(r, "sys/class/net", nd))
			if err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(filepath.Join(real, "qos"))
			os.RemoveAll(filepath.Join(real, "ecn"))
		}
	}
	read := func(t *testing.T, tool, capture string) *host.Snapshot {
		b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), capture))
		if err != nil {
			t.Fatal(err)
		}
		root := testhost.WriteTree(t, testhost.Seed000())
		inbox(t, root)
		bin := t.TempDir()
		standIn(t, bin, tool, map[string]string{"": string(b)})
		t.Setenv("PATH", bin) // only the stand-ins: the machine's own dcb or ethtool must not answer
		fs, err := hostfs.New(root)
		if err != nil {
			t.Fatal(err)
		}
		return inventory.Collect(fs, inventory.Options{Tools: inventory.ExecTool(inventory.ToolTimeout)})
	}
	for _, tc := range []struct {
		tool, capture, source string
		want                  map[string]check.Outcome // by check, for mlx5_0
	}{
		// MLNX_OFED's mlnx_qos after the seed's two commands: lossless on
		// 3, where traffic_class 106 sends the traffic; ECN not shown.
		{"mlnx_qos", "mlnx_qos/setup-nic-lossless-layer3_eth4-mlx5_2_set-x-trace_trust-dscp_pfc-prio3_twice_no-buffer-row.txt", "mlnx_qos -i enp65s0f0np0 line 43",
			map[string]check.Outcome{"roce.qos.path": check.Pass, "roce.pfc.single": check.Pass, "roce.ecn": check.Unknown, "roce.cnp": check.Unknown}},
		// Inbox dcb before the lab's configuration: PFC off everywhere, no
		// DSCP APP entries, so the trust mode stays unknown, and it decides
		// nothing: no priority is lossless, and ECN is unread.
		{"dcb", "dcb/roce-lab-gpuserver1_cx3-ens6_before-config_script-wrapped_pfc-all-off_no-dscp-map.txt", "",
			map[string]check.Outcome{"roce.qos.path": check.Fail, "roce.pfc.single": check.Pass, "roce.ecn": check.Unknown, "roce.cnp": check.Unknown}},
		// After: PFC on 3 and AF31 → 3 (trust dscp implied by the APP entry).
		{"dcb", "dcb/roce-lab-gpuserver_cx3-ens6_after-config_dcb-pfc-prio3-on_dcb-app-dscp-AF31-3.txt", "dcb -j pfc show dev enp65s0f0np0 line 6 (DSCP APP entries: mlx5 lists them only under trust dscp)",
			map[string]check.Outcome{"roce.qos.path": check.Pass, "roce.pfc.single": check.Pass, "roce.ecn": check.Unknown, "roce.cnp": check.Unknown}},
	} {
		t.Run(tc.tool+" "+filepath.Base(tc.capture), func(t *testing.T) {
			s := read(t, tc.tool, tc.capture)
			got := map[string]check.Outcome{}
			for _, f := range Run(s, Options{}) {
				if f.Subject == "mlx5_0 port 1 (enp65s0f0np0)" && strings.HasPrefix(f.Check, "roce.") {
					got[f.Check] = f.Outcome
				}
			}
			delete(got, "roce.mode")
			delete(got, "roce.mtu")
			delete(got, "roce.mtu.path")
			delete(got, "roce.pause")
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if q := s.RoCEQoSOf("enp65s0f0np0"); tc.source != "" && (q.Trust == nil || q.Trust.Source != tc.source) {
				t.Errorf("trust %+v, want source %q", q.Trust, tc.source)
			}
		})
	}
}

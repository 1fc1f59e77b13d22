package hostcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
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
}{
	{"PFC off", "roce.qos.path", "traffic_class 106 → DSCP 26 → priority 3, PFC off: RoCE traffic is lossy (ECN only)", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0")
	}},
	{"PFC on the wrong priority", "roce.qos.path", "priority 3, PFC off: RoCE traffic is lossy (ECN only) while priority 4 is lossless", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   1   0   0   0")
	}},
	{"trust pcp", "roce.qos.path", "priority 0, PFC off, no ECN on it: RoCE traffic is lossy while priority 3 is lossless; trust pcp on a routed RoCE v2 fabric", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/trust", "pcp")
	}},
	{"NCCL_IB_TC unset", "roce.qos.path", "traffic_class not forced, NCCL_IB_TC unset → DSCP 0 → priority 0, PFC off: NCCL traffic is lossy while priority 3 is lossless", func(t *testing.T, r string) {
		write(t, r, "sys/class/infiniband/mlx5_0/tc/1/traffic_class", "")
	}},
	{"ECN off on the lossless priority", "roce.ecn", "ECN off on priority 3", func(t *testing.T, r string) {
		write(t, r, seedNet+"ecn/roce_np/enable/3", "0")
		write(t, r, seedNet+"ecn/roce_rp/enable/3", "0")
	}},
	{"PFC on two priorities", "roce.pfc.single", "PFC on 2 priorities (3,6)", func(t *testing.T, r string) {
		write(t, r, seedNet+"qos/pfc", "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   1   0")
	}},
	{"CNPs on the data's priority", "roce.cnp", "CNPs ride priority 3 with the data", func(t *testing.T, r string) {
		write(t, r, seedNet+"ecn/roce_np/cnp_dscp", "26")
	}},
	{"link-local GIDs only on an active port", "roce.gid.v2", "no RoCE v2 GID with an IPv4 address", func(t *testing.T, r string) {
		for _, i := range []string{"2", "3"} {
			write(t, r, mlx0+"gids/"+i, "0000:0000:0000:0000:0000:0000:0000:0000")
		}
	}},
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

// Seed 000's healthy tree reads its full RoCE QoS from sysfs and passes
// every RoCE rule on every port.
func TestRoCEHealthySeed(t *testing.T) {
	s := tree(t, testhost.Seed000(), nil)
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

func TestRoCEInjectedFaults(t *testing.T) {
	for _, tc := range roceFaults {
		t.Run(tc.name, func(t *testing.T) {
			s := tree(t, testhost.Seed000(), func(root string) { tc.edit(t, root) })
			bad := notPassingRoCE(Run(s, Options{}))
			if len(bad) != 1 {
				t.Fatalf("want exactly one %s finding, got %d: %+v", tc.check, len(bad), bad)
			}
			f := bad[0]
			wantSub := "mlx5_0 port 1 (enp65s0f0np0)"
			if tc.check == "roce.gid.v2" {
				wantSub = "mlx5_0 port 1"
			}
			if f.Check != tc.check || f.Subject != wantSub || !strings.Contains(f.Message, tc.want) || len(f.Fix) == 0 {
				t.Errorf("got %s %q %q (fix %v), want %s %q containing %q", f.Check, f.Subject, f.Message, f.Fix, tc.check, wantSub, tc.want)
			}
		})
	}
}

var _ = fmt.Sprint
var _ = os.Remove
var _ = filepath.Join
var _ = time.Now
var _ host.Snapshot

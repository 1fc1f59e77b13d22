package hostcheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// deepepDevinfo is a real ibv_devinfo of ConnectX-7 RoCE ports
// (DeepEP issue 38, PROVENANCE.md): active_mtu 4096 (5).
const deepepDevinfo = "ibtools/ibv_devinfo/deepep-issue-38_H100_CX7-RoCE_multi-hca_excerpt.txt"

var activeMTURE = regexp.MustCompile(`(?m)^(\s*active_mtu:\s*).*$`)

// seedDevinfo is what a stand-in ibv_devinfo -v replays for seed 000:
// the real capture's mlx5_2 record, once per seed device under its name,
// its active_mtu line replaced by activeMTU[device] when given (a value
// as ibv_devinfo prints it, e.g. the real VF capture's "1024 (3)").
func seedDevinfo(t *testing.T, activeMTU map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), deepepDevinfo))
	if err != nil {
		t.Fatal(err)
	}
	rec := string(b)[strings.Index(string(b), "hca_id: mlx5_2"):]
	rec = rec[:strings.Index(rec[1:], "hca_id:")+1]
	var out strings.Builder
	for _, dev := range []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"} {
		r := strings.Replace(rec, "hca_id: mlx5_2", "hca_id: "+dev, 1)
		if v, ok := activeMTU[dev]; ok {
			r = activeMTURE.ReplaceAllString(r, "${1}"+v)
		}
		out.WriteString(r)
	}
	return out.String()
}

// The RDMA MTU a port runs at against what its netdev allows, on seed 000
// read through inventory with a replayed ibv_devinfo -v: each case gives
// its roce.mtu.path outcome on mlx5_0 port 1 (enp65s0f0np0), naming both
// values and their sources.
func TestRoCEMTUPath(t *testing.T) {
	for _, tc := range []struct {
		name      string
		netdevMTU string // written to enp65s0f0np0/mtu when set
		activeMTU map[string]string
		noDevinfo bool
		want      check.Outcome
		msg       string
	}{
		{"carried", "", nil, false, check.Pass, "active_mtu 4096 is what netdev MTU 4200 allows"},
		{"negotiated down", "", map[string]string{"mlx5_0": "1024 (3)"}, false, check.Warn, "active_mtu 1024 below the 4096 that netdev MTU 4200 allows"},
		{"above the netdev", "1500", nil, false, check.Fail, "active_mtu 4096 above the 1024 that netdev MTU 1500 allows"},
		{"active_mtu not read", "", nil, true, check.Unknown, "active_mtu not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := testhost.WriteTree(t, testhost.Seed000())
			if tc.netdevMTU != "" {
				write(t, root, seedNet+"mtu", tc.netdevMTU)
			}
			devinfo := ""
			if !tc.noDevinfo {
				devinfo = seedDevinfo(t, tc.activeMTU)
			}
			s := roceTreeWith(t, root, "", devinfo)
			var got []check.Finding
			for _, f := range Run(s, Options{}) {
				if f.Check == "roce.mtu.path" && (f.Subject == "mlx5_0 port 1 (enp65s0f0np0)" || (f.Outcome != check.Pass && !tc.noDevinfo)) {
					got = append(got, f)
				}
			}
			if len(got) != 1 {
				t.Fatalf("want one roce.mtu.path finding on mlx5_0, got %+v", got)
			}
			f := got[0]
			if f.Subject != "mlx5_0 port 1 (enp65s0f0np0)" || f.Outcome != tc.want || !strings.Contains(f.Message, tc.msg) {
				t.Errorf("got %s %q %q, want %s containing %q", f.Outcome, f.Subject, f.Message, tc.want, tc.msg)
			}
			if tc.want != check.Pass && len(f.Fix) == 0 {
				t.Errorf("no fix: %+v", f)
			}
			srcs := map[string]string{}
			for _, e := range f.Evidence {
				srcs[e.What] = e.Source
			}
			if srcs["netdev mtu"] != "/sys/class/net/enp65s0f0np0/mtu" || (!tc.noDevinfo && srcs["active_mtu"] != "ibv_devinfo -v") {
				t.Errorf("evidence %+v", f.Evidence)
			}
		})
	}
}

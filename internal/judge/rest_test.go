package judge

import (
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/rules"
)

// The RoCE captures no other test names, each with what it shows and the
// verdict: a dcb app show alone (a DSCP map, no PFC) cannot say whether
// RoCE's class is lossless, an ETS table judges nothing, a PFC table on
// two priorities warns, a show_gids with a RoCE v2 IPv4 GID passes it.
func TestRemainingRoCECaptures(t *testing.T) {
	for _, c := range []struct {
		file, format string
		ws           []want
		verdict      check.Status
	}{
		{"dcb/dsa-felix-netdev-2021_swp3_dcb-app-show_default-prio_dscp-CS2-CS3_numbered-steps.txt", "dcb / lldptool",
			[]want{{"roce.qos.path", "swp3", check.Unknown}}, check.Unproven},
		{"dcb/iproute2-dcb-ets-patch-2020_eni1np1_ets-show_full_prio-tc-1-3-5_mail-indented.txt", "dcb / lldptool",
			nil, check.Unproven},
		{"dcb/iproute2-dcb-pfc-patch-2020_eni1np1_pfc-show_old-pg-pfc-name_requests-indications_mail-indented.txt", "dcb / lldptool",
			[]want{{"roce.pfc.single", "eni1np1", check.Warn}, {"roce.qos.path", "eni1np1", check.Unknown}, {"roce.pause", "eni1np1", check.Pass}}, check.Healthy},
		{"show_gids/sn2700-cx5-nfsrdma-blog_mlx5_0-mce0-v1-v2-ipv4_mlx5_1-single-v1-gid-no-netdev.txt", "show_gids",
			[]want{{"roce.gid.v2", "mlx5_0 port 1", check.Pass}}, check.Healthy},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := judged(t, c.file, capture(t, c.file), c.format, c.ws...)
			if v := rules.Verdict(rules.Judge, r.Findings); v.Status != c.verdict {
				t.Errorf("verdict %s (%s), want %s", v.Status, v.Reason, c.verdict)
			}
		})
	}
}

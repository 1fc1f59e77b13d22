package judge

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The physical-layer captures through judge: the format that claims each,
// and the finding it shows on the right port or lane.
func TestJudgePHYCaptures(t *testing.T) {
	root := testhost.SharedTestdata(t)
	for _, c := range []struct {
		file, format, check, subject string
		out                          check.Outcome
	}{
		{"mlxlink/yuuki-rdma-exporter_mft-4.34.1_cx7-fw28.47_400GbE-DR4-osfp_module-counters_json_vendor-anonymized.json", "mlxlink / mstlink", "phy.ber.effective", "port not named", check.Pass},
		{"mlxlink/yuuki-rdma-exporter_mft-4.34.1_cx7_400GbE-DR4_module-counters-fec-histogram-serdes-eye_json_serial-redacted.json", "mlxlink / mstlink", "phy.fec.histogram", "port not named", check.Pass},
		{"mlxlink/lshca-issue-11_cx5-mt4119_IB-EDR-4x_mlxlink-p1-json_cut-mid-object_excerpt.txt", "mlxlink / mstlink", "phy.output.cut", "mt4119_pciconf0 port 1", check.Unknown},
		{"mlxlink/nvidia-forum-206063_cx4-mt4115_100GbE-RS528_mlxlink-c-and-e_forum-rendered-blank-lines-collapsed-padding_excerpt.txt", "mlxlink / mstlink", "phy.ber.effective", "mt4115_pciconf0", check.Pass},
		{"ethtool-phy/asus-gx10-gb10-blog_cx7-200G-CR4-dac_ethtool-S-per-lane-fec-counters_author-trimmed-no-indent.txt", "ethtool -S", "phy.lane.errors", "lane 2", check.Warn},
		{"ethtool-phy/dgx-spark-notes-ja_spark-fb97_ethtool-show-fec_switch-link-after-reboot_active-RS_sudo-prompt.txt", "ethtool --show-fec", "phy.fec.mode", "enp1s0f1np1", check.Pass},
		{"ethtool-phy/netdev-ethtool-module-lowpower-cover-letter_swp13-qsfp28_ethtool-m_author-elided-dots_mail-indented.txt", "ethtool -m", "phy.module.ddm", "swp13", check.Unknown},
		{"ethtool-phy/netdev-ixgbe-1000base-bx-patch_fs-sfp-ge-bx_ethtool-m_sff8472-ddm-with-alarm-warning-thresholds_8-space-indent.txt", "ethtool -m", "phy.module.ddm", "eth4", check.Pass},
		{"ibdiagnet/archwiki-infiniband_ibdiagnet-1.5.7_lw4x-ls5_2CA-back-to-back-DDR_stages-report_ipoib-suboptimal-rate-warning.txt", "ibdiagnet", "phy.ibdiagnet.stage", "IPoIB Subnets Check", check.Warn},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, c.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := One(c.file, b, Options{})
			if err != nil || r.Format != c.format {
				t.Fatalf("format %q, %v", r.Format, err)
			}
			if !slices.ContainsFunc(r.Findings, func(f check.Finding) bool {
				return f.Check == c.check && f.Outcome == c.out && strings.Contains(f.Subject, c.subject)
			}) {
				t.Errorf("no %s %s on %q: %+v", c.out, c.check, c.subject, r.Findings)
			}
		})
	}
}

// An ethtool -S holding both RoCE and PHY counters is judged by both
// rule sets from one read; a comment on every row and no header are read.
func TestJudgeEthtoolSBoth(t *testing.T) {
	b := []byte("$ ethtool -S enp65s0f0np0 | grep -E 'pause|phy'\n" +
		"     tx_global_pause: 1200   # the switch paused us\n" +
		"     rx_pcs_symbol_err_phy: 4   # after FEC!\n" +
		"     rx_err_lane_0_phy: 3\n     rx_err_lane_1_phy: 2\n")
	r, err := One("paste.txt", b, Options{})
	if err != nil || r.Format != "ethtool -S" {
		t.Fatalf("%q %v", r.Format, err)
	}
	has := func(id, sub string, o check.Outcome) bool {
		return slices.ContainsFunc(r.Findings, func(f check.Finding) bool {
			return f.Check == id && f.Outcome == o && strings.Contains(f.Subject, sub)
		})
	}
	if !has("phy.fec.uncorrectable", "enp65s0f0np0", check.Fail) || !has("roce.pause", "enp65s0f0np0", check.Warn) {
		for _, f := range r.Findings {
			t.Logf("%s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
		}
		t.Error("want the PHY failure and the RoCE pause warning on enp65s0f0np0")
	}
}

package nccl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// ginLog is a real 2-node RoCE NCCL_DEBUG log (NET/IB over mlx5_*/RoCE)
// with lines added. The added lines are not from a capture: no log of
// NCCL's GPU-initiated networking is in the shared testdata. Their format
// is NCCL's own: "devCommCreate: GIN backend type %d: …" is the INFO line
// src/gin/gin_host.cc prints when a device communicator gets a GIN backend
// (type 3 is GDAKI), and "X set by environment to Y." is how NCCL's
// parameter loader logs an environment variable.
func ginLog(t *testing.T, added ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-debug/sglang-2node-roce-ofi-fallback-to-ib_excerpt-A.log"))
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "tpgds-aihub0008:207008:207008 [1] NCCL INFO "
	for _, l := range added {
		b = append(b, prefix+l+"\n"...)
	}
	return b
}

const ginOn = "devCommCreate: GIN backend type 3: 2 signals (0 requested at id 0), 0 counters"

// nccl judge on a log with GPU-initiated networking (GDAKI) on RoCE rails:
// NCCL_IB_TC unset warns, naming the caveat and the fix; set (or
// NCCL_GIN_IB_TC) passes; the real log without GIN has no such finding.
func TestJudgeGINTrafficClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		added []string
		want  check.Outcome // "" for no finding
		msg   string
	}{
		{"no GIN", nil, "", ""},
		{"GIN, NCCL_IB_TC unset", []string{ginOn}, check.Warn, "GPU-initiated networking (GDAKI) is on and NCCL_IB_TC is unset"},
		{"GIN by NCCL_GIN_TYPE, NCCL_IB_TC unset", []string{"NCCL_GIN_TYPE set by environment to 3."}, check.Warn, "ignore the kernel's per-port traffic_class"},
		{"GIN, NCCL_IB_TC set", []string{"NCCL_IB_TC set by environment to 106.", ginOn}, check.Pass, "NCCL_IB_TC=106"},
		{"GIN, NCCL_GIN_IB_TC set", []string{"NCCL_GIN_IB_TC set by environment to 106.", ginOn}, check.Pass, "NCCL_GIN_IB_TC=106"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, _, err := JudgeFile("gin.log", ginLog(t, tc.added...), JudgeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []check.Finding
			for _, f := range fs {
				if f.Check == "nccl.log.gin-tc" {
					got = append(got, f)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no nccl.log.gin-tc, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one nccl.log.gin-tc, got %+v", got)
			}
			f := got[0]
			if f.Outcome != tc.want || f.Host != "tpgds-aihub0008" || f.Subject != "GPU-initiated networking" || !strings.Contains(f.Message, tc.msg) {
				t.Errorf("got %s %s %q %q", f.Outcome, f.Host, f.Subject, f.Message)
			}
			if tc.want == check.Warn && (len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "export NCCL_IB_TC=") || !strings.Contains(f.Fix[0], "rdmalab nccl env")) {
				t.Errorf("fix %q", f.Fix)
			}
			if len(f.Evidence) < 2 || f.Evidence[0].Source != "NCCL_DEBUG log of tpgds-aihub0008" {
				t.Errorf("evidence %+v", f.Evidence)
			}
		})
	}
}

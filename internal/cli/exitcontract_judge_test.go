package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// judge holds the exit contract on real captures: a healthy ibstat 0, a
// fabric with errors over threshold 1, a file that is no saved output 2,
// an mlxlink JSON cut mid-object 3 (what decides its port was cut off),
// one RAS report with a rank behind 3 (one poll tells a hang from launch
// skew neither way: the answer is to poll it).
func TestExitContractJudge(t *testing.T) {
	shared := testhost.SharedTestdata(t)
	notOutput := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notOutput, []byte("remember to reseat the cable on node17\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{filepath.Join(shared, "ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt")}, ExitOK, "verdict: HEALTHY"},
		{[]string{filepath.Join(shared, "ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt")}, ExitFindings, "verdict: FAILED"},
		{[]string{filepath.Join(shared, "grace-blackwell/dra-driver-issue-626_gb200_nvidia-smi-q-grep-C3-Fabric_Completed-Success-clique2_health-Unhealthy_first-gpu-only.txt")}, ExitFindings, "gpu.fabric"},
		{[]string{notOutput}, ExitUsage, "not a saved output"},
		{[]string{filepath.Join(shared, "mlxlink/lshca-issue-11_cx5-mt4119_IB-EDR-4x_mlxlink-p1-json_cut-mid-object_excerpt.txt")}, ExitUnproven, "verdict: UNPROVEN"},
		{[]string{filepath.Join(shared, "ncclras/nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt")}, ExitUnproven, "to answer it: rdmalab nccl ras --host node1 --interval 5s --polls 3"},
		{[]string{filepath.Join(shared, "ncclras/nccl-docs-example-08_ras_ncclras-v_2.30.7_2node-8rank_healthy-RUNNING-OK_masked.txt")}, ExitOK, "verdict: HEALTHY"},
	} {
		out, errOut, code := run(t, append([]string{"judge"}, c.args...)...)
		if code != c.code || !strings.Contains(out+errOut, c.says) {
			t.Errorf("judge %v: exit %d, want %d saying %q\n%s%s", c.args, code, c.code, c.says, out, errOut)
		}
	}
}

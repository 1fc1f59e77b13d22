package gpudirect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The real GB200 capture fails on its Health Summary although State and
// Status are fine; its healthy twin (Summary Healthy) passes, and each
// other way a GPU falls short of its fabric gets its outcome.
func TestJudgeFabric(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "grace-blackwell/dra-driver-issue-626_gb200_nvidia-smi-q-grep-C3-Fabric_Completed-Success-clique2_health-Unhealthy_first-gpu-only.txt"))
	if err != nil {
		t.Fatal(err)
	}
	real := string(b)
	for _, c := range []struct {
		name, from, to string
		outcome        check.Outcome
		says           string
	}{
		{"the capture", "", "", check.Fail, "registered (State Completed, Status Success, clique 2), but the fabric is not healthy: Health Summary Unhealthy"},
		{"healthy twin", "Unhealthy", "Healthy", check.Pass, "State Completed, Status Success, clique 2 of cluster dc6e40c4-d722-4357-9ba6-5291dd461278, Bandwidth Full, Summary Healthy"},
		{"degraded bandwidth", "Unhealthy\n            Bandwidth                     : Full", "Healthy\n            Bandwidth                     : Degraded", check.Fail, "Bandwidth Degraded"},
		{"not started", "Completed", "Not Started", check.Fail, "never registered with its NVLink fabric"},
		{"in progress", "Completed", "In Progress", check.Unknown, "still In Progress"},
		{"not supported", "Completed", "Not Supported", check.Unknown, "no NVLink fabric"},
		{"status error", "Success", "Insufficient Resources", check.Fail, `Status "Insufficient Resources", not Success`},
		{"no clique", "CliqueId                          : 2", "CliqueId                          : 0", check.Fail, "in no clique (CliqueId 0"},
		{"recovering", "Summary                       : Unhealthy", "Summary                       : Healthy\n            Route Recovery in progress    : True", check.Warn, "recovering: Route Recovery in progress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(real, c.from, c.to, 1)
			fs, err := host.ParseGPUFabric([]byte(in), "x.txt")
			if err != nil {
				t.Fatal(err)
			}
			got := JudgeFabric(fs)
			if len(got) != 1 || got[0].Check != "gpu.fabric" || got[0].Subject != "fabric block 1" || got[0].Outcome != c.outcome || !strings.Contains(got[0].Message, c.says) {
				t.Fatalf("got %+v", got)
			}
			if c.outcome == check.Fail && len(got[0].Fix) == 0 {
				t.Error("a failure with no fix")
			}
			if len(got[0].Evidence) == 0 || got[0].Evidence[0].Source != "x.txt line 2" {
				t.Errorf("evidence %+v", got[0].Evidence)
			}
		})
	}
}

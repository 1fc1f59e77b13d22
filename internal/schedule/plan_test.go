package schedule

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/envelope"
)

var update = flag.Bool("update", false, "rewrite golden files")

// computed time is the one thing that differs between runs
var timeRE = regexp.MustCompile(`computed in [0-9.]+ s|"schedule_seconds": [0-9.e-]+`)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = timeRE.ReplaceAll(got, []byte("TIME"))
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", name, got)
	}
}

func TestPlanGolden(t *testing.T) {
	f := smallFabric(t, "fattree-2x4x4-updn.opensm-lfts.dump")
	res := Plan(f, "fattree-2x4x4.net; routes fattree-2x4x4-updn.opensm-lfts.dump")
	var table, js bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan-2x4x4-updn.txt", table.Bytes())
	fs := res.Findings()
	if len(fs) != 0 {
		t.Errorf("a healthy fabric has nothing to report: %+v", fs)
	}
	if err := envelope.Write(&js, envelope.Schedule, fs, res.Payload); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan-2x4x4-updn.json", js.Bytes())
}

// A table with a hole: pairs without a route fail, and are listed.
func TestPlanUnroutedFails(t *testing.T) {
	f := smallFabric(t, "fattree-2x4x4-updn.opensm-lfts.dump")
	// break it the way a half-configured SM would: one leaf forgets a LID
	f2 := smallFabricMutated(t, "fattree-2x4x4-updn.opensm-lfts.dump", "leaf01", f.CAs[15].LID)
	res := Plan(f2, "x")
	fs := res.Findings()
	if !check.Failed(fs) || fs[0].Check != "schedule.unrouted" || fs[0].Outcome != check.Fail || fs[0].Subject != "routes" || len(fs[0].Fix) == 0 || fs[0].Fix[0] == "" || len(res.Payload.Unrouted) != 4 {
		t.Fatalf("findings %+v, unrouted %+v", fs, res.Payload.Unrouted)
	}
	if res.Payload.Covered != res.Payload.Coverable {
		t.Errorf("the routed pairs still cover what they reach: %d of %d", res.Payload.Covered, res.Payload.Coverable)
	}
}

package inventory

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// gather captures the RoCE QoS files inventory reads (MLNX_OFED qos/ and
// ecn/, tc/<port>/traffic_class, rdma_cm's configfs): the capture replays
// to the same QoS, sources included.
func TestGatherCapturesRoCEQoS(t *testing.T) {
	root := testhost.WriteTree(t, testhost.Seed000())
	fixed := Options{Now: func() time.Time { return time.Unix(0, 0) }}
	dir, err := Open(root, fixed)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "epyc.tar.gz")
	if _, _, err := Gather(root, out, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	arch, err := Open(out, fixed)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(dir.RoCE)
	got, _ := json.Marshal(arch.RoCE)
	if len(dir.RoCE) != 4 || string(got) != string(want) {
		t.Errorf("from the capture:\n%s\nfrom the tree:\n%s", got, want)
	}
	q := arch.RoCEQoSOf("enp65s0f0np0")
	if q == nil || q.TrafficClass == nil || q.DefaultRoCETos == nil || q.PFC == nil || q.ECNNotify == nil || q.CNPDSCP == nil {
		t.Errorf("capture lost QoS files: %s", got)
	}
}

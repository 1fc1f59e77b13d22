package inventory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/hostfs"
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

// A QoS tool that hangs is cut at its timeout, its process group killed,
// and recorded as a collection error naming it; the rest still reads.
func TestToolTimeout(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\n# stand-in for a wedged mlnx_qos\n/bin/sleep 30 &\nwait\n"
	if err := os.WriteFile(filepath.Join(bin, "mlnx_qos"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin) // only the stand-ins: the machine's own dcb or ethtool must not answer
	root := testhost.WriteTree(t, testhost.Seed000())
	os.RemoveAll(filepath.Join(root, "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/net/enp65s0f0np0/qos"))
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s := Collect(fs, Options{Tools: ExecTool(300 * time.Millisecond)})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	found := false
	for _, e := range s.Errors {
		if e.Subject == "netdev enp65s0f0np0" && e.Path == "mlnx_qos -i enp65s0f0np0" && strings.Contains(e.Error, "no answer within 300ms") {
			found = true
		}
	}
	if !found {
		t.Errorf("errors %+v", s.Errors)
	}
	if q := s.RoCEQoSOf("enp65s0f0np0"); q == nil || q.Trust != nil || q.TrafficClass == nil {
		t.Errorf("the hung tool must leave trust unknown and the rest read: %+v", q)
	}
}

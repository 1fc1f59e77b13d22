package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
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

// A RoCE port's active_mtu comes from ibv_devinfo -v, run once through
// the tool runner (here a replay of a real CX-7 RoCE capture, its mlx5_2
// record named for seed 000's mlx5_0); a failing ibv_devinfo is a
// collection error naming it, and leaves the MTU unknown.
func TestRoCEActiveMTUFromDevinfo(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ibtools/ibv_devinfo/deepep-issue-38_H100_CX7-RoCE_multi-hca_excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	replay := strings.Replace(string(b), "hca_id: mlx5_2", "hca_id: mlx5_0", 1)
	root := testhost.WriteTree(t, testhost.Seed000())
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	tools := func(fail bool) Tool {
		return func(_ context.Context, name string, args ...string) ([]byte, error) {
			if name != "ibv_devinfo" {
				return nil, exec.ErrNotFound
			}
			runs = append(runs, name+" "+strings.Join(args, " "))
			if fail {
				return nil, errors.New("ibv_devinfo: exit status 255: Failed to get IB devices list")
			}
			return []byte(replay), nil
		}
	}
	s := Collect(fs, Options{Tools: tools(false)})
	p := s.RDMA("mlx5_0").Ports[0]
	if len(runs) != 1 || runs[0] != "ibv_devinfo -v" || p.ActiveMTU == nil || p.ActiveMTU.Value != 4096 || p.ActiveMTU.Source != "ibv_devinfo -v" || p.MaxMTU == nil {
		t.Errorf("runs %q, active %+v max %+v", runs, p.ActiveMTU, p.MaxMTU)
	}
	if q := s.RDMA("mlx5_1").Ports[0]; q.ActiveMTU != nil {
		t.Errorf("mlx5_1 is not in the output: %+v", q.ActiveMTU)
	}
	s = Collect(fs, Options{Tools: tools(true)})
	if p := s.RDMA("mlx5_0").Ports[0]; p.ActiveMTU != nil || !slices.ContainsFunc(s.Errors, func(e host.CollectError) bool { return e.Path == "ibv_devinfo -v" }) {
		t.Errorf("active %+v, errors %+v", p.ActiveMTU, s.Errors)
	}
}

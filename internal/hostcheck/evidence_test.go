package hostcheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// quotedSys is every /sys path under one of prefixes a finding's evidence
// quotes as where a value was read ("none" names where one looked).
func quotedSys(fs []check.Finding, prefixes ...string) map[string][]string {
	out := map[string][]string{}
	for _, f := range fs {
		for _, e := range f.Evidence {
			if e.Value == "none" {
				continue
			}
			for _, w := range strings.Fields(e.Source) {
				if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(w, p) }) {
					out[w] = append(out[w], f.Check+" "+f.Subject+" "+e.What)
				}
			}
		}
	}
	return out
}

// Every /sys path a finding quotes was in the capture it judged: a copy of
// /sys/class/infiniband alone quotes nothing outside it (no PCI device
// directory, no board_id or lid it does not hold), and a full tree only
// files it has of its RDMA devices, ports, PCI functions, netdevs and CPU
// isolation (what inventory records in their Sources). Expectations make
// the rate, link layer and port rules quote their files too.
func TestEvidenceQuotesPathsRead(t *testing.T) {
	opts := []Options{{}, {Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 800}, Layer: linkrate.InfiniBand, Source: "--expect-rate"}, ExpectPorts: []string{"mlx5_0"}}}
	for name, c := range testhost.Captures(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t, c.Root)
			prefixes := []string{"/sys/class/infiniband/", "/sys/bus/pci/devices/", "/sys/class/net/", "/sys/devices/system/cpu/"}
			if c.IBClassOnly {
				prefixes = []string{"/sys"}
			}
			checked := 0
			for _, o := range opts {
				for p, who := range quotedSys(Doctor([]*host.Snapshot{s}, o), prefixes...) {
					checked++
					file := filepath.Join(c.Root, p)
					if c.IBClassOnly {
						rest, ok := strings.CutPrefix(p, "/sys/class/infiniband")
						if !ok {
							t.Errorf("%s quotes %s, outside the copy of /sys/class/infiniband", who[0], p)
							continue
						}
						file = filepath.Join(c.Root, rest)
					}
					if strings.Contains(file, "*") {
						if m, _ := filepath.Glob(file); len(m) > 0 {
							continue
						}
					} else if _, err := os.Lstat(file); err == nil {
						continue
					}
					t.Errorf("%s quotes %s, which the capture does not hold", who[0], p)
				}
			}
			if c.IBClassOnly && checked == 0 {
				t.Error("no finding quotes a path: nothing was tested")
			}
		})
	}
}

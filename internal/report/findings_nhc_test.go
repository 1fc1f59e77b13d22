package report

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// --nhc prints one line per failure, so Slurm drains the node: a host
// with ConnectX functions but no RDMA device (mlx5_ib not loaded, the
// real capture), and a host with no RDMA at all when RDMA is required.
func TestNHCLines(t *testing.T) {
	caps := testhost.Captures(t)
	for _, c := range []struct {
		capture string
		opt     hostcheck.Options
		want    string
		n       int
	}{
		{"32intel64-2p8co2t+8ve", hostcheck.Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 100}, Source: "--expect-rate"}}, "ERROR: rdmalab: rdma.driver", 2},
		{"linux-amd64-8581cf3a529e5d8b97ea876eade2f60d", hostcheck.Options{RequireRDMA: true}, "ERROR: rdmalab: rdma.present", 1},
		{"linux-amd64-8581cf3a529e5d8b97ea876eade2f60d", hostcheck.Options{}, "", 0},
	} {
		s, err := inventory.Open(caps[c.capture].Root, inventory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fs := hostcheck.Doctor([]*host.Snapshot{s}, c.opt)
		NHC(&b, fs, rules.Verdict(rules.Doctor, fs))
		if got := strings.Count(b.String(), "ERROR: rdmalab:"); got != c.n || (c.n > 0 && strings.Count(b.String(), c.want) != c.n) {
			t.Errorf("%s %+v: %d lines, want %d × %q:\n%s", c.capture, c.opt, got, c.n, c.want, b.String())
		}
	}
}

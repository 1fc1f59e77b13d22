package plan

import (
	"testing"

	"github.com/rdmalab/rdmalab/examples"
)

// The planner pairs each GPU with host.Rails' answer, the one doctor and
// nccl env give (seed 000's GPU1 gets mlx5_2, the other card).
func TestPairsAreRails(t *testing.T) {
	for _, name := range []string{"seed000-epyc", "hgx-h200"} {
		s, err := examples.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		pairs := pairGPUs(s, newTopology(s))
		for i, r := range s.Rails() {
			if pairs[i].GPU != r.GPU || pairs[i].RDMA != r.RDMA {
				t.Errorf("%s: pair %d %s→%s, rail %s→%s", name, i, pairs[i].GPU, pairs[i].RDMA, r.GPU, r.RDMA)
			}
		}
	}
}

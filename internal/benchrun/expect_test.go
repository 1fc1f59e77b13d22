package benchrun

import (
	"testing"

	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// The issue 37 cases, through bench's own override: --expect-link-layer
// IB over a cluster file without a link section judges an InfiniBand link
// at its 4096-byte MTU (was TCP's 1500), and a cluster file's 25GbE is
// RoCE as --expect-rate 25GbE is (was TCP). The file's section is never
// rewritten.
func TestExpectFlagsOverTheClusterFile(t *testing.T) {
	c := testCluster(t, 2, "")
	o := Options{Layer: "IB"}
	got, err := o.expect(c)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Resolved(); l.Layer != linkrate.InfiniBand || l.MTUBytes != 4096 {
		t.Errorf("--expect-link-layer IB, no link section: %+v, want InfiniBand at MTU 4096", l)
	}
	if c.Link.Layer != "" || c.Resolved().Layer == linkrate.TCP {
		t.Errorf("the cluster file's link was rewritten or defaults to TCP: %+v", c.Link)
	}

	file := testCluster(t, 2, "link: {rate: 25GbE}\n")
	flag, err := (&Options{Rate: "25GbE"}).expect(testCluster(t, 2, ""))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := file.Resolved(), flag.Resolved(); a.Layer != linkrate.RoCE || a != b {
		t.Errorf("25GbE in the cluster file %+v, as a flag %+v: want the same RoCE link", a, b)
	}
}

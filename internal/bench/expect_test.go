package bench

import (
	"testing"

	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// A cluster file's 25GbE is RoCE as --expect-rate 25GbE is (issue 37; the
// flags' side is benchrun's TestExpectFlagsOverTheClusterFile): the report
// declares the layer the file resolves to.
func TestClusterLinkLayerResolved(t *testing.T) {
	file := testCluster(t, 2, "link: {rate: 25GbE}\n")
	if rep := Analyze(file, "perftest", "ib_write_bw", false, nil, nil, nil); rep.layer != string(linkrate.RoCE) {
		t.Errorf("the report's declared layer %q, want RoCE", rep.layer)
	}
}

package report

import (
	"bytes"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The fabric report on the recorded lab, and on a dump whose switches share
// one description (names carry GUID and LID), with its links listed.
func TestFabricGolden(t *testing.T) {
	s, err := examples.LoadFabric("qdr-lab")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fabriccheck.Run(s, fabriccheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Fabric(&b, s, fs)
	Findings(&b, fs, true)
	golden(t, "fabric-qdr-lab.txt", b.Bytes())

	top, err := fabric.ParseTopology(testhost.Degrade(testhost.EDRDump(1, 2, 2), 2, 1, "4xDDR"))
	if err != nil {
		t.Fatal(err)
	}
	d := fabric.FromTopology(top, "test dump")
	fs, err = fabriccheck.Run(d, fabriccheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	Fabric(&b, d, fs)
	FabricLinks(&b, d)
	Findings(&b, fs, false)
	golden(t, "fabric-shared-descriptions.txt", b.Bytes())

	r, err := judge.One("ibnetdiscover.txt", []byte(testhost.EDRDump(1, 1, 2)), judge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	Judge(&b, []judge.Result{r}, true)
	golden(t, "judge-ibnetdiscover.txt", b.Bytes())
}

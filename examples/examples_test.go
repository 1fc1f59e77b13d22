package examples

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

var update = flag.Bool("update", false, "rewrite the embedded example snapshots")

// The embedded snapshots are exactly what inventory makes of the seed trees.
func TestExamplesMatchSeedTrees(t *testing.T) {
	seeds := testhost.Seeds()
	if len(Names()) != len(seeds) && !*update {
		t.Errorf("examples %v, seed trees %d", Names(), len(seeds))
	}
	for name, mk := range seeds {
		fs, err := hostfs.New(testhost.WriteTree(t, mk()))
		if err != nil {
			t.Fatal(err)
		}
		s := inventory.Collect(fs, inventory.Options{Now: func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }})
		s.Source = "example:" + name
		var buf bytes.Buffer
		if err := s.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(name+".json", buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(name + ".json")
		if err != nil {
			t.Fatalf("%v (run go test ./examples -update)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s.json is stale: run go test ./examples -update", name)
		}
		if _, err := Load(name); err != nil {
			t.Error(err)
		}
	}
}

package examples

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"

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

// The recorded fabric is a real scan of testhost.QDRLab on ibsim: -update
// records it again; otherwise a fresh scan must find the same links and
// the same failures.
func TestFabricExampleRecorded(t *testing.T) {
	sim := testhost.StartIBSim(t, testhost.QDRLab)
	sim.StartSM("lab01 HCA-1", 0)
	sim.WaitUp(30 * time.Second)
	sim.Console(`PerformanceSet "lab02 HCA-1"[1] PortCounters.SymbolErrorCounter=37`)
	s, err := fabric.Scan(context.Background(), fabric.Exec{Dir: sim.Dir, Env: sim.Env(), Timeout: 30 * time.Second},
		fabric.ScanOptions{Now: func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	s.Source = "recorded: rdmalab fabric scan on ibsim (testhost.QDRLab), OpenSM on lab01"
	if *update {
		f, err := os.Create("fabric/qdr-lab.json")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := s.Encode(f); err != nil {
			t.Fatal(err)
		}
		return
	}
	rec, err := LoadFabric("qdr-lab")
	if err != nil {
		t.Fatal(err)
	}
	summary := func(s *fabric.Snapshot) []string {
		var out []string
		for _, l := range s.Links() {
			out = append(out, fmt.Sprintf("%s %s %s", s.Names().Link(l), l.A.Width, l.A.Speed))
		}
		fs, err := fabriccheck.Run(s, fabriccheck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Outcome != check.Pass {
				out = append(out, f.Check+" "+f.Subject)
			}
		}
		return out
	}
	if got, want := summary(s), summary(rec); !slices.Equal(got, want) {
		t.Errorf("a fresh scan differs from the recording (go test ./examples -update):\n%v\n%v", got, want)
	}
}

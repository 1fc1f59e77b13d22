package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/plan"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll(filepath.Dir(p), 0o755)
	}
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended run go test ./internal/report -update\n--- got:\n%s", name, got)
	}
}

func TestInventoryGolden(t *testing.T) {
	for _, name := range examples.Names() {
		t.Run(name, func(t *testing.T) {
			s, err := examples.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			Inventory(&buf, s)
			golden(t, "inventory-"+name+".txt", buf.Bytes())
		})
	}
}

func TestFindingsGolden(t *testing.T) {
	s, err := examples.Load("seed000-epyc")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	Findings(&buf, hostcheck.Run(s, hostcheck.Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 100}, Source: "--expect-rate"}}), true)
	golden(t, "doctor-seed000-epyc.txt", buf.Bytes())
}

func TestPlanGolden(t *testing.T) {
	for _, c := range []struct {
		host string
		vms  int
	}{{"seed000-epyc", 2}, {"hgx-h200", 8}} {
		s, err := examples.Load(c.host)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Make(s, plan.Request{VMs: c.vms, MemoryBytes: 64 << 30})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		Plan(&buf, p)
		golden(t, fmt.Sprintf("plan-%s-%d.txt", c.host, c.vms), buf.Bytes())
	}
}

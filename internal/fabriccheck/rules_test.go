package fabriccheck

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

var update = flag.Bool("update", false, "rewrite docs/fabric-checks.md")

func lab(t *testing.T) *fabric.Snapshot {
	t.Helper()
	s, err := examples.LoadFabric("qdr-lab")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rules that the simulator cannot stage on demand, on the recorded lab.
func TestRulesOnRecordedLab(t *testing.T) {
	t.Run("two masters", func(t *testing.T) {
		s := lab(t)
		s.SMs = append(s.SMs, fabric.SM{LID: 3, GUID: 0x100002, Priority: 1, State: "MASTER"})
		f := failing(mustRun(t, s, Options{}), check.Fail)
		wantOne(t, f, "fabric.sm", "2 subnet managers claim MASTER")
		if w := failing(mustRun(t, s, Options{}), check.Warn); len(w["fabric.sm.priority-clash"]) != 0 {
			t.Error("distinct priorities are not a clash")
		}
	})
	t.Run("expected rate", func(t *testing.T) {
		f := failing(mustRun(t, lab(t), Options{ExpectRate: rateOf(t, "100")}), check.Fail)
		wantOne(t, f, "fabric.link.rate", "lab03 HCA-1 port 1 ↔ ib-sw01 port 3: runs at 12X DDR (60 Gb/s), below the expected 100 Gb/s")
		if f := failing(mustRun(t, lab(t), Options{ExpectRate: rateOf(t, "60")}), check.Fail); len(f["fabric.link.rate"]) != 0 {
			t.Error("60 Gb/s links meet a 60 Gb/s expectation")
		}
	})
	t.Run("threshold override", func(t *testing.T) {
		if f := failing(mustRun(t, lab(t), Options{Thresholds: map[string]uint64{"SymbolErrorCounter": 100}}), check.Fail); len(f["fabric.port.errors"]) != 0 {
			t.Errorf("37 symbol errors under a threshold of 100: %+v", f["fabric.port.errors"])
		}
	})
	t.Run("YAML plan: missing node, extra link, all present", func(t *testing.T) {
		plan, err := fabric.ParseCabling([]byte(`links:
  - {a: {node: lab01 HCA-1, port: 1}, b: {node: ib-sw01, port: 1}}
  - {a: {node: lab02 HCA-1, port: 1}, b: {node: ib-sw01, port: 2}}
  - {a: {node: lab04 HCA-1, port: 1}, b: {node: ib-sw01, port: 4}}
  - {a: {node: lab05 HCA-1, port: 1}, b: {node: ib-sw02, port: 1}}
`))
		if err != nil {
			t.Fatal(err)
		}
		fs := mustRun(t, lab(t), Options{Plan: plan})
		// lab04's switch port is there and down: the cable or the host.
		wantOne(t, failing(fs, check.Fail), "fabric.port.down", "lab04 HCA-1 port 1 ↔ ib-sw01 port 4: planned, but not linked; lab04 HCA-1 is not reachable")
		wantOne(t, failing(fs, check.Fail), "fabric.topology.missing", "planned, but lab05 HCA-1 and ib-sw02 not found")
		wantOne(t, failing(fs, check.Warn), "fabric.topology.extra", "lab03 HCA-1 port 1 ↔ ib-sw01 port 3: linked, but not in the plan")
	})
}

// docs/fabric-checks.md is generated from Catalog; every rule's id is in it.
func TestCatalogDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Fabric checks\n\nGenerated from `internal/fabriccheck` (`go test ./internal/fabriccheck -update`). " +
		"`rdmalab fabric check` runs them all on a live scan or a snapshot; `rdmalab judge` runs those a saved tool output can answer. " +
		"A rule whose tool was never run (a saved output of another tool) says nothing; a rule whose tool ran and failed says unknown, never pass.\n\n")
	for _, e := range Catalog {
		if e.Needs == "" || e.UnknownWhen == "" {
			t.Errorf("%s: the catalog must say what the rule needs to be sure and what makes it unknown", e.ID)
		}
		fmt.Fprintf(&b, "## `%s`: %s\n\n%s.\n\n- Source: %s\n- Needs, to be sure: %s\n- Unknown when: %s\n- Fix: %s\n\n", e.ID, e.Title, e.Why, e.Source, e.Needs, e.UnknownWhen, e.Fix)
	}
	const path = "../../docs/fabric-checks.md"
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != b.String() {
		t.Errorf("%s is out of date: go test ./internal/fabriccheck -update (%v)", path, err)
	}
	src, _ := os.ReadFile("rules.go")
	diff, _ := os.ReadFile("diff.go")
	links, _ := os.ReadFile("links.go")
	for _, e := range Catalog {
		if strings.Count(string(src)+string(diff)+string(links), `"`+e.ID+`"`) < 2 {
			t.Errorf("catalog entry %s is never reported", e.ID)
		}
	}
}

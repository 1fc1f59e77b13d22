package fabriccheck

import (
	"os"
	"regexp"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

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
		f := failing(mustRun(t, lab(t), Options{Expect: expectOf(t, "100")}), check.Fail)
		wantOne(t, f, "fabric.link.rate", "lab03 HCA-1 port 1 ↔ ib-sw01 port 3: runs at 12X DDR (60 Gb/s), below the expected 100 Gb/s")
		if f := failing(mustRun(t, lab(t), Options{Expect: expectOf(t, "60")}), check.Fail); len(f["fabric.link.rate"]) != 0 {
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

// Every catalog entry is reported somewhere: a finding is made through
// its entry (find(entry, …)) besides its declaration and the Catalog list
// (docs/checks.md, made from the catalogs, documents them: internal/cli
// TestChecksDoc).
func TestCatalogReported(t *testing.T) {
	var all string
	for _, f := range []string{"rules.go", "diff.go", "links.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all += string(b)
	}
	decl := regexp.MustCompile(`(\w+)\s*=\s*check\.Entry\{ID: "([^"]+)"`)
	named := map[string]bool{}
	for _, m := range decl.FindAllStringSubmatch(all, -1) {
		named[m[2]] = true
		if uses := regexp.MustCompile(`\b`+m[1]+`\b`).FindAllStringIndex(all, -1); len(uses) < 3 {
			t.Errorf("catalog entry %s (%s) is never reported", m[2], m[1])
		}
	}
	for _, e := range Catalog {
		if !named[e.ID] {
			t.Errorf("catalog entry %s has no name of its own to report through", e.ID)
		}
	}
}

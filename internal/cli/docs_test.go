package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// docs/architecture.md names every package under internal/: the house
// plan stays true when a room is added.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			if d != nil && d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				name := "internal" + strings.TrimPrefix(filepath.ToSlash(p), "..") + "/"
				if !strings.Contains(doc, name) {
					t.Errorf("docs/architecture.md does not name %s", name)
				}
				break
			}
		}
		return nil
	})
}

// Every command's --output json is the one envelope (docs/json.md): kind,
// schema_version, summary, findings, then the payload; docs/json.md names
// every kind.
func TestEveryJSONOutputIsTheEnvelope(t *testing.T) {
	shared := testhost.SharedTestdata(t)
	for kind, args := range map[string][]string{
		"host-snapshot": {"inventory", "--snapshot", "example:r730-qdr"},
		"doctor":        {"doctor", "--snapshot", "example:r730-qdr"},
		"plan":          {"plan", "vms", "--snapshot", "example:seed000-epyc", "--vms", "2"},
		"fabric-check":  {"fabric", "check", "--fabric", "example:qdr-lab"},
		"judge":         {"judge", filepath.Join(shared, "ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt")},
		"nccl":          {"nccl", "env", "--snapshot", "example:hgx-h200"},
		"design":        {"design", "transfer", "--size", "280GB", "--rate", "25GbE"},
		"schedule":      {"bench", "schedule", "--fabric", "../route/testdata/fattree-2x4x4.fabric.json", "--routes", "../route/testdata/fattree-2x4x4-updn.dump_fts.txt"},
		"compare":       {"compare", "../compare/testdata/seed000-optimised.jsonl", "../compare/testdata/seed000-wrong-numa.jsonl"},
		"report":        {"report", "example:qdr-lab", filepath.Join(shared, "ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt")},
	} {
		out, errOut, code := run(t, append(args, "--output", "json")...)
		var doc struct {
			Kind          string           `json:"kind"`
			SchemaVersion int              `json:"schema_version"`
			Summary       *json.RawMessage `json:"summary"`
			Findings      *json.RawMessage `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != kind || doc.SchemaVersion != 1 || doc.Summary == nil || doc.Findings == nil {
			t.Errorf("%v: exit %d, kind %q, err %v\n%s", args, code, doc.Kind, err, errOut)
		}
	}
	b, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host-snapshot", "doctor", "fabric-snapshot", "fabric-check", "plan", "bench", "judge", "nccl", "design", "schedule", "compare", "report"} {
		if !strings.Contains(string(b), "`"+k+"`") {
			t.Errorf("docs/json.md does not describe kind %s", k)
		}
	}
}

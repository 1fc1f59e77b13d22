package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// judge --help lists every format of the registry, from the registry.
func TestJudgeHelpListsEveryFormat(t *testing.T) {
	out, _, code := run(t, "judge", "--help", "--width", "1000")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range formats.Formats {
		if !strings.Contains(out, "  "+f.Name+" ") || !strings.Contains(out, f.Help) {
			t.Errorf("judge --help does not list %q", f.Name)
		}
	}
}

// judge FILE, report FILE and fabric check --fabric FILE take the same
// saved outputs: a saved iblinkinfo is a fabric for fabric check, and its
// verdict there is judge's; report judges saved outputs once and carries
// the verdict in -o json; a saved host output is refused by fabric check
// naming what it is.
func TestSavedOutputsEverywhere(t *testing.T) {
	shared := testhost.SharedTestdata(t)
	links := filepath.Join(shared, "ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt")
	ibstat := filepath.Join(shared, "ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt")

	_, _, judgeCode := run(t, "judge", links)
	out, errOut, code := run(t, "fabric", "check", "--fabric", links)
	if code != judgeCode || !strings.Contains(out, "fabric.link.width") {
		t.Errorf("fabric check --fabric iblinkinfo: exit %d (judge %d)\n%s%s", code, judgeCode, out, errOut)
	}
	if _, errOut, code := run(t, "fabric", "check", "--fabric", ibstat); code != 2 || !strings.Contains(errOut, "a saved ibstat output, not a fabric") {
		t.Errorf("fabric check --fabric ibstat: exit %d: %s", code, errOut)
	}

	out, errOut, code = run(t, "report", "-o", "json", ibstat, links)
	var doc struct {
		Kind    string `json:"kind"`
		Verdict struct {
			Status, Reason string
		} `json:"verdict"`
		Findings []struct{ Check, Host, Subject, Outcome string } `json:"findings"`
		Payload  struct{ Derived []string }                       `json:"payload"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	// mlx4_0 port 2 is a spare beside its Active sibling; the two-node
	// iblinkinfo's links have no basis to be judged on (no rate given, no
	// known device model, no peer majority): unproven, exit 3, in the
	// envelope as in the exit code.
	if doc.Kind != "report" || doc.Verdict.Status != "unproven" || code != 3 || !strings.Contains(doc.Verdict.Reason, "fabric.link.width") {
		t.Errorf("kind %q, verdict %+v, exit %d", doc.Kind, doc.Verdict, code)
	}
	if len(doc.Payload.Derived) != 2 || !strings.Contains(doc.Payload.Derived[0], "a saved ibstat output") || !strings.Contains(doc.Payload.Derived[1], "a saved iblinkinfo output") {
		t.Errorf("derived %q", doc.Payload.Derived)
	}
	// Each saved output judged once.
	n := 0
	for _, f := range doc.Findings {
		if f.Check == "fabric.link.width" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d fabric.link.width findings, want the one of judge", n)
	}
}

package htmlreport

import (
	"strings"
	"testing"
)

// Given two results logs, the report compares them (as rdmalab compare
// does): seed 000's optimised run against its wrong-NUMA run, every
// metric worse, in a section of its own, self-contained.
func TestReportComparesTwoRuns(t *testing.T) {
	page, v := render(t, "../../compare/testdata/seed000-optimised.jsonl", "../../compare/testdata/seed000-wrong-numa.jsonl")
	if v.Compare == nil {
		t.Fatal("not compared")
	}
	for _, want := range []string{`<section id="compare">`, `<a href="#compare">Compare</a>`, "1.44 µs", "1.62 µs", "&#43;13%", "&#43;29%", "&#43;53%", `<span class="badge fail">worse</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, re := range external {
		if re.MatchString(page) {
			t.Errorf("external reference %s", re)
		}
	}
	// One results log: nothing to compare, no section.
	page, v = render(t, "../../compare/testdata/seed000-optimised.jsonl")
	if v.Compare != nil || strings.Contains(page, `id="compare"`) {
		t.Error("one run compared")
	}
}

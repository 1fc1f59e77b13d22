package exporter

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmalab/rdmalab/internal/counters"
)

const docFile = "../../docs/exporter.md"

// counterTable is the generated part of docs/exporter.md.
func counterTable() string {
	var b strings.Builder
	b.WriteString("| sysfs file | PMA name | host metric | fabric metric | kind | scale |\n|---|---|---|---|---|---|\n")
	kinds := map[counters.Kind]string{counters.Data: "data", counters.Packets: "packets", counters.Error: "error", counters.Congestion: "congestion", counters.Other: "other"}
	for _, c := range counters.Table {
		file := "counters/" + c.Sysfs
		if c.Family == counters.HWCounters {
			file = "hw_counters/" + c.Sysfs
		}
		pma, fab := "", ""
		if c.PMA != "" {
			pma, fab = c.PMA, "`rdmalab_fabric_"+c.Metric+"`"
		}
		scale := ""
		if c.Scale != 1 {
			scale = fmt.Sprintf("×%g", c.Scale)
		}
		fmt.Fprintf(&b, "| %s | %s | `rdmalab_infiniband_%s` | %s | %s | %s |\n", file, pma, c.Metric, fab, kinds[c.Kind], scale)
	}
	return b.String()
}

// docs/exporter.md: its counter table is generated from internal/counters
// (go test -update rewrites it), its example is the R730 golden exposition
// and parses and lints, and it names every metric the exporter emits and
// no other.
func TestDocs(t *testing.T) {
	b, err := os.ReadFile(docFile)
	must(t, err)
	doc := string(b)
	golden, err := os.ReadFile("testdata/seed-r730-qdr.prom")
	must(t, err)
	re := regexp.MustCompile(`(?s)(<!-- counters:begin -->\n).*?(<!-- counters:end -->)`)
	want := re.ReplaceAllString(doc, "${1}"+strings.ReplaceAll(counterTable(), "$", "$$")+"${2}")
	want = regexp.MustCompile("(?s)(```prometheus\n).*?(```)").ReplaceAllString(want, "${1}"+strings.ReplaceAll(string(golden), "$", "$$")+"${2}")
	if *update {
		must(t, os.WriteFile(docFile, []byte(want), 0o644))
		doc = want
	} else if want != doc {
		t.Errorf("%s: the counter table or the example is stale (go test ./internal/exporter -run TestDocs -update)", docFile)
	}

	ex := regexp.MustCompile("(?s)```prometheus\n(.*?)```").FindStringSubmatch(doc)
	if ex == nil {
		t.Fatal("no ```prometheus example")
	}
	if ex[1] != string(golden) {
		t.Errorf("the example is not testdata/seed-r730-qdr.prom")
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(ex[1])); err != nil {
		t.Errorf("example: %v", err)
	}
	lint(t, ex[1])

	names := MetricNames()
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("%s is not documented", n)
		}
	}
	for _, m := range regexp.MustCompile("`(rdmalab_[a-z0-9_]*[a-z0-9])`").FindAllStringSubmatch(doc, -1) {
		if _, ok := slices.BinarySearch(names, m[1]); !ok {
			t.Errorf("the doc names %s, which the exporter does not emit", m[1])
		}
	}
}

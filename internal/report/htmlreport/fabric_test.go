package htmlreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cover run's page draws every cable of the fabric once, coloured by what
// crossed it, with exactly the named cable marked; golden.
func TestFabricDrawingGolden(t *testing.T) {
	page, v := render(t, "../testdata/bench-cover/cover.json")
	if len(v.Benches) != 1 || v.Benches[0].Cover == nil {
		t.Fatalf("no cover in the bench view")
	}
	svg := strings.Split(page, `<svg class="fabric"`)
	if len(svg) != 2 {
		t.Fatalf("%d fabric drawings, want 1", len(svg)-1)
	}
	body := svg[1][:strings.Index(svg[1], "</svg>")]
	// FatTree(2,4,4): 16 host cables and 8 leaf-to-spine cables
	if n := strings.Count(body, `<line class="cable `); n != 24 {
		t.Errorf("%d cables drawn, want 24", n)
	}
	if n := strings.Count(body, `<line class="cable named"`); n != 1 || !strings.Contains(body, "<title>leaf02 port 5 ↔ spine01 port 2: ") {
		t.Errorf("%d named cables, or not leaf02 port 5 ↔ spine01 port 2", n)
	}
	if !strings.Contains(page, "<b>leaf02 port 5 ↔ spine01 port 2</b> (confirmed, confidence high") {
		t.Error("the named cable is not said in words above the drawing")
	}
	p := filepath.Join("testdata", "cover-bench.html")
	if *update {
		if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report/htmlreport -update)", err)
	}
	if page != string(want) {
		t.Errorf("the page differs from %s; if intended, run go test ./internal/report/htmlreport -update", p)
	}
}

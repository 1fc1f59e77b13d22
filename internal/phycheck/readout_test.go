package phycheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// The readout a report shows beside a cable, from the CX7 400GbE mlxlink
// capture: with lane 0's raw errors raised to 993017647 the worst-lane
// line names lane 0 and warns; the BER lines carry their window and limit,
// the module's Rx power its worst channel against the module's own range.
// The healthy capture's readout has nothing but passes (and the lines no
// rule judges).
func TestReadout(t *testing.T) {
	b, _ := capture(t, "mlxlink", "cx7-fw28.47_400GbE-DR4")
	line := func(ls []Line, what string) Line {
		t.Helper()
		i := slices.IndexFunc(ls, func(l Line) bool { return strings.HasPrefix(l.What, what) })
		if i < 0 {
			t.Fatalf("no %q line in %+v", what, ls)
		}
		return ls[i]
	}
	bad := strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)
	ps, err := phy.Named([]byte(bad), "/var/lib/rdmalab/phy/mlx5_0-1.mlxlink.json", "n01")
	if err != nil || len(ps) != 1 {
		t.Fatal(ps, err)
	}
	ls := Readout(ps[0])
	if l := line(ls, "worst lane"); l.Outcome != check.Warn || l.Check != IDLane || !strings.HasPrefix(l.Value, "lane 0: 993017647") || !strings.Contains(l.Window, "2718.1 min") {
		t.Errorf("worst lane: %+v", l)
	}
	if l := line(ls, "effective BER"); l.Outcome != check.Pass || l.Limit != "< 1e-12" || !strings.Contains(l.Value, "no errors counted (15E-255)") || !strings.Contains(l.Window, "since the counters were last cleared") {
		t.Errorf("effective BER: %+v", l)
	}
	if l := line(ls, "raw BER"); l.Outcome != check.Pass || !strings.Contains(l.Limit, "2.4e-04") || !strings.Contains(l.Value, "worst lane 1: 1E-9") {
		t.Errorf("raw BER: %+v", l)
	}
	if l := line(ls, "module rx power"); l.Outcome != check.Pass || !strings.Contains(l.What, "channel 4") || !strings.Contains(l.Limit, "-9.914..6.999") {
		t.Errorf("rx power: %+v", l)
	}
	if l := line(ls, "link drops"); l.Outcome != check.Pass || l.Value != "0 link down, 0 recovery" {
		t.Errorf("link drops: %+v", l)
	}

	healthy, err := phy.Named(b, "/var/lib/rdmalab/phy/mlx5_0-1.mlxlink.json", "n01")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range Readout(healthy[0]) {
		if l.Outcome != check.Pass && l.Outcome != "" {
			t.Errorf("healthy capture: %+v", l)
		}
	}
}

package counters

import (
	"regexp"
	"testing"
)

func TestTable(t *testing.T) {
	metric := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]bool{}
	for _, c := range Table {
		key := c.Sysfs
		if c.Family == HWCounters {
			key = "hw/" + key
		}
		if seen[key] || seen["m/"+c.Metric] {
			t.Errorf("%s listed twice", c.Sysfs)
		}
		seen[key], seen["m/"+c.Metric] = true, true
		if !metric.MatchString(c.Metric) || c.Help == "" {
			t.Errorf("%s: metric %q help %q", c.Sysfs, c.Metric, c.Help)
		}
		// Prometheus counters end in _total; bytes carry their unit.
		if len(c.Metric) < 6 || c.Metric[len(c.Metric)-6:] != "_total" {
			t.Errorf("%s: metric %q does not end in _total", c.Sysfs, c.Metric)
		}
		if c.Kind == Data && (c.Scale != 4 || c.Unit != "bytes") {
			t.Errorf("%s: data octets count 32-bit words: scale 4, bytes", c.Sysfs)
		}
	}
	if c, ok := ByPMA("SymbolErrorCounter"); !ok || c.Max() != 0xffff || !c.Saturated(65535) || c.Saturated(65534) {
		t.Errorf("SymbolErrorCounter: %+v", c)
	}
	if c, ok := BySysfs(PortCounters, "port_xmit_data"); !ok || c.Saturated(1<<63) {
		t.Errorf("64-bit data counters never saturate: %+v", c)
	}
	if len(Select(PortCounters, Error)) != 12 {
		t.Errorf("PortCounters errors: %d", len(Select(PortCounters, Error)))
	}
}

package check

import "testing"

// The one verdict rule: a failure fails; an unknown on a deciding check,
// or nothing passed, is unproven; an unknown elsewhere decides nothing.
func TestDecide(t *testing.T) {
	decides := func(id string) bool { return id == "port.state" }
	answer := func(f Finding) string { return "give --expect-ports " + f.Subject }
	f := func(id string, o Outcome) Finding { return Finding{Check: id, Outcome: o, Subject: "mlx5_0 port 1"} }
	for _, c := range []struct {
		name   string
		fs     []Finding
		want   Status
		answer string
	}{
		{"nothing", nil, Unproven, ""},
		{"warnings only", []Finding{f("x", Warn)}, Unproven, ""},
		{"pass", []Finding{f("x", Pass)}, Healthy, ""},
		{"pass and a non-deciding unknown", []Finding{f("x", Pass), f("memlock", Unknown)}, Healthy, ""},
		{"deciding unknown", []Finding{f("x", Pass), f("port.state", Unknown)}, Unproven, "give --expect-ports mlx5_0 port 1"},
		{"fail beats unknown", []Finding{f("port.state", Unknown), f("y", Fail)}, Failing, ""},
	} {
		v := Decide("q?", c.fs, decides, answer)
		if v.Status != c.want || v.Answer != c.answer || v.Question != "q?" || v.Reason == "" {
			t.Errorf("%s: %+v, want %s with answer %q", c.name, v, c.want, c.answer)
		}
	}
}

package fabric

import (
	"strings"
	"testing"
)

// ibqueryerrors' per-port MAD failures (as ibsim's dropped MADs print
// them) are that port's; a failure of the whole run still fails it.
func TestCheckQueryErrorsPerPort(t *testing.T) {
	summary := "## Summary: 3 nodes checked, 0 bad nodes found\n"
	for _, c := range []struct {
		name, stderr string
		wantLID      int
		wantPort     int
		wantErr      bool
	}{
		{"port line", "ibwarn: [1] mad_rpc: _do_madrpc failed; dport (Lid 5)\nibwarn: [1] print_errors: IB_GSI_PORT_COUNTERS query failed on node0002, Lid 5 port 1\n", 5, 1, false},
		{"lid only", "ibwarn: [1] _do_madrpc: recv failed: Connection timed out\nibwarn: [1] mad_rpc: _do_madrpc failed; dport (Lid 147)\n", 147, 0, false},
		{"no SA", "ibwarn: [1] mad_rpc: _do_madrpc failed; dport (Lid 147)\nQuery SA failed\n", 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fails, err := CheckQueryErrors(Output{Stdout: []byte(summary), Stderr: []byte(c.stderr)}, nil)
			if c.wantErr {
				if err == nil {
					t.Fatalf("a failed run passed as per-port failures: %+v", fails)
				}
				return
			}
			if err != nil || len(fails) != 1 || fails[0].LID != c.wantLID || fails[0].Port != c.wantPort || !strings.Contains(strings.Join(fails[0].Lines, ";"), "_do_madrpc failed") {
				t.Fatalf("got %+v, %v", fails, err)
			}
		})
	}
	s := &Snapshot{Ports: []Port{{NodeDesc: "sw", LID: 147, Num: 1, Counters: map[string]uint64{"SymbolErrorCounter": 1}}, {NodeDesc: "sw", LID: 147, Num: 2}, {NodeDesc: "ca", LID: 3, Num: 1, Counters: map[string]uint64{"PortRcvErrors": 2}}}}
	s.markPMAFailures([]PMAFailure{{LID: 147, Lines: []string{"_do_madrpc failed; dport (Lid 147)"}}})
	if s.Ports[0].CounterError == "" || s.Ports[1].CounterError == "" || s.Ports[0].Counters != nil || s.Ports[2].CounterError != "" || s.Ports[2].Counters == nil {
		t.Errorf("a LID-only failure must mark that LID's ports alone: %+v", s.Ports)
	}
}

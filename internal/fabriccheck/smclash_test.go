package fabriccheck

import (
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A second subnet manager with the master's priority is a warning, read
// from the master's own list of SMs (saquery SMIR).
//
// The master learns of the standby at a heavy sweep, by asking the
// standby's port for its SMInfo. Under ibsim that answer is sometimes
// never delivered, about one fabric in ten here (the standby's restart
// does not mend it: the master's side is stuck), however long one waits.
// That is the simulator's race, not OpenSM's behaviour, so a fabric whose
// master has not listed the standby within 30 s is replaced by a fresh
// one, three fabrics at most; the failure says what each SM printed.
func TestSMPriorityClash(t *testing.T) {
	var (
		w   map[string][]check.Finding
		s   *fabric.Snapshot
		sim *testhost.IBSim
	)
	for attempt := 1; attempt <= 3; attempt++ {
		if sim != nil {
			sim.StopSMs()
		}
		sim = testhost.StartIBSim(t, testhost.FatTree(2, 2, 3))
		sim.StartSM("node0001", 0) // the lowest GUID: it stays master when the second SM comes
		sim.WaitUp(60 * time.Second)
		sim.StartSM("node0005", 0)
		deadline := time.Now().Add(30 * time.Second)
		for {
			s = scan(t, sim, 0)
			w = failing(mustRun(t, s, Options{}), check.Warn)
			if len(w["fabric.sm.priority-clash"]) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if len(w["fabric.sm.priority-clash"]) > 0 {
			break
		}
		t.Logf("fabric %d: the master did not list the second SM within 30 s; SMs seen: %+v", attempt, s.SMs)
	}
	if len(w["fabric.sm.priority-clash"]) == 0 {
		t.Fatalf("3 fabrics: the master never listed the second SM; SMs seen: %+v (saquery: %q)\nfirst SM:\n%s\nsecond SM:\n%s",
			s.SMs, s.SMRecordsError, sim.SMLog(0), sim.SMLog(1))
	}
	wantAt(t, w, "fabric.sm.priority-clash", "subnet", "2 subnet managers share priority 0")
	// The healthy twin: one SM, no clash.
	if c := failing(mustRun(t, scanOne(t), Options{}), check.Warn)["fabric.sm.priority-clash"]; len(c) > 0 {
		t.Errorf("one SM, yet a clash: %+v", c)
	}
}

// scanOne scans a fresh fabric with one SM.
func scanOne(t *testing.T) *fabric.Snapshot {
	sim := testhost.StartIBSim(t, testhost.FatTree(2, 2, 3))
	sim.StartSM("node0001", 0)
	sim.WaitUp(60 * time.Second)
	defer sim.StopSMs()
	return scan(t, sim, 0)
}

package slurmrun

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/slurm"
)

// Recorded from Debian's Slurm 22.05 (the cluster the integration test runs).
const idleLine = `NodeName=node2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.52 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8 OS=Linux 6.1.0 #1 SMP RealMemory=500 AllocMem=0 FreeMem=22000 Sockets=1 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=lab BootTime=2026-11-23T01:00:00 SlurmdStartTime=2026-11-23T01:44:10 LastBusyTime=2026-11-23T01:44:10 CfgTRES=cpu=1,mem=500M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s`

// fakeSlurm records scontrol calls; it stands in for slurmctld only in
// these unit tests of the flow (the integration test uses real Slurm).
type fakeSlurm struct {
	line  string
	calls []string
	err   error
}

func (f *fakeSlurm) Run(_ context.Context, name string, args ...string) (string, error) {
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	if f.err != nil {
		return "", f.err
	}
	return f.line, nil
}

func TestHealthFlow(t *testing.T) {
	ctx := context.Background()
	f := &fakeSlurm{line: idleLine}
	hang := func(ctx context.Context, s *Stage) []check.Finding {
		s.Enter("port.errors")
		<-ctx.Done()
		return nil
	}
	start := time.Now()
	res, err := Health(ctx, f, HealthOptions{Node: "node2", TimeLimit: 200 * time.Millisecond}, hang)
	if err != nil || res.TimedOutIn != "port.errors" || res.Decision.Action != slurm.DrainNode || !res.Applied || time.Since(start) > 2*time.Second {
		t.Errorf("overrun: %+v %v after %s", res, err, time.Since(start))
	}
	if last := f.calls[len(f.calls)-1]; !strings.Contains(last, "State=DRAIN Reason=rdmalab: health check timed out in port.errors") {
		t.Errorf("drain call %q", last)
	}
	// A controller that does not answer: nothing changed, an error.
	f = &fakeSlurm{err: fmt.Errorf("scontrol: %w", ErrControllerDown)}
	if _, err := Health(ctx, f, HealthOptions{Node: "node2"}, hang); err == nil || len(f.calls) != 1 {
		t.Errorf("controller down: %v, calls %v", err, f.calls)
	}
}

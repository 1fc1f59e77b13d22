package cli

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// children finds a live child through the per-thread children files and
// through the stat walk alike, and not once it has exited (a zombie).
func TestChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if got := children(os.Getpid()); !slices.Contains(got, pid) {
		t.Errorf("children = %v, want %d among them", got, pid)
	}
	if got := childrenByStat(os.Getpid()); !slices.Contains(got, pid) {
		t.Errorf("childrenByStat = %v, want %d among them", got, pid)
	}
	_ = cmd.Process.Kill()
	// Not reaped yet: a zombie, which neither lists.
	for range 100 {
		if isZombie(pid) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := children(os.Getpid()); slices.Contains(got, pid) {
		t.Errorf("children = %v lists the exited %d", got, pid)
	}
	_ = cmd.Wait()
}

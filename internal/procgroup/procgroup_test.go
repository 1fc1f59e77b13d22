package procgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command whose child outlives it is ended whole at the deadline: the
// shell and its sleeping child both, within the wait delay.
func TestCommandEndsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cmd := Command(ctx, 0, 0, "sh", "-c", "sleep 30 & echo $! >"+pidFile+"; wait")
	start := time.Now()
	err := cmd.Run()
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("run: %v after %s", err, time.Since(start))
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("ctx: %v", ctx.Err())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// the child was killed with the group: poll until it is reaped by init
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived its group's kill", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop with grace sends TERM first: a command that ends on TERM ends
// before the KILL.
func TestStopTermsFirst(t *testing.T) {
	cmd := Command(context.Background(), 0, 0, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Stop(cmd.Process.Pid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee interface{ Sys() any }
	if !errors.As(err, &ee) {
		t.Fatalf("wait: %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGTERM {
		t.Errorf("ended by %v, want SIGTERM", ee.Sys())
	}
}

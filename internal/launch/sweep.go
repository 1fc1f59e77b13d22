package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ControlPersist is how long an idle control master outlives its last
// session: short, so the masters of a run killed with SIGKILL (nobody
// left to close them) end by themselves within it, and a fleet's masters
// are those of the nodes in use, not every node ever reached. Every
// session of the run refreshes it.
const ControlPersist = 30 * time.Second

// ownerFile in a control directory names the run owning it: its pid and
// the process's start time (so a reused pid is not taken for it).
const ownerFile = "rdmalab-owner"

// MarkControlDir records this process as the owner of dir's control
// sockets, for SweepControlDirs of a later run.
func MarkControlDir(dir string) error {
	st, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %s\n", os.Getpid(), st), 0o600)
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// the command (field 2) may hold spaces: count from its closing paren
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected form", pid)
	}
	return f[19], nil
}

// alive: the owner recorded in dir still runs (same pid, same start).
func alive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return true // not ours to judge
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return true
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return true
	}
	st, err := startTime(pid)
	return err == nil && st == f[1]
}

// SweepControlDirs ends the control masters of dead runs: every directory
// in parent whose name starts with prefix, that a run marked
// (MarkControlDir) and whose run is gone (killed with SIGKILL, say), has
// each socket's master told to exit (ssh -O exit) and is removed. It
// returns the sockets whose masters were told. Directories of live runs,
// and any not marked, are left alone.
func SweepControlDirs(ctx context.Context, parent, prefix string) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var swept []string
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, ownerFile)); err != nil || alive(dir) {
			continue
		}
		socks, _ := os.ReadDir(dir)
		for _, s := range socks {
			if s.Type()&os.ModeSocket == 0 {
				continue
			}
			sock := filepath.Join(dir, s.Name())
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			// -S names the master's socket; the host is only ssh's syntax
			_ = exec.CommandContext(cctx, "ssh", exitArgs(sock)...).Run()
			cancel()
			swept = append(swept, sock)
		}
		os.RemoveAll(dir)
	}
	return swept
}

func exitArgs(sock string) []string {
	return []string{"-o", "BatchMode=yes", "-S", sock, "-O", "exit", "rdmalab-stale-master"}
}

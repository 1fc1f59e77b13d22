package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// adoptOrphans makes rdmalab the reaper of everything it starts: a
// process whose parent dies (ssh sessions of a killed mpirun, a rank whose
// launcher is gone) is re-parented to rdmalab instead of init, so the
// returned func can end every one of them when rdmalab ends. Not in tests,
// where Main runs inside a test binary whose other children (simulators,
// daemons) are not the command's.
func adoptOrphans() (killAll func()) {
	if testing.Testing() {
		return func() {}
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return func() {}
	}
	return func() {
		// A killed child's own children come to us next: a few rounds.
		for range 5 {
			kids := children(os.Getpid())
			if len(kids) == 0 {
				return
			}
			for _, pid := range kids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// isService reports the exporter, which runs for days: orphans adopted
// there would pile up as zombies (os/exec reaps only its own children), and
// its scans bound their tools themselves.
func isService(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a == "exporter"
		}
	}
	return false
}

// children lists the live processes (not zombies: they are gone, and
// init reaps them once rdmalab exits) whose parent is pid. The kernel
// keeps each thread's children in /proc/PID/task/TID/children, a handful
// of small reads on every exit; only a kernel without that file costs a
// walk of every process's stat.
func children(pid int) []int {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	// The main thread lives as long as the process: no file there is a
	// kernel without them (a thread that has just exited is only skipped).
	if _, err := os.Stat(fmt.Sprintf("%s/%d/children", dir, pid)); err != nil {
		return childrenByStat(pid)
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return childrenByStat(pid)
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && !isZombie(n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	f := statFields(b)
	return len(f) < 1 || string(f[0]) == "Z"
}

// statFields is what follows "pid (comm) " in a stat file: comm may hold
// spaces and parentheses.
func statFields(b []byte) [][]byte {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(b[i+1:])
}

func childrenByStat(pid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := statFields(b)
		if len(f) < 2 || string(f[0]) == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(string(f[1])); ppid == pid {
			if n, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

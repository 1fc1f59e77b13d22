package cli

import (
	"bytes"
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
// init reaps them once rdmalab exits) whose parent is pid.
func children(pid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
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

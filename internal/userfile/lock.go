package userfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockedError is a file another process holds locked: a second run must
// not write a results log the first is writing.
type LockedError struct {
	Path string
	PID  int // 0 when the holder could not be found
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = fmt.Sprintf("process %d", e.PID)
		if cmd := cmdline(e.PID); cmd != "" {
			who += " (" + Escape(cmd) + ")"
		}
	}
	return fmt.Sprintf("%s: in use by %s, which holds its lock; wait for it to finish or give another path", Name(e.Path), who)
}

// Lock takes an exclusive flock on f without waiting. The lock lives as
// long as the descriptor: closing f, or the process ending however it
// ends, releases it, so a crash never leaves a stale lock.
func Lock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB) }); err != nil {
		return err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return &LockedError{Path: f.Name(), PID: holder(f)}
	}
	if lerr != nil {
		return fmt.Errorf("%s: lock: %w", Name(f.Name()), lerr)
	}
	return nil
}

// holder finds the PID holding a flock on f in /proc/locks, whose lines
// read "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF".
func holder(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	major, minor := (sys.Dev>>8)&0xfff|(sys.Dev>>32)&^0xfff, sys.Dev&0xff|(sys.Dev>>12)&^0xff
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fields[5], ":")
		if len(id) != 3 {
			continue
		}
		ma, err1 := strconv.ParseUint(id[0], 16, 64)
		mi, err2 := strconv.ParseUint(id[1], 16, 64)
		ino, err3 := strconv.ParseUint(id[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || ma != major || mi != minor || ino != sys.Ino {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil {
			return pid
		}
	}
	return 0
}

// cmdline is a process's command line, space-separated, for naming a
// lock's holder; empty when it cannot be read.
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// OpenLocked opens a log the user named for writing (flag adds to the
// open: O_RDWR or O_WRONLY|O_APPEND), refuses anything but a regular file
// without blocking on it, and takes its exclusive lock: one run writes one
// log. A new log is created exclusively and never through a symlink; an
// existing link is followed as the shell would, under Create's rules (a
// dangling link, or one another user planted in /tmp, is refused).
func OpenLocked(path string, flag int, k Kind) (*os.File, error) {
	flag |= syscall.O_NONBLOCK | syscall.O_CLOEXEC
	var f *os.File
	lst, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err = os.OpenFile(path, flag|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	case err != nil:
	case lst.Mode()&fs.ModeSymlink != 0:
		if err = trustLink(path, lst); err != nil {
			return nil, err
		}
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			dest, _ := os.Readlink(path)
			return nil, &Error{Path: path, Why: "a symlink to " + Name(dest) + ", which does not exist; rdmalab does not create files through links (remove the link or name the file itself)", Err: ErrDangling}
		}
		f, err = os.OpenFile(path, flag, 0)
	default:
		f, err = os.OpenFile(path, flag|syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = regular(path, st, k)
	}
	if err == nil {
		err = Lock(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

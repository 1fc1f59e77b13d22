package userfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Each refusal is one line naming the file and why, returned at once.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	big := filepath.Join(dir, "big")
	f, _ := os.Create(big)
	f.Truncate(ToolOutput.Max + 1)
	f.Close()
	ctl := filepath.Join(dir, "a\x1b[2Jb")
	for _, c := range []struct {
		path string
		is   error
		want string
	}{
		{fifo, ErrNotRegular, "a named pipe (FIFO), not a regular file"},
		{"/dev/zero", ErrNotRegular, "/dev/zero: a character device"},
		{loop, syscall.ELOOP, "a symlink loop"},
		{dir, ErrIsDir, "a directory; a tool output is a file"},
		{big, ErrTooLarge, "more than 128 MiB, the bound for a tool output"},
		{filepath.Join(dir, "none"), os.ErrNotExist, "none: no such file or directory"},
		{ctl, os.ErrNotExist, `a\x1b[2Jb": no such file`},
	} {
		start := time.Now()
		_, err := ReadFile(c.path, ToolOutput)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.ContainsRune(err.Error(), 0x1b) || time.Since(start) > time.Second {
			t.Errorf("%q: %v", c.path, err)
		}
	}
}

// The reader stops at the bound even when the file grows after the size
// check: a log being appended to, a file swapped under the name.
func TestReadStopsAtTheBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("12345"), 0o644)
	k := Kind{"test input", 8}
	f, err := Open(p, k)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.WriteFile(p, []byte("1234567890"), 0o644) // grows after the open
	_, err = io.ReadAll(f)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "grew past") {
		t.Errorf("a file that grew: %v", err)
	}
	exact := filepath.Join(t.TempDir(), "exact")
	os.WriteFile(exact, []byte("12345678"), 0o644)
	if b, err := ReadFile(exact, k); err != nil || len(b) != 8 {
		t.Errorf("a file exactly at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := ReadAll(strings.NewReader("123456789"), "(stdin)", k); !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "(stdin): more than") {
		t.Errorf("standard input past the bound: %v", err)
	}
}

// A second lock on a file is refused naming the holder.
func TestLockNamesHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	a, err := OpenLocked(p, os.O_RDWR, ResultsLog)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenLocked(p, os.O_RDWR, ResultsLog)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("in use by process %d", os.Getpid())) {
		t.Errorf("second lock: %v", err)
	}
	a.Close()
	b, err := OpenLocked(p, os.O_RDWR, ResultsLog)
	if err != nil {
		t.Errorf("after the holder closed: %v", err)
	}
	b.Close()
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"plain.json": "plain.json", "a b": "a b", "x\x1by": `"x\x1by"`, "t\tab": `"t\tab"`} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Escape("line: x\x1b[31m\nnext"); got != "line: x\\x1b[31m\nnext" {
		t.Errorf("Escape: %q", got)
	}
}

// docs/inputs.md states every kind's bound as the code has it.
func TestInputsDocBounds(t *testing.T) {
	b, err := os.ReadFile("../../docs/inputs.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds {
		if !strings.Contains(string(b), fmt.Sprintf("| %s | %s", k.Name, k.MiB())) {
			t.Errorf("docs/inputs.md lacks the row | %s | %s", k.Name, k.MiB())
		}
	}
}

func TestTerminalWriter(t *testing.T) {
	var b strings.Builder
	w := TerminalWriter(&b)
	in := "host evil\x1b]0;title\x07 \x1b[2J \u009b2J ok \x1b[1;31mred\x1b[0m │ ·\n"
	if n, err := io.WriteString(w, in); n != len(in) || err != nil {
		t.Fatal(n, err)
	}
	want := "host evil\\x1b]0;title\\x07 \\x1b[2J \\u009b2J ok \x1b[1;31mred\x1b[0m │ ·\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

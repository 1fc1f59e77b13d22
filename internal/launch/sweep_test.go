package launch

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every ssh of a run keeps its control master only ControlPersist idle,
// so the masters of a run killed with SIGKILL end by themselves.
func TestSSHOptionsBoundTheMasters(t *testing.T) {
	args := strings.Join((&SSH{ControlDir: "/tmp/x"}).base(22), " ")
	for _, want := range []string{"ControlMaster=auto", "ControlPersist=30", "ControlPath=/tmp/x/%C", "BatchMode=yes"} {
		if !strings.Contains(args, want) {
			t.Errorf("%s lacks %s", args, want)
		}
	}
}

// The next run tells the masters of a dead run to exit and removes its
// directory; a live run's directory, and one no run marked, are left.
func TestSweepControlDirsOfDeadRuns(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	parent := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead, live, other := mk("rdmalab-dead"), mk("rdmalab-live"), mk("rdmalab-other")
	// a pid that ran and ended: its recorded start time matches nothing
	p := exec.Command("true")
	p.Run()
	os.WriteFile(filepath.Join(dead, ownerFile), fmt.Appendf(nil, "%d 1\n", p.Process.Pid), 0o600)
	if err := MarkControlDir(live); err != nil {
		t.Fatal(err)
	}
	// a stand-in master on the dead run's socket: it sees ssh -O exit knock
	sock := filepath.Join(dead, "0123abcd")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	knocked := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			knocked <- true
			c.Close()
		}
	}()
	liveSock := filepath.Join(live, "feedbeef")
	ln2, err := net.Listen("unix", liveSock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()

	swept := SweepControlDirs(context.Background(), parent, "rdmalab-")
	if !slices.Equal(swept, []string{sock}) {
		t.Errorf("swept %v, want the dead run's socket only", swept)
	}
	select {
	case <-knocked:
	case <-time.After(5 * time.Second):
		t.Error("ssh -O exit never reached the dead run's master")
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead run's directory is still there: %v", err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
}

package cli

import (
	"bufio"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// SIGHUP (a unit's ExecReload, a closed terminal) leaves the built exporter
// serving, with one line in its log each time; it killed it with exit 129
// before, which Restart=on-failure does not restart.
func TestExporterSurvivesSIGHUP(t *testing.T) {
	bin := testhost.Rdmalab(t)
	root := testhost.WriteTree(t, testhost.R730())
	cmd := exec.Command(bin, "exporter", "--root", root, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr := make(chan string, 1)
	var mu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if _, a, ok := strings.Cut(sc.Text(), "address="); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("the exporter never said where it listens")
	}
	scrape := func() error {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := scrape(); err != nil {
		t.Fatal(err)
	}
	logged := func() int {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(log.String(), "SIGHUP: nothing to reload")
	}
	for i := 1; i <= 2; i++ {
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); logged() < i && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if logged() != i {
			mu.Lock()
			t.Fatalf("SIGHUP %d: want %d log line(s), log:\n%s", i, i, log.String())
		}
		if err := scrape(); err != nil {
			t.Fatalf("after SIGHUP %d the exporter no longer serves: %v", i, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("SIGTERM after SIGHUP: %v (want exit 0)", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the exporter did not stop on SIGTERM")
	}
}

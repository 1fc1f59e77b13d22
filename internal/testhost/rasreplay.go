package testhost

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// RASReport is one report a RAS replay serves: a real capture's bytes
// (JSON, offered to SET FORMAT json, or the text report), or silence.
type RASReport struct {
	Body   string
	JSON   bool
	Silent bool // accept, then never answer
}

// RASReplay serves captured ncclras reports over NCCL's RAS client
// protocol on 127.0.0.1 (the real server runs inside NCCL processes on
// GPUs, which no test machine has): it answers CLIENT PROTOCOL, SET
// FORMAT json and [VERBOSE ]STATUS as NCCL's client_support.cc does, one
// report per connection in order (the last one again after the list), and
// closes at the report's end as the server does. It stops when the test
// ends; Commands returns every command line it was sent.
func RASReplay(t testing.TB, reports ...RASReport) (addr string, commands func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			rp := reports[min(i, len(reports)-1)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				if rp.Silent {
					select {
					case <-done:
					case <-time.After(30 * time.Second):
					}
					return
				}
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					cmd := strings.TrimSpace(line)
					mu.Lock()
					seen = append(seen, cmd)
					mu.Unlock()
					switch up := strings.ToUpper(cmd); {
					case strings.HasPrefix(up, "CLIENT PROTOCOL "):
						io.WriteString(conn, "SERVER PROTOCOL 2\n")
					case up == "SET FORMAT JSON" && rp.JSON:
						io.WriteString(conn, "OK\n")
					case up == "STATUS" || up == "VERBOSE STATUS":
						io.WriteString(conn, rp.Body)
						return
					default: // SET FORMAT json before NCCL 2.28.7, and anything else
						io.WriteString(conn, "ERROR: Unknown command "+cmd+"\n")
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

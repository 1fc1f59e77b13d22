package benchrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// The tcp engine's bandwidth test on loopback, blocking sockets at both
// ends: the server counts what the client sent.
func TestTCPEngineLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ServeTCP(ctx, addr, io.Discard) }()
	res, err := RunTCPClient(ctx, addr, "bw", 0.3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes < 1<<20 || res.Gbps <= 0 || res.Seconds <= 0 {
		t.Errorf("%+v", res)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// A server blocked in a read of a client that sends nothing ends when its
// context does: the blocking read is woken, not left behind.
func TestTCPServerEndsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeTCP(ctx, addr, io.Discard) }()
	var conn net.Conn
	for range 100 {
		if conn, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "bw\n")
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's blocking read outlived its context")
	}
}

// A client blocked in a write to a peer that reads nothing ends when its
// context does: the blocking write is woken, not left behind.
func TestTCPClientEndsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		// accept and never read: the client's socket buffer fills
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(10 * time.Second)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := RunTCPClient(ctx, ln.Addr().String(), "bw", 60, 0)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled send reported a result")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client's blocking write outlived its context")
	}
}

// The bulk phase runs on a duplicate of the socket: a test leaves no
// descriptor open behind it, at either end.
func TestTCPEngineClosesItsSockets(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(es)
	}
	run := func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- ServeTCP(ctx, addr, io.Discard) }()
		if _, err := RunTCPClient(ctx, addr, "bw", 0.05, 0); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	run() // the runtime's own descriptors (epoll, its eventfd) exist from here on
	before := fds()
	run()
	if after := fds(); after != before {
		t.Errorf("%d descriptors open before a test, %d after", before, after)
	}
}

// The server counts every byte, the tail the end of the stream leaves
// under the receiver's wake-up threshold included: a client sending an
// exact amount, neither a whole number of reads nor of the threshold,
// gets that amount back.
func TestTCPServerCountsEveryByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ServeTCP(ctx, addr, io.Discard) }()
	var conn net.Conn
	for range 100 {
		if conn, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const want = 2*rcvBuffer + rcvLowat + 12345
	if _, err := fmt.Fprintf(conn, "bw\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(make([]byte, want)); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	var n int64
	var secs float64
	if _, err := fmt.Fscanf(conn, "%d %f\n", &n, &secs); err != nil {
		t.Fatal(err)
	}
	if n != want || secs <= 0 {
		t.Errorf("server counted %d bytes in %g s, the client sent %d", n, secs, want)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}

package benchrun

import (
	"context"
	"fmt"
	"io"
	"net"
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

package benchrun

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"
)

// The built-in TCP engine: a server that counts what it receives and a
// client that sends for a while, so the whole pipeline runs on hosts
// without RDMA (management network, IPoIB). Both are started as
// `rdmalab bench agent …` on the nodes.

// TCPResult is what the client prints, one JSON line.
type TCPResult struct {
	Mode    string  `json:"mode"` // bw or lat
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Gbps    float64 `json:"gbps,omitempty"`
	// Latency of 1-byte round trips, halved (one way), microseconds.
	P50Us  float64 `json:"p50_us,omitempty"`
	P99Us  float64 `json:"p99_us,omitempty"`
	P999Us float64 `json:"p99_9_us,omitempty"`
}

// Ready is the line the server prints once it listens.
const Ready = "rdmalab-agent listening"

// ServeTCP accepts one client on addr and answers its test: for bw it
// counts bytes until the client closes and reports them with the elapsed
// time, for lat it echoes. It gives up when ctx ends.
func ServeTCP(ctx context.Context, addr string, out io.Writer) error {
	return serveTCP(ctx, addr, func(a net.Addr) { fmt.Fprintf(out, "%s %s\n", Ready, a) })
}

// serveTCP is ServeTCP saying that it listens through listening.
func serveTCP(ctx context.Context, addr string, listening func(net.Addr)) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	defer ln.Close()
	listening(ln.Addr())
	go func() { <-ctx.Done(); ln.Close() }()
	conn, err := ln.Accept()
	if err != nil {
		return fmt.Errorf("accept on %s: %w", addr, err)
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	r := bufio.NewReaderSize(conn, 1<<20)
	mode, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("read test from %s: %w", conn.RemoteAddr(), err)
	}
	switch strings.TrimSpace(mode) {
	case "bw":
		buf := make([]byte, rcvBuffer)
		// what the reader already holds beyond the test line, then the
		// socket itself, blocking
		n := int64(r.Buffered())
		var start time.Time
		if n > 0 {
			start = time.Now()
		}
		r.Discard(r.Buffered())
		peer := conn.RemoteAddr()
		sock, err := detach(ctx, conn)
		if err != nil {
			return fmt.Errorf("receive from %s: %w", peer, err)
		}
		defer sock.Close()
		k, first, err := receiveAll(ctx, sock, buf)
		if err != nil {
			return fmt.Errorf("receive from %s: %w", peer, err)
		}
		n += k
		if start.IsZero() {
			start = first
		}
		if start.IsZero() {
			start = time.Now()
		}
		secs := time.Since(start).Seconds()
		// The client half-closed; the count goes back on the same connection.
		if _, err := fmt.Fprintf(sock, "%d %.9f\n", n, secs); err != nil {
			return fmt.Errorf("send the count to %s: %w", peer, err)
		}
		return nil
	case "lat":
		b := make([]byte, 1)
		for {
			if _, err := io.ReadFull(r, b); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			if _, err := conn.Write(b); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("unknown test %q", mode)
}

// RunTCPClient runs one test against a ServeTCP server: bw sends for
// seconds, lat does count 1-byte round trips.
func RunTCPClient(ctx context.Context, addr, mode string, seconds float64, count int) (*TCPResult, error) {
	var d net.Dialer
	var conn net.Conn
	var err error
	// The server may still be binding: retry briefly.
	for i := range 50 {
		if conn, err = d.DialContext(ctx, "tcp", addr); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(20*(i+1)) * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	if _, err := fmt.Fprintf(conn, "%s\n", mode); err != nil {
		return nil, err
	}
	switch mode {
	case "bw":
		buf := make([]byte, 1<<20)
		sock, err := detach(ctx, conn)
		if err != nil {
			return nil, fmt.Errorf("send to %s: %w", addr, err)
		}
		defer sock.Close()
		if _, err := sendFor(ctx, sock, buf, time.Duration(seconds*float64(time.Second))); err != nil {
			return nil, fmt.Errorf("send to %s: %w", addr, err)
		}
		if err := sock.CloseWrite(); err != nil {
			return nil, fmt.Errorf("end the send to %s: %w", addr, err)
		}
		var n int64
		var secs float64
		if _, err := fmt.Fscanf(sock, "%d %f\n", &n, &secs); err != nil {
			return nil, fmt.Errorf("read the server's count: %w", err)
		}
		if secs <= 0 {
			return nil, fmt.Errorf("server measured no time")
		}
		return &TCPResult{Mode: mode, Bytes: n, Seconds: secs, Gbps: float64(n) * 8 / secs / 1e9}, nil
	case "lat":
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		b := []byte{1}
		rtts := make([]float64, 0, count)
		for range count {
			t := time.Now()
			if _, err := conn.Write(b); err != nil {
				return nil, err
			}
			if _, err := io.ReadFull(conn, b); err != nil {
				return nil, err
			}
			rtts = append(rtts, float64(time.Since(t).Nanoseconds())/2e3)
		}
		slices.Sort(rtts)
		q := func(p float64) float64 { return rtts[min(len(rtts)-1, int(p*float64(len(rtts))))] }
		return &TCPResult{Mode: mode, P50Us: q(0.5), P99Us: q(0.99), P999Us: q(0.999)}, nil
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

// ParseTCPResult reads the client's JSON line.
func ParseTCPResult(out []byte) (*TCPResult, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		var r TCPResult
		if json.Unmarshal([]byte(line), &r) == nil && r.Mode != "" {
			return &r, nil
		}
	}
	return nil, fmt.Errorf("no result line in the client's output: %q", strings.TrimSpace(lines[len(lines)-1]))
}

// ClientTCP runs RunTCPClient and writes its result as the one JSON line
// the engine's Parse reads on the other side of the launcher.
func ClientTCP(ctx context.Context, addr, test string, seconds float64, count int, out io.Writer) error {
	res, err := RunTCPClient(ctx, addr, test, seconds, count)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(res)
}

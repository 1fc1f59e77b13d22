package benchrun

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Bulk transfer on blocking sockets, on a thread of its own: through Go's
// poller every full socket buffer parks the goroutine and wakes it again
// (36,000 context switches a 5 s loopback run against iperf3's 651, and
// 0.75–0.79× its throughput); a blocking write or read waits in the
// kernel, as iperf3 does. Only the bulk loops use it; the control lines
// go through the net.Conn as before.

// blockingLoop runs loop on conn's socket turned to blocking mode, on a
// locked thread. When ctx ends the socket is shut down both ways, which
// wakes a blocked read or write (closing it would not: Close waits for
// the call holding the descriptor). The shutdown happens only while loop
// runs, when the descriptor is certainly still this socket's.
func blockingLoop(ctx context.Context, conn net.Conn, loop func(fd int) error) error {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return errors.New("not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var mu sync.Mutex
	active, fdNum := false, -1
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if active {
			syscall.Shutdown(fdNum, syscall.SHUT_RDWR)
		}
	})
	defer stop()
	var lerr error
	err = raw.Control(func(fd uintptr) {
		if lerr = syscall.SetNonblock(int(fd), false); lerr != nil {
			return
		}
		mu.Lock()
		active, fdNum = ctx.Err() == nil, int(fd)
		mu.Unlock()
		if ctx.Err() == nil {
			lerr = loop(int(fd))
		}
		mu.Lock()
		active = false
		mu.Unlock()
	})
	if err == nil {
		err = lerr
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// sendFor writes buf again and again for d, blocking, and returns what
// was sent.
func sendFor(ctx context.Context, conn net.Conn, buf []byte, d time.Duration) (int64, error) {
	var sent int64
	deadline := time.Now().Add(d)
	err := blockingLoop(ctx, conn, func(fd int) error {
		for time.Now().Before(deadline) {
			for off := 0; off < len(buf); {
				n, err := syscall.Write(fd, buf[off:])
				if err == syscall.EINTR {
					continue
				}
				if err != nil {
					return err
				}
				off += n
				sent += int64(n)
			}
		}
		return nil
	})
	return sent, err
}

// receiveAll reads until the peer's half-close, blocking, and returns the
// bytes and when the first arrived.
func receiveAll(ctx context.Context, conn net.Conn, buf []byte) (n int64, first time.Time, err error) {
	err = blockingLoop(ctx, conn, func(fd int) error {
		for {
			k, err := syscall.Read(fd, buf)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if k == 0 {
				return nil
			}
			if first.IsZero() {
				first = time.Now()
			}
			n += int64(k)
		}
	})
	return n, first, err
}

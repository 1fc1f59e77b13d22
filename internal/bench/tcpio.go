package bench

import (
	"context"
	"errors"
	"net"
	"runtime"
	"syscall"
	"time"
)

// Bulk transfer on blocking sockets, on a thread of its own: through Go's
// poller every full socket buffer parks the goroutine and wakes it again
// (36,000 context switches a 5 s loopback run against iperf3's 651, and
// 0.75–0.79× its throughput); a blocking write or read waits in the
// kernel, as iperf3 does. Only the bulk loops use it; the control lines
// go through the net.Conn as before.

// blockingFD turns conn's socket to blocking mode and returns its raw
// connection; the caller's goroutine should be locked to its thread. When
// ctx ends the socket is shut down both ways, which wakes a blocked read
// or write (closing it would not: the call holds the descriptor); stop
// ends that watch.
func blockingFD(ctx context.Context, conn net.Conn) (raw syscall.RawConn, stop func() bool, err error) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return nil, nil, errors.New("not a TCP connection")
	}
	if raw, err = tc.SyscallConn(); err != nil {
		return nil, nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return nil, nil, err
	}
	stop = context.AfterFunc(ctx, func() {
		raw.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	})
	return raw, stop, serr
}

// sendFor writes buf again and again for d, blocking, and returns what
// was sent.
func sendFor(ctx context.Context, conn net.Conn, buf []byte, d time.Duration) (int64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	raw, stop, err := blockingFD(ctx, conn)
	if err != nil {
		return 0, err
	}
	defer stop()
	var sent int64
	deadline := time.Now().Add(d)
	var werr error
	err = raw.Control(func(fd uintptr) {
		for time.Now().Before(deadline) {
			for off := 0; off < len(buf); {
				n, err := syscall.Write(int(fd), buf[off:])
				if err == syscall.EINTR {
					continue
				}
				if err != nil {
					werr = err
					return
				}
				off += n
				sent += int64(n)
			}
		}
	})
	if err == nil {
		err = werr
	}
	return sent, err
}

// receiveAll reads until the peer's half-close, blocking, and returns the
// bytes and when the first arrived.
func receiveAll(ctx context.Context, conn net.Conn, buf []byte) (n int64, first time.Time, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	raw, stop, err := blockingFD(ctx, conn)
	if err != nil {
		return 0, first, err
	}
	defer stop()
	var rerr error
	err = raw.Control(func(fd uintptr) {
		for {
			k, err := syscall.Read(int(fd), buf)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				rerr = err
				return
			}
			if k == 0 {
				return
			}
			if first.IsZero() {
				first = time.Now()
			}
			n += int64(k)
		}
	})
	if err == nil {
		err = rerr
	}
	return n, first, err
}

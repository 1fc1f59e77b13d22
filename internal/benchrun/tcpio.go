package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Bulk transfer on a blocking socket outside Go's poller, as iperf3 does
// it: a write or read that cannot go on waits in the kernel. Through the
// poller every full socket buffer parked and woke the goroutine (36,000
// context switches a 5 s loopback run against iperf3's 651).
//
// Two costs of Go's runtime were measured besides (perf, loopback, per
// GB):
//   - the socket stays registered in the runtime's epoll, edge-triggered,
//     so every arrival of data woke the thread waiting in netpoll for
//     nothing (the receiver: 1,400–1,900 epoll_pwait a GB for ~1,050
//     reads). The bulk phase therefore runs on a duplicate of the
//     descriptor and the net.Conn is closed, which takes the socket out
//     of epoll.
//   - a goroutine that stays in one scheduling slice for 10 ms is taken
//     for a hog: sysmon then takes its P away at every blocking call
//     (every 20 µs at most), starts another thread to hold it and the
//     call's return fetches a P back (about a futex per 1 MiB write and
//     sysmon never sleeping). A yield every few milliseconds starts a
//     new slice, so that never happens.

// yieldEvery is how often the bulk loops pass through the scheduler: well
// under the runtime's 10 ms (forcePreemptNS) and rare enough to cost
// nothing against a write of a MiB.
const yieldEvery = 5 * time.Millisecond

// The receiver reads into rcvBuffer bytes and its read wakes when
// rcvLowat are queued, not at every segment: on loopback that cost it
// 77–104 CPU ms a GB, against 103–160 for 1 MiB reads waking on any data
// and iperf3's 110–155 (a threshold of 1 MiB did the same as 512 KiB).
const (
	rcvBuffer = 4 << 20
	rcvLowat  = 512 << 10
)

// rawSocket is a connection's socket, taken out of Go's poller, in
// blocking mode. Its methods are called from one goroutine; only the
// shutdown of a cancelled context comes from another.
type rawSocket struct {
	mu     sync.Mutex
	fd     int
	closed bool
	stop   func() bool
	last   time.Time
}

// detach takes conn's socket for blocking use and closes conn, which
// removes it from the runtime's epoll (the duplicate keeps the socket
// open). When ctx ends the socket is shut down both ways, which wakes a
// blocked read or write.
func detach(ctx context.Context, conn net.Conn) (*rawSocket, error) {
	defer conn.Close()
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return nil, errors.New("not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) {
		// F_DUPFD_CLOEXEC: the duplicate must not leak into a child.
		var r int
		r, derr = fcntlDupCloexec(int(f))
		if derr == nil {
			fd = r
			// O_NONBLOCK belongs to the open file both descriptors
			// share; conn is closed before anything else uses it.
			derr = syscall.SetNonblock(fd, false)
		}
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		if fd >= 0 {
			syscall.Close(fd)
		}
		return nil, fmt.Errorf("take the socket out of the poller: %w", derr)
	}
	s := &rawSocket{fd: fd}
	s.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.closed {
			syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
		}
	})
	return s, nil
}

func fcntlDupCloexec(fd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if e != 0 {
		return -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", e)
	}
	return int(r), nil
}

// Close closes the socket; after it the context's shutdown does nothing
// (the descriptor number may be another file's by then).
func (s *rawSocket) Close() error {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return syscall.Close(s.fd)
}

// pace yields to the scheduler every yieldEvery (see above).
func (s *rawSocket) pace() {
	if now := time.Now(); now.Sub(s.last) >= yieldEvery {
		s.last = now
		runtime.Gosched()
	}
}

// Write writes all of b, blocking.
func (s *rawSocket) Write(b []byte) (int, error) {
	off := 0
	for off < len(b) {
		n, err := syscall.Write(s.fd, b[off:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return off, os.NewSyscallError("write", err)
		}
		off += n
		s.pace()
	}
	return off, nil
}

// Read reads once, blocking; 0 bytes is the peer's end (io.EOF).
func (s *rawSocket) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(s.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("read", err)
		}
		s.pace()
		if n == 0 && len(b) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// CloseWrite half-closes: the peer reads its end, the reply can still come.
func (s *rawSocket) CloseWrite() error {
	return os.NewSyscallError("shutdown", syscall.Shutdown(s.fd, syscall.SHUT_WR))
}

// sendFor writes buf again and again for d and returns what was sent.
func sendFor(ctx context.Context, s *rawSocket, buf []byte, d time.Duration) (int64, error) {
	var sent int64
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := s.Write(buf)
		sent += int64(n)
		if err != nil {
			return sent, errors.Join(err, ctx.Err())
		}
	}
	return sent, ctx.Err()
}

// receiveAll reads until the peer's half-close and returns the bytes and
// when the first arrived.
func receiveAll(ctx context.Context, s *rawSocket, buf []byte) (n int64, first time.Time, err error) {
	for {
		k, err := s.Read(buf)
		if err == io.EOF {
			return n, first, ctx.Err()
		}
		if err != nil {
			return n, first, errors.Join(err, ctx.Err())
		}
		if first.IsZero() {
			first = time.Now()
			// From now on a read wakes for half a MiB, not for every
			// segment: half the reads and context switches of the
			// receiver, a third less of its CPU a GB. Not before the
			// first data, whose arrival starts the clock. The end of
			// the stream wakes it whatever is queued.
			if err := syscall.SetsockoptInt(s.fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, rcvLowat); err != nil {
				return n, first, os.NewSyscallError("setsockopt SO_RCVLOWAT", err)
			}
		}
		n += int64(k)
	}
}

package wire

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxSendfile is the largest count passed to one sendfile(2) call (Linux
// caps a call at about 2 GiB anyway).
const maxSendfile = 1 << 30

// sendFile sends size bytes of f from offset pos to tc with sendfile(2),
// using an explicit offset: f's file position is neither used nor moved, so
// any number of responses may send from the same segment file at once.
//
// The file descriptor is held through f's SyscallConn().Control for the
// whole transfer: os.File counts that as a reference, so a concurrent Close
// (the log closing a deleted segment) does not close — or let the kernel
// reuse — the descriptor until the transfer ends. A file already closed
// when the transfer starts fails with an error (os.ErrClosed).
//
// The socket side goes through tc's SyscallConn().Write. When the socket's
// send buffer is full, the transfer first waits for it in poll(2) on its own
// thread (waitWritable, up to maxDirectWait), then on the runtime poller,
// which honours the write deadline and a close. handled is false only when
// neither side offers a raw connection (then the caller copies).
func sendFile(tc *net.TCPConn, f *os.File, pos, size int64) (written int64, err error, handled bool) {
	src, err := f.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	dst, err := tc.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	var serr error
	cerr := src.Control(func(sfd uintptr) {
		werr := dst.Write(func(dfd uintptr) bool {
			var waited time.Duration
			for written < size {
				off := pos + written
				n, err := syscall.Sendfile(int(dfd), int(sfd), &off, int(min(size-written, maxSendfile)))
				if n > 0 {
					written += int64(n)
				}
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					if waitWritable(int(dfd), &waited) {
						continue
					}
					return false // wait on the runtime poller until the socket is writable
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case n == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than the section
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if cerr != nil {
		// Control fails only for a file closed before the transfer.
		return written, &os.PathError{Op: "sendfile", Path: f.Name(), Err: os.ErrClosed}, true
	}
	return written, serr, true
}

// maxDirectWait bounds how long one sendFile waits in poll(2) before it
// leaves the wait to the runtime poller, which honours the write deadline and
// a close of the connection.
const maxDirectWait = 20 * time.Millisecond

// maxDirectWaiters bounds the transfers waiting in poll(2) at once: each holds
// an OS thread, where one waiting on the runtime poller holds none. Past it, a
// transfer waits on the runtime poller.
var maxDirectWaiters = int32(max(2, 2*runtime.GOMAXPROCS(0)))

var (
	directWaiters atomic.Int32 // waiting in poll(2) now
	directWaits   atomic.Int64 // waits in poll(2) so far (for tests)
)

// waitWritable waits in poll(2) for the socket fd to take more bytes, for at
// most what is left of maxDirectWait after *waited, and adds the time it
// waited to *waited.
//
// A section larger than the socket's send buffer (Kafka's 100 KiB by
// default) fills it several times, and each time the sender must wait for
// the client to read. Waiting here, on the thread that sends, costs one sleep
// and one wake-up; the runtime poller's way (park the goroutine, epoll, hand
// it to a thread, wake that thread) costs several thread switches each time.
// Measured on raw fetches of 1 KiB records: about a sixth less broker CPU per
// GB (docs/performance.md).
//
// It returns false on a timeout, an interruption, an error or a hang-up, and
// when maxDirectWaiters transfers are waiting already: the caller then waits
// on the runtime poller, and the next sendfile(2) reports any error.
func waitWritable(fd int, waited *time.Duration) bool {
	if *waited >= maxDirectWait {
		return false
	}
	for {
		n := directWaiters.Load()
		if n >= maxDirectWaiters {
			return false
		}
		if directWaiters.CompareAndSwap(n, n+1) {
			break
		}
	}
	defer directWaiters.Add(-1)
	directWaits.Add(1)
	start := time.Now()
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(fds[:], int(max((maxDirectWait-*waited)/time.Millisecond, 1)))
	*waited += time.Since(start)
	ev := fds[0].Revents
	return err == nil && n > 0 && ev&unix.POLLOUT != 0 && ev&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) == 0
}

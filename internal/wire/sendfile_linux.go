package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
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
// The socket side goes through tc's SyscallConn().Write, which waits on the
// runtime poller on EAGAIN and honours the write deadline. handled is false
// only when neither side offers a raw connection (then the caller copies).
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
			for written < size {
				off := pos + written
				n, err := syscall.Sendfile(int(dfd), int(sfd), &off, int(min(size-written, maxSendfile)))
				if n > 0 {
					written += int64(n)
				}
				switch {
				case errors.Is(err, syscall.EINTR):
					continue
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
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

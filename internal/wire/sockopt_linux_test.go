package wire

import (
	"net"
	"syscall"
	"testing"
)

// sndbuf reads SO_SNDBUF of c (Linux reports twice the requested size).
func sndbuf(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

func acceptedPair(t *testing.T) net.Conn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSendBufferApplied(t *testing.T) {
	// The OS default first, for comparison: a value below 1 leaves it.
	def := acceptedPair(t)
	before := sndbuf(t, def)
	(&Server{cfg: Config{SendBufferBytes: -1}}).setSocketOptions(def)
	if got := sndbuf(t, def); got != before {
		t.Fatalf("socket.send.buffer.bytes=-1 changed SO_SNDBUF from %d to %d", before, got)
	}

	const want = 48 << 10 // differs from the default (16 KiB × 2 on Linux, or autotuned)
	c := acceptedPair(t)
	(&Server{cfg: Config{SendBufferBytes: want}}).setSocketOptions(c)
	// Linux doubles the value for bookkeeping overhead; accept either.
	if got := sndbuf(t, c); got != want && got != 2*want {
		t.Fatalf("SO_SNDBUF = %d after socket.send.buffer.bytes=%d", got, want)
	}
}

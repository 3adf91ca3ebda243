// Package testport hands tests TCP ports on 127.0.0.1 that they bind later
// (a cluster's controller.quorum.voters must name every node's port before
// the nodes start; a killed broker restarts on its old address).
//
// A port found by listening on 127.0.0.1:0 and closing the listener is back
// in the kernel's ephemeral range: until the test binds it again, any other
// listener on port 0 or outgoing connection (of this test binary, or of
// another package's test binary running in parallel) may get it, and the
// broker then fails to start with "address already in use". So the ports
// handed out here come from below the ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), which the kernel never assigns
// by itself, and each is reserved for the test's lifetime by an flock on a
// file in the temporary directory ($TMPDIR/sluice-test-ports-<uid>), so
// parallel test processes never get the same port.
package testport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lowest is the first port handed out (clear of the well-known and the
// usual service ports).
const lowest = 20000

var (
	mu   sync.Mutex
	held = map[int]bool{} // ports reserved by this process
)

// Free returns n distinct ports free on 127.0.0.1, reserved until t ends.
func Free(t testing.TB, n int) []int {
	t.Helper()
	out := make([]int, 0, n)
	for range n {
		out = append(out, one(t))
	}
	return out
}

// Addr returns "127.0.0.1:port" for a port from Free.
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(one(t)))
}

func one(t testing.TB) int {
	t.Helper()
	lo, hi := lowest, ephemeralLow()
	if hi-lo < 1000 {
		// No room below the ephemeral range: fall back to a port the
		// kernel picks (racy, as before).
		return kernelPort(t)
	}
	// One directory per user: another user's directory may not be
	// writable (ports are then kept apart only by the bind check).
	dir := filepath.Join(os.TempDir(), "sluice-test-ports-"+strconv.Itoa(os.Getuid()))
	_ = os.MkdirAll(dir, 0o755) // if it cannot be made, lock reserves nothing
	for range 1000 {
		p := lo + rand.IntN(hi-lo)
		mu.Lock()
		if held[p] {
			mu.Unlock()
			continue
		}
		held[p] = true
		mu.Unlock()
		f, ok := lock(filepath.Join(dir, strconv.Itoa(p)))
		if ok && bindable(p) {
			t.Cleanup(func() {
				if f != nil {
					f.Close() // releases the flock
				}
				mu.Lock()
				delete(held, p)
				mu.Unlock()
			})
			return p
		}
		if f != nil {
			f.Close()
		}
		mu.Lock()
		delete(held, p)
		mu.Unlock()
	}
	t.Fatalf("testport: no free port in [%d, %d)", lo, hi)
	return 0
}

// lock takes an exclusive, non-blocking flock on path; false when another
// process holds it (it has reserved the port). When no lock can be taken
// at all (no such directory, a read-only or full disk), it reserves
// nothing and says true: the bind check alone then decides.
func lock(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, !errors.Is(err, syscall.EWOULDBLOCK)
	}
	return f, true
}

// bindable reports whether a listener can bind 127.0.0.1:p now (some
// service, or a test not using this package, may hold it).
func bindable(p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 if
// unknown: the Linux default, and below the IANA dynamic range 49152).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				return v
			}
		}
	}
	return 32768
}

func kernelPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testport: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

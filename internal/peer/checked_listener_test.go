package peer

import (
	"net"
	"testing"
)

// TestCheckedListenerClosedAcceptFails: Accept after Close fails (an
// http.Server given a nil connection without an error would panic); Close
// and the accept loop's own error raced before.
func TestCheckedListenerClosedAcceptFails(t *testing.T) {
	for range 200 {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln := CheckedListener(inner, func(net.Conn) error { return nil }, nil)
		ln.Close()
		if c, err := ln.Accept(); err == nil || c != nil {
			t.Fatalf("Accept after Close: %v, %v", c, err)
		}
	}
}

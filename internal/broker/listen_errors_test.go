package broker

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestListenErrorNamesAddressOnce: a busy port is reported with the address
// once ("sluice: listen tcp 127.0.0.1:N: bind: address already in use").
func TestListenErrorNamesAddressOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	lns, err := listen(addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		for _, l := range lns {
			l.Close()
		}
		t.Fatalf("listen on busy %s succeeded", addr)
	}
	if msg := err.Error(); strings.Count(msg, addr) != 1 || strings.Count(msg, "listen") != 1 || !strings.HasPrefix(msg, "sluice: ") {
		t.Fatalf("error %q: want the address and \"listen\" once", msg)
	}
}

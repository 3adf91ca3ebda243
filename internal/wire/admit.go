package wire

import (
	"context"
	"net"
	"time"
)

// Admission is the answer of Config.Admit for one accepted connection.
type Admission struct {
	// OK serves the connection; otherwise it is closed (after CloseAfter,
	// when set: a client over its connection rate waits before it learns).
	OK         bool
	CloseAfter time.Duration
	// Release, when set, is called once the admitted connection has ended.
	Release func()
}

// admit asks Config.Admit about a new connection (always admitted
// without one). It runs on the listener's accept loop, so waiting in it
// (a connection-rate throttle, a full max.connections) delays every
// further accept on that listener, as Kafka's acceptor does.
func (s *Server) admit(ctx context.Context, nc net.Conn, ls *Listener) (Admission, bool) {
	if s.cfg.Admit == nil {
		return Admission{OK: true}, true
	}
	a := s.cfg.Admit(ctx, ls, nc.RemoteAddr())
	if a.OK {
		return a, true
	}
	if a.CloseAfter > 0 {
		time.AfterFunc(a.CloseAfter, func() { nc.Close() })
	} else {
		nc.Close()
	}
	return a, false
}

package peer

import (
	"context"
	"net"
	"net/http"
)

// Connections and who sent on them: a node whose process dies has its
// sockets closed by its kernel at once, so the connections it had opened to
// this node's listener end (a paused process keeps them open). The server
// remembers, per connection, the node that sent on it (raft messages carry
// their sender; a controller method's handler names it with TagConn) and
// calls the function given to SetConnClosed when such a connection ends.
// What that means is the caller's to decide: a connection also ends when
// its client gives up on a request or closes it for being idle.

type connTagKey struct{}

// connTag is one accepted connection's sender (0: none seen yet).
type connTag struct {
	conn net.Conn
	node uint64 // under Server.connMu
}

// connContext attaches the connection's tag to every request's context.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	t := &connTag{conn: c}
	s.connMu.Lock()
	if s.conns == nil {
		s.conns = map[net.Conn]*connTag{}
	}
	s.conns[c] = t
	s.connMu.Unlock()
	return context.WithValue(ctx, connTagKey{}, t)
}

// connState reports the end of a tagged connection.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	s.connMu.Lock()
	t := s.conns[c]
	delete(s.conns, c)
	node, fn := uint64(0), s.onConnClosed
	if t != nil {
		node = t.node
	}
	s.connMu.Unlock()
	if node != 0 && fn != nil {
		fn(node)
	}
}

// SetConnClosed sets the function called (outside any lock of the server)
// when a connection on which node sent something ends.
func (s *Server) SetConnClosed(fn func(node uint64)) {
	s.connMu.Lock()
	s.onConnClosed = fn
	s.connMu.Unlock()
}

// TagConn records that the request of ctx (a controller method's handler's
// context) was sent by node, so the end of its connection is reported.
func (s *Server) TagConn(ctx context.Context, node uint64) {
	t, _ := ctx.Value(connTagKey{}).(*connTag)
	if t == nil || node == 0 {
		return
	}
	s.connMu.Lock()
	t.node = node
	s.connMu.Unlock()
}

// OpenConns is how many connections on which node sent something are still
// open. A process that died has none left: its kernel closed them all.
func (s *Server) OpenConns(node uint64) int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	n := 0
	for _, t := range s.conns {
		if t.node == node {
			n++
		}
	}
	return n
}

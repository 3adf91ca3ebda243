package wire

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request handed to a Dispatcher.
type Request struct {
	Header RequestHeader
	// Body is the decoded request; its version is set to Header.APIVersion.
	// Its []byte fields alias the request frame, whose buffer is reused
	// for later requests once Handle returns for Produce and Fetch: a
	// handler of those keys must copy any bytes it keeps (the log's Append
	// copies produced records into the segment before returning).
	Body kmsg.Request
	// Size is the frame size in bytes (without the 4-byte length prefix).
	Size int
	// Received is when the frame was fully read.
	Received time.Time
	// Remote is the client's address.
	Remote net.Addr
	// Conn is the connection's security state: listener, protocol, TLS
	// state, principal, SASL phase. Never nil for requests read by a
	// Server; handler tests may leave it nil (ConnState's getters accept a
	// nil receiver).
	Conn *ConnState
}

// Dispatcher routes decoded requests to handlers. The wire layer asks it which
// keys and versions are served before decoding anything.
type Dispatcher interface {
	// Versions reports the version range served for key; ok is false for an
	// unknown key. A version outside [min, max] closes the connection (or, for
	// ApiVersions, gets the KIP-511 UNSUPPORTED_VERSION response).
	Versions(key int16) (min, max int16, ok bool)
	// Concurrent reports whether requests with this key may run concurrently
	// with neighbouring concurrent requests of the same connection. A
	// non-concurrent request is a barrier: it starts after every earlier
	// request of the connection has been handled, and later requests start
	// after it has been handled. SaslHandshake, SaslAuthenticate and every
	// request read before SASL authentication completes are barriers
	// whatever Concurrent says.
	Concurrent(key int16) bool
	// Handle serves one request. A nil response means "no response" (acks=0
	// produce); a *Deferred response is finished later (see Deferred). An error closes the connection after logging it; prefer Kafka
	// error codes inside the response. ctx is cancelled when the connection
	// closes or the server shuts down.
	Handle(ctx context.Context, req *Request) (kmsg.Response, error)
}

// Deferred is a response a handler returns before it is ready: the wire
// layer calls Wait on a goroutine of its own and then sends Response (nil:
// no response; an error from Wait closes the connection, as a handler error
// does). Meanwhile the connection goes on reading and handling its next
// requests — even those of non-concurrent keys — and responses still go out
// in request order. Produce uses it to wait for an fsync without holding
// the connection, so the next request's records share that fsync. Response
// may be changed by Wait (it is encoded afterwards); the request's frame may
// be reused once Handle returns, so neither may keep references into it.
type Deferred struct {
	kmsg.Response
	Wait func() error
}

// Observer receives connection and request events (metrics). Methods are
// called concurrently.
type Observer interface {
	ConnOpened()
	ConnClosed()
	// RequestDone is called once per handled request. bytesOut is 0 when no
	// response was sent.
	RequestDone(key, version int16, elapsed time.Duration, bytesIn, bytesOut int)
}

type nopObserver struct{}

func (nopObserver) ConnOpened()                                       {}
func (nopObserver) ConnClosed()                                       {}
func (nopObserver) RequestDone(int16, int16, time.Duration, int, int) {}

// Package wire owns the Kafka wire protocol transport of Sluice: reading
// size-prefixed frames (bounded by socket.request.max.bytes, checked before any
// allocation), parsing request headers v0–v2, decoding request bodies with
// franz-go's kmsg, encoding response headers v0/v1, and the per-connection
// read and write loops that pipeline requests while answering strictly in
// request order.
//
// It knows nothing about topics, logs or configs: what a request means is the
// Dispatcher's business (package broker). It must not touch storage or broker
// state.
//
// Protocol behaviour, following Apache Kafka:
//   - A frame larger than the limit (or with a negative size) closes the
//     connection with a log line; the frame is never allocated.
//   - An ApiVersions request with a version the broker does not serve gets a
//     v0 ApiVersions response with UNSUPPORTED_VERSION and the supported
//     ApiVersions range (KIP-511). Responses to ApiVersions always use
//     response header v0, even for flexible versions.
//   - Any other unknown key, unsupported version or undecodable body closes the
//     connection with a log line.
//   - A panic inside a handler is recovered and logged; only that connection
//     is closed.
//   - A connection without traffic and without requests in flight for the
//     idle timeout (connections.max.idle.ms) is closed.
//
// Listener security (listener.go): ServeListener serves a net.Listener with
// a Listener's settings. With TLS every connection first completes a TLS
// server handshake (bounded; a failure closes and logs it). Each
// connection has a ConnState (Request.Conn): listener name, security
// protocol, TLS state and principal (User:ANONYMOUS, the verified client
// certificate's subject on SSL, the SASL user once authenticated). On a
// SASL listener the connection reads only ApiVersions and SaslHandshake,
// then only SaslAuthenticate (or bare tokens after a v0 handshake, passed
// to the function the handshake handler installed), until a handler marks
// it authenticated; anything else closes it, as Kafka does, and so does a
// frame above the pre-authentication bound. A handler can ask to close the
// connection after its response (a failed authentication). The mechanisms
// themselves are not the wire layer's business (packages security, broker).
// A session may expire (KIP-368, reauth.go): a SaslHandshake then starts a
// re-authentication on the same connection (only SaslAuthenticate is read
// until it completes), and any other request after the expiry closes the
// connection once the responses already queued are written.
//
// Performance (docs/performance.md, "Optimisations"):
//   - Responses are encoded into pooled buffers (parts.go). A response that
//     implements PartsResponse (Fetch) splices file sections between its
//     encoded bytes; the write loop sends them with sendfile(2) from an
//     explicit offset, holding the file descriptor for the transfer
//     (write.go, sendfile_linux.go). Other files and non-TCP connections are
//     copied. A section whose file was closed before the transfer, or is
//     shorter than announced, closes the connection (the response is
//     already partly written).
//   - Request frames are read into buffers pooled by size class
//     (frame.go); Produce and Fetch frames go back to the pool once their
//     handler returns (see Request.Body for the aliasing rule), other keys'
//     frames are left to the garbage collector.
//   - A handler may answer with a *Deferred response (Produce waiting for an
//     fsync): it is completed on a goroutine of its own while the connection
//     reads and handles its next requests, and still answered in order.
package wire

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
package wire

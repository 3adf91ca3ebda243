// Package quota holds Sluice's client quotas as Apache Kafka defines them:
// the quota entities (user, client-id, their pairs and defaults, and ip),
// the quota keys and their validation, the resolution of the quota that
// applies to a (user, client-id) pair through Kafka's eight levels of
// precedence, and the rate sensors that measure usage over Kafka's sampled
// windows (quota.window.num × quota.window.size.seconds) and compute the
// throttle time of a client that exceeds its quota (KIP-219).
//
// It does no I/O and knows nothing of connections or requests: the broker
// records usage and applies the throttle times it returns. Every time is
// passed in (or read from an injected clock), so the computations are
// tested without sleeping.
package quota

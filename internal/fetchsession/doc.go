// Package fetchsession owns incremental fetch sessions (KIP-227): the
// broker-side cache of sessions, their ids and epochs, the set of partitions
// each session fetches with the client's fetch state, the cached response
// state used to leave unchanged partitions out of incremental responses, and
// eviction when the cache is full (max.incremental.fetch.session.cache.slots,
// 1000 by default, like Kafka).
//
// It knows nothing about logs, topics or the wire: the Fetch handler turns a
// request into a Request, asks the Cache for a Context, reads the partitions
// the context lists, and lets the context decide which partitions go in the
// response and which session id it carries. It must not touch partition
// logs, topic metadata or connections.
package fetchsession

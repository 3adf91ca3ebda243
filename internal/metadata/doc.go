// Package metadata holds the cluster's metadata as an ordered log of records
// applied to immutable images: broker registrations (endpoints per
// listener, rack, epoch, fenced or not), topics (ids, configs, partitions
// with replicas, leader, leader epoch, partition epoch and in-sync set),
// broker and cluster-wide dynamic configs, the producer-id blocks
// handed out so far, client quotas and ACL bindings.
//
// The records are decided by the controller (internal/controller) and
// replicated by the quorum (internal/quorum); every node applies the same
// committed records in the same order and so holds the same Image. An Image
// is never modified once published: Apply returns a new one sharing what
// did not change. Handlers read the current image without locks.
//
// Apply is deterministic and total: a record that does not fit the image
// (a topic created twice, a fence for an older broker epoch, a partition
// change with a stale partition epoch) is skipped, identically on every
// node, so that a controller deposed half-way can never make nodes diverge.
//
// The package does no I/O. Store adapts it to quorum.StateMachine: it
// decodes committed entries, applies them, serves snapshots (the whole image
// as JSON) and tells waiters when an offset has been applied.
package metadata

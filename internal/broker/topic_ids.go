package broker

import (
	"github.com/sluice-broker/sluice/internal/topics"
)

// Requests that name topics by id (KIP-516) instead of by name: Produce v13,
// OffsetCommit v10, OffsetFetch v10, TxnOffsetCommit v6 (Fetch v13+ resolves
// its ids in its session code, with the same rule). An id resolves to the
// name of the topic that has it now; the zero id and an id no topic has
// (never created, or deleted) are UNKNOWN_TOPIC_ID, as Kafka answers them.

// topicNameByID returns the name of the topic whose id is id.
func (b *Broker) topicNameByID(id [16]byte) (string, bool) {
	if topics.ID(id).IsZero() {
		return "", false
	}
	t, ok := b.topicByID(id)
	if !ok {
		return "", false
	}
	return t.Name, true
}

// topicRef gives access to the id and name fields of one request or
// response topic entry (kmsg has a struct per API, each with TopicID and
// Topic).
type topicRef[T any] func(*T) (id *[16]byte, name *string)

// resolveTopicIDs splits a request's topics, named by id, into those the
// broker knows, returned in order with their names filled in, and the
// others, each answered by unknown (its partitions with UNKNOWN_TOPIC_ID).
// The known topics then go the by-name way of the API's previous version.
func resolveTopicIDs[T, R any](b *Broker, ts []T, ref topicRef[T], unknown func(*T) R) (known []T, answered []R) {
	for _, t := range ts {
		id, name := ref(&t)
		if n, ok := b.topicNameByID(*id); ok {
			*name = n
			known = append(known, t)
			continue
		}
		answered = append(answered, unknown(&t))
	}
	return known, answered
}

// fillTopicIDs names a response's topics by id again, from their names.
// With drop, a topic whose name no longer has an id (deleted meanwhile) is
// left out of the answer; otherwise it keeps the zero id.
func fillTopicIDs[T any](b *Broker, ts []T, ref topicRef[T], drop bool) []T {
	kept := ts[:0]
	for i := range ts {
		id, name := ref(&ts[i])
		if tp, ok := b.topics.Get(*name); ok {
			*id = [16]byte(tp.ID)
		} else if drop {
			continue
		}
		kept = append(kept, ts[i])
	}
	return kept
}

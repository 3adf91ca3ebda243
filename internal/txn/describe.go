package txn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is a transactional id's state as DescribeTransactions
// reports it.
type Description struct {
	ProducerID    int64
	ProducerEpoch int16
	State         State
	TimeoutMs     int32
	StartMs       int64 // -1 when no transaction ran yet
	Partitions    []TopicPartition
}

// Describe returns id's state, or TRANSACTIONAL_ID_NOT_FOUND,
// INVALID_REQUEST for the empty id, or a coordinator-level error.
func (c *Coordinator) Describe(id string) (Description, int16) {
	if id == "" {
		return Description{}, kerr.InvalidRequest.Code
	}
	m, code := c.lookup(id)
	if code != 0 {
		return Description{}, code
	}
	if m == nil {
		return Description{}, kerr.TransactionalIDNotFound.Code
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removed || m.state == Dead {
		return Description{}, kerr.TransactionalIDNotFound.Code
	}
	return Description{
		ProducerID: m.producerID, ProducerEpoch: m.producerEpoch, State: m.state,
		TimeoutMs: m.timeoutMs, StartMs: m.startMs, Partitions: m.sortedPartitions(),
	}, 0
}

// Listing is one row of ListTransactions.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// Filter selects transactions for List; empty fields select all.
type Filter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs, when >= 0, keeps only transactions that started more
	// than this long ago (ListTransactions v1).
	MinDurationMs int64
}

// List returns the transactional ids matching f, sorted by id (Dead ids
// being expired are left out, as in Kafka).
func (c *Coordinator) List(f Filter) ([]Listing, int16) {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, kerr.NotCoordinator.Code
	case c.loading:
		c.mu.Unlock()
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	ms := make([]*txnMeta, 0, len(c.txns))
	for _, m := range c.txns {
		ms = append(ms, m)
	}
	c.mu.Unlock()
	now := c.nowMs()
	var out []Listing
	for _, m := range ms {
		m.mu.Lock()
		l := Listing{TransactionalID: m.id, ProducerID: m.producerID, State: m.state}
		keep := !m.removed && m.state != Dead &&
			(len(f.States) == 0 || containsState(f.States, m.state)) &&
			(len(f.ProducerIDs) == 0 || containsID(f.ProducerIDs, m.producerID)) &&
			(f.MinDurationMs < 0 || now-m.startMs > f.MinDurationMs)
		m.mu.Unlock()
		if keep {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, 0
}

func containsState(list []State, s State) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsID(list []int64, id int64) bool {
	for _, x := range list {
		if x == id {
			return true
		}
	}
	return false
}

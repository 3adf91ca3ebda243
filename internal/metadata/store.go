package metadata

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice-broker/sluice/internal/quorum"
)

// Store is the quorum's state machine for the metadata: it applies
// committed batches to the current Image and publishes each new image.
// Apply, Snapshot and Restore come from the quorum's Ready loop; Image,
// Changed and WaitFor may be called from anywhere.
type Store struct {
	cur atomic.Pointer[Image]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a new image is published
	// proposed: batches this node proposed, with their entry bytes
	// (Proposed).
	proposed []proposedBatch
	// pre: a snapshot decoded ahead of its Restore (UsePrefetched).
	pre *Prefetched

	// OnSkip hears records skipped by Apply (for logging); may be nil.
	OnSkip func(offset uint64, why string)
	// OnSkipped hears, once per Apply that skipped any, how many records
	// it skipped, the offsets of the first and last batch holding one,
	// and the first one's reason (a summary for logs); may be nil.
	OnSkipped func(n int, first, last uint64, firstWhy string)
}

// NewStore returns a Store holding the empty image.
func NewStore() *Store {
	s := &Store{changed: make(chan struct{})}
	s.cur.Store(Empty())
	return s
}

// Image returns the current image.
func (s *Store) Image() *Image { return s.cur.Load() }

// Changed returns a channel closed when an image newer than the current
// one is published.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Store) publish(im *Image) {
	s.mu.Lock()
	s.cur.Store(im)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// WaitFor returns the first image whose offset is at least offset, or the
// context's error.
func (s *Store) WaitFor(ctx context.Context, offset uint64) (*Image, error) {
	for {
		ch := s.Changed()
		if im := s.Image(); im.Offset >= offset {
			return im, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// proposedBatch is a batch this node proposed and the bytes it encoded to.
type proposedBatch struct {
	data  []byte
	batch Batch
}

// minProposedBytes: batches smaller than this are decoded even when this
// node proposed them (decoding them costs little).
const minProposedBytes = 64 << 10

// Proposed tells Apply that the entry data, once committed, is batch b
// (data is b.Encode()): Apply then applies b as it is instead of decoding
// data again, which for a batch of 100,000 partition changes is a good part
// of committing it. Image.Apply copies what it keeps of a record, and b
// must not change until forget is called, which the proposer does once its
// proposal returns (committed or not).
func (s *Store) Proposed(data []byte, b Batch) (forget func()) {
	if len(data) < minProposedBytes {
		return func() {}
	}
	s.mu.Lock()
	s.proposed = append(s.proposed, proposedBatch{data: data, batch: b})
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i := range s.proposed {
			if &s.proposed[i].data[0] == &data[0] {
				s.proposed = append(s.proposed[:i], s.proposed[i+1:]...)
				return
			}
		}
	}
}

// decode is DecodeBatch, or the batch proposed with these bytes.
func (s *Store) decode(data []byte) (Batch, error) {
	if len(data) >= minProposedBytes {
		s.mu.Lock()
		for _, p := range s.proposed {
			if len(p.data) == len(data) && bytes.Equal(p.data, data) {
				s.mu.Unlock()
				return p.batch, nil
			}
		}
		s.mu.Unlock()
	}
	return DecodeBatch(data)
}

// Apply implements quorum.StateMachine.
func (s *Store) Apply(ents []quorum.Entry) error {
	im := s.Image()
	var sum skipSummary
	for _, e := range ents {
		b, err := s.decode(e.Data)
		if err != nil {
			// A batch no node can read is skipped by every node alike.
			if s.OnSkip != nil {
				s.OnSkip(e.Index, err.Error())
			}
			sum.add(e.Index, 1, err.Error())
			c := *im
			c.Offset = e.Index
			im = &c
			continue
		}
		var skipped []string
		im, skipped = im.Apply(e.Index, b)
		if s.OnSkip != nil {
			for _, why := range skipped {
				s.OnSkip(e.Index, why)
			}
		}
		if len(skipped) > 0 {
			sum.add(e.Index, len(skipped), skipped[0])
		}
	}
	if sum.n > 0 && s.OnSkipped != nil {
		s.OnSkipped(sum.n, sum.first, sum.last, sum.why)
	}
	s.publish(im)
	return nil
}

// snapshotDoc is an image as stored in a quorum snapshot.
type snapshotDoc struct {
	Offset         uint64                       `json:"offset"`
	ClusterID      string                       `json:"cluster_id"`
	Features       map[string]int16             `json:"features,omitempty"`
	Brokers        []*BrokerRegistration        `json:"brokers"`
	Topics         []*Topic                     `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"broker_configs,omitempty"`
	NextProducerID int64                        `json:"next_producer_id"`

	// image_security.go
	ClientQuotas map[string]map[string]float64         `json:"client_quotas,omitempty"`
	ACLs         []ACL                                 `json:"acls,omitempty"`
	QuorumNodes  map[int32]QuorumNode                  `json:"quorum_nodes,omitempty"`
	Scram        map[string]map[string]ScramCredential `json:"scram,omitempty"` // image_scram.go
	GroupConfigs map[string]map[string]string          `json:"group_configs,omitempty"`
}

// Snapshot implements quorum.StateMachine.
func (s *Store) Snapshot() ([]byte, error) {
	im := s.Image()
	d := snapshotDoc{Offset: im.Offset, ClusterID: im.ClusterID, Topics: im.SortedTopics(),
		BrokerConfigs: im.BrokerConfigs, NextProducerID: im.NextProducerID,
		ClientQuotas: im.ClientQuotas, ACLs: im.ACLs, QuorumNodes: im.QuorumNodes, GroupConfigs: im.GroupConfigs, Scram: im.Scram}
	for _, b := range im.Brokers {
		d.Brokers = append(d.Brokers, b)
	}

	d.Features = im.Features
	return json.Marshal(d)
}

// Prefetched is a snapshot being read and decoded in the background
// (Prefetch), for the Restore of the same bytes.
type Prefetched struct {
	done chan struct{}
	data []byte
	im   *Image
	err  error
}

// Prefetch reads snapshot data with read (nil data: none) and decodes it on
// a goroutine of its own. A start that has other work to do before it
// starts the metadata quorum (reading the data directory) hands the result
// to its store with UsePrefetched.
func Prefetch(read func() ([]byte, error)) *Prefetched {
	p := &Prefetched{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if p.data, p.err = read(); p.err == nil && p.data != nil {
			p.im, p.err = decodeSnapshot(p.data)
		}
	}()
	return p
}

// UsePrefetched makes the next Restore use p's image when it restores the
// same bytes (and decode them itself otherwise).
func (s *Store) UsePrefetched(p *Prefetched) {
	s.mu.Lock()
	s.pre = p
	s.mu.Unlock()
}

// Restore implements quorum.StateMachine.
func (s *Store) Restore(data []byte) error {
	s.mu.Lock()
	p := s.pre
	s.pre = nil
	s.mu.Unlock()
	if p != nil {
		<-p.done
		if p.err == nil && p.im != nil && bytes.Equal(p.data, data) {
			s.publish(p.im)
			return nil
		}
	}
	im, err := decodeSnapshot(data)
	if err != nil {
		return err
	}
	s.publish(im)
	return nil
}

// decodeSnapshot decodes a snapshot's image.
func decodeSnapshot(data []byte) (*Image, error) {
	var d snapshotDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("metadata: snapshot: %w", err)
	}
	im := Empty()
	im.Offset, im.ClusterID, im.NextProducerID = d.Offset, d.ClusterID, d.NextProducerID
	im.QuorumNodes = d.QuorumNodes
	im.GroupConfigs = d.GroupConfigs
	im.Features = d.Features
	for _, b := range d.Brokers {
		im.Brokers[b.ID] = b
	}
	for _, t := range d.Topics {
		im.Topics[t.Name] = t
		im.TopicsByID[t.ID] = t
	}
	if d.BrokerConfigs != nil {
		im.BrokerConfigs = d.BrokerConfigs
	}
	im.ClientQuotas, im.ACLs, im.Scram = d.ClientQuotas, d.ACLs, d.Scram
	return im, nil
}

// skipSummary counts the records one Apply skipped (Store.OnSkipped).
type skipSummary struct {
	n           int
	first, last uint64
	why         string
}

func (s *skipSummary) add(offset uint64, n int, why string) {
	if s.n == 0 {
		s.first, s.why = offset, why
	}
	s.n += n
	s.last = offset
}

package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	kbatch "github.com/sluice-broker/sluice/internal/batch"
)

// Transactional offset commits (TxnOffsetCommit, sendOffsetsToTransaction): the
// offsets are written to the group's __consumer_offsets partition at once, in a
// transactional batch of the producer, but only take effect when the transaction
// coordinator writes the producer's commit marker to that partition (WriteTxnMarker);
// an abort marker discards them. Until then OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for those partitions. Replay at start follows the same rules in
// log order, so pending commits survive a restart and are decided by the markers that
// follow them.

// TxnOffsetCommit handles TxnOffsetCommit (v0-v4). verify, when not nil, asks the
// transaction coordinator whether the group's __consumer_offsets partition was added
// to producer req.ProducerID/ProducerEpoch's ongoing transaction (AddOffsetsToTxn);
// a non-zero code fails every partition.
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, verify func() int16) *kmsg.TxnOffsetCommitResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrTxnOffsetCommitResponse()
	r.Version = req.Version
	var code int16
	switch {
	case c.notCoordinator(req.Group):
		code = kerr.NotCoordinator.Code
	case !validGroupID(req.Group):
		code = kerr.InvalidGroupID.Code
	case verify != nil:
		code = verify()
	}
	if code == 0 {
		oc := kmsg.NewOffsetCommitRequest()
		oc.Version = 8
		oc.Group, oc.Generation, oc.MemberID, oc.InstanceID = req.Group, req.Generation, req.MemberID, req.InstanceID
		code = c.validateCommit(&oc, true)
		if code == kerr.StaleMemberEpoch.Code {
			code = kerr.IllegalGeneration.Code
		}
	}
	type pendingCommit struct {
		tp topicPartition
		o  committedOffset
	}
	nowMs := c.nowMs()
	var todo []pendingCommit
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		info, known := c.topics.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			o, ec := c.commitEntry(code, info, known, p.Partition, p.Offset, epoch, p.Metadata, nowMs)
			if rp.ErrorCode = ec; ec == 0 {
				todo = append(todo, pendingCommit{topicPartition{t.Topic, p.Partition}, o})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	if len(todo) == 0 {
		return r
	}
	recs := make([]record, len(todo))
	for i, p := range todo {
		recs[i] = offsetCommitRecord(req.Group, p.tp, p.o)
	}
	if c.store != nil {
		p := PartitionFor(req.Group, c.cfg.NumPartitions)
		if err := c.store.Append(p, encodeProducerBatch(recs, nowMs, req.ProducerID, req.ProducerEpoch)); err != nil {
			c.log.Error("group: writing transactional offsets", "group", req.Group, "partition", p,
				"producer_id", req.ProducerID, "producer_epoch", req.ProducerEpoch, "err", err)
			fail := appendErrorCode(err)
			for ti := range r.Topics {
				for pi := range r.Topics[ti].Partitions {
					if rp := &r.Topics[ti].Partitions[pi]; rp.ErrorCode == 0 {
						rp.ErrorCode = fail
					}
				}
			}
			return r
		}
	}
	for _, p := range todo {
		p.o.seq = c.nextSeq()
		c.addPendingTxn(req.ProducerID, req.Group, p.tp, p.o)
	}
	return r
}

// appendErrorCode maps a failed append of coordinator records to the client's error:
// a producer fenced on the partition keeps its code (INVALID_PRODUCER_EPOCH), anything
// else is COORDINATOR_NOT_AVAILABLE (retriable).
func appendErrorCode(err error) int16 {
	var ke interface{ KafkaCode() int16 }
	if errors.As(err, &ke) {
		switch code := ke.KafkaCode(); code {
		case kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code:
			return code
		}
	}
	return kerr.CoordinatorNotAvailable.Code
}

// WriteTxnMarker appends the transaction marker m to __consumer_offsets partition p
// (the transaction coordinator calls it for a transaction that added a group) and
// then applies it to the transactional offset commits of m's producer pending in the
// groups of that partition: a commit makes them the committed offsets (unless a
// regular commit was written after them), an abort discards them.
func (c *Coordinator) WriteTxnMarker(p int32, m kbatch.Marker) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("group: coordinator closed")
	}
	if c.store != nil {
		if err := c.store.Append(p, kbatch.NewMarkerBatch(m)); err != nil {
			return err
		}
	}
	c.completeTxn(p, m.ProducerID, m.Type == kbatch.ControlCommit)
	return nil
}

func (c *Coordinator) nextSeq() int64 {
	c.seq++
	return c.seq
}

func (c *Coordinator) addPendingTxn(producerID int64, group string, tp topicPartition, o committedOffset) {
	byGroup := c.pendingTxn[producerID]
	if byGroup == nil {
		byGroup = make(map[string]map[topicPartition]committedOffset)
		c.pendingTxn[producerID] = byGroup
	}
	offs := byGroup[group]
	if offs == nil {
		offs = make(map[topicPartition]committedOffset)
		byGroup[group] = offs
	}
	offs[tp] = o
}

// completeTxn applies producerID's marker read from (or written to) partition p.
func (c *Coordinator) completeTxn(p int32, producerID int64, commit bool) {
	byGroup := c.pendingTxn[producerID]
	for id, offs := range byGroup {
		if PartitionFor(id, c.cfg.NumPartitions) != p {
			continue
		}
		delete(byGroup, id)
		if !commit {
			continue
		}
		g := c.groups[id]
		if g == nil {
			g = newGroup(id, c.clock.Now())
			c.groups[id] = g
		}
		for tp, o := range offs {
			if cur, ok := g.offsets[tp]; !ok || cur.seq < o.seq {
				g.offsets[tp] = o
			}
		}
	}
	if byGroup != nil && len(byGroup) == 0 {
		delete(c.pendingTxn, producerID)
	}
}

// hasPendingTxnOffset reports whether some producer's transaction holds an undecided
// commit for group/tp.
func (c *Coordinator) hasPendingTxnOffset(group string, tp topicPartition) bool {
	for _, byGroup := range c.pendingTxn {
		if _, ok := byGroup[group][tp]; ok {
			return true
		}
	}
	return false
}

// replayTxnRecord handles a record of a transactional batch of producerID during
// replay: an offset commit becomes pending until the producer's marker.
func (c *Coordinator) replayTxnRecord(producerID int64, key, value []byte) {
	if len(key) < 2 || value == nil {
		return
	}
	if v := int16(key[0])<<8 | int16(key[1]); v != 0 && v != 1 {
		return
	}
	var k kmsg.OffsetCommitKey
	if k.ReadFrom(key) != nil {
		return
	}
	var v kmsg.OffsetCommitValue
	if v.ReadFrom(value) != nil {
		return
	}
	le := int32(-1)
	if v.Version >= 3 {
		le = v.LeaderEpoch
	}
	c.addPendingTxn(producerID, k.Group, topicPartition{k.Topic, k.Partition},
		committedOffset{offset: v.Offset, leaderEpoch: le, metadata: v.Metadata, commitMs: v.CommitTimestamp, seq: c.nextSeq()})
}

// dropPendingTxnOffsets forgets every producer's undecided commit for group/tp: a
// tombstone of the partition's offset (DeleteGroups, OffsetDelete) removes them, as in
// Kafka, so that a later commit marker does not bring the offset back.
func (c *Coordinator) dropPendingTxnOffsets(group string, tp topicPartition) {
	for pid, byGroup := range c.pendingTxn {
		offs := byGroup[group]
		if offs == nil {
			continue
		}
		delete(offs, tp)
		if len(offs) == 0 {
			delete(byGroup, group)
		}
		if len(byGroup) == 0 {
			delete(c.pendingTxn, pid)
		}
	}
}

// pendingTxnPartitions returns the partitions of group with an undecided transactional
// commit, each once.
func (c *Coordinator) pendingTxnPartitions(group string) []topicPartition {
	seen := make(map[topicPartition]bool)
	var out []topicPartition
	for _, byGroup := range c.pendingTxn {
		for tp := range byGroup[group] {
			if !seen[tp] {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	return out
}

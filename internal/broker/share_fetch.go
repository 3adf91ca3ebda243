// ShareFetch (key 78), v1–v2: records for a share-group member (KIP-932). The request
// opens (epoch 0), continues (the next epoch) or closes (-1) the member's share session,
// adds and forgets session partitions, carries acknowledgements of earlier deliveries,
// and acquires records for the member: first records released or whose acquisition lock
// expired, then new records from the end of the share partition's in-flight window, up
// to MaxRecords and the high watermark (read_uncommitted; control batches and offsets
// with no record are archived, never delivered). Acquired records are locked for
// group.share.record.lock.duration.ms. With nothing to acquire it waits up to
// MaxWaitMillis for new records or an expiring lock. v2 (Kafka 4.2) adds
// ShareAcquireMode (Sluice always stays within MaxRecords, which satisfies both modes)
// and RENEW acknowledgements (IsRenewAck). With an authorizer: READ on the group
// (GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions), as Kafka.
package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ShareFetch, (*Broker).handleShareFetch) }

// defaultShareMaxRecords is used when a request leaves MaxRecords at 0
// (Kafka's max.poll.records default).
const defaultShareMaxRecords = 500

// shareTarget is one partition named by a ShareFetch/ShareAcknowledge request
// or held by the share session.
type shareTarget struct {
	key   share.Key
	topic string
	part  *replica.Partition
	code  int16 // resolution error
	acks  []share.AckBatch
	// response state
	ackCode  int16
	ackMsg   *string
	acquired []share.Acquired
	records  []byte
	inReq    bool
}

// resolveShareTarget looks up topic id / partition for group; with an
// authorizer the topic needs READ (else TOPIC_AUTHORIZATION_FAILED).
func (b *Broker) resolveShareTarget(r *wire.Request, group string, id [16]byte, p int32) *shareTarget {
	t := &shareTarget{key: share.Key{Group: group, TopicID: id, Partition: p}}
	top, ok := b.topicByID(id)
	switch {
	case !ok:
		t.code = kerr.UnknownTopicID.Code
	case b.authz != nil && !b.allowed(r, authz.OpRead, authz.ResourceTopic, top.Name):
		t.code = kerr.TopicAuthorizationFailed.Code
	case p < 0 || p >= top.Partitions:
		t.code = kerr.UnknownTopicOrPartition.Code
	default:
		t.topic = top.Name
		if t.part = b.replicas.Get(top.Name, p); t.part == nil || t.part.Role() != replica.Leader {
			t.code = kerr.NotLeaderForPartition.Code
		} else if err := b.shares.Prepare(t.key, b.shareInitStart(t.part)); err != nil {
			// The share coordinator cannot give the partition's state yet
			// (share_coordinator.go): the client retries after a metadata refresh.
			b.logger.Info("share: reading share-partition state", "group", group, "topic", top.Name, "partition", p, "err", err)
			t.code = kerr.NotLeaderForPartition.Code
		}
	}
	return t
}

// shareAckBatches converts and validates acknowledgement batches.
func shareAckBatches[B any](in []B, get func(B) (int64, int64, []int8)) []share.AckBatch {
	out := make([]share.AckBatch, 0, len(in))
	for _, b := range in {
		f, l, t := get(b)
		out = append(out, share.AckBatch{First: f, Last: l, Types: t})
	}
	return out
}

// applyShareAcks applies t's acknowledgements for member.
func (b *Broker) applyShareAcks(t *shareTarget, member string, renew bool) {
	if len(t.acks) == 0 {
		return
	}
	if t.code != 0 {
		t.ackCode = t.code
		return
	}
	sp, err := b.shares.Get(t.key, b.shareInitStart(t.part))
	if err != nil {
		// Dropped since the request read it (fenced, or its leadership moved) and
		// not readable again now: the client retries after a metadata refresh.
		b.logger.Info("share: reading share-partition state", "group", t.key.Group, "topic", t.topic, "partition", t.key.Partition, "err", err)
		t.ackCode = kerr.NotLeaderForPartition.Code
		return
	}
	if err := sp.Acknowledge(member, t.acks, renew, b.shares.Now()); err != nil {
		if ae, ok := err.(*share.AckError); ok && ae.InvalidRequest {
			t.ackCode = kerr.InvalidRequest.Code
		} else {
			t.ackCode = kerr.InvalidRecordState.Code
		}
		msg := err.Error()
		t.ackMsg = &msg
		return
	}
	if err := b.shares.Persist(sp); err != nil {
		b.logger.Error("share: persisting acknowledgements", "group", t.key.Group, "topic", t.topic, "partition", t.key.Partition, "err", err)
		t.ackCode = kerr.KafkaStorageError.Code
	}
}

// shareInitStart returns the start offset of a new share partition over part.
func (b *Broker) shareInitStart(part *replica.Partition) func(string) int64 {
	return func(reset string) int64 {
		strategy, d, err := share.ParseAutoOffsetReset(reset)
		switch {
		case err != nil:
		case strategy == "earliest":
			return part.LogStartOffset()
		case strategy == "by_duration": // the first record written at most d ago, else the latest
			if off, _, ok := part.OffsetForTimestamp(time.Now().Add(-d).UnixMilli()); ok && off < part.HighWatermark() {
				return max(off, part.LogStartOffset())
			}
		}
		return part.HighWatermark()
	}
}

// acquireShare acquires up to maxRecords records of t for member and reads the
// batches holding them; it returns how many records were acquired.
//
// With committed (share.isolation.level=read_committed) it reads up to the
// last stable offset, and the batches of aborted transactions are archived
// like control batches.
func (b *Broker) acquireShare(t *shareTarget, member string, maxRecords int, maxBytes int, committed bool) int {
	sp, err := b.shares.Get(t.key, b.shareInitStart(t.part))
	if err != nil {
		b.logger.Info("share: reading share-partition state", "group", t.key.Group, "topic", t.topic, "partition", t.key.Partition, "err", err)
		return 0
	}
	logStart := t.part.LogStartOffset()
	from := sp.NeedsRead(logStart)
	var batches []share.Batch
	upper := t.part.HighWatermark()
	if committed {
		upper = t.part.LastStableOffset()
	}
	if from < upper {
		if res, err := t.part.Read(from, maxBytes, true, committed); err == nil {
			var aborted []log.AbortedTxn
			if committed {
				aborted = t.part.AbortedTxns(from, res.NextOffset)
			}
			if buf, err := res.Bytes(); err == nil {
				for len(buf) > 0 {
					h, err := batch.ParseHeader(buf)
					if err != nil || h.TotalSize() > len(buf) {
						break
					}
					skip := h.IsControl() || (h.IsTransactional() && abortedBatch(aborted, h.ProducerID, h.BaseOffset))
					batches = append(batches, share.Batch{First: h.BaseOffset, Last: h.LastOffset(), Control: skip})
					buf = buf[h.TotalSize():]
				}
			}
		}
	}
	acq := sp.Acquire(member, maxRecords, batches, logStart, b.shares.Now())
	if err := b.shares.Persist(sp); errors.Is(err, kerr.FencedStateEpoch) {
		// The state was initialized again since this copy read it: the copy is
		// dropped (share.Manager.Persist) and what it acquired is not delivered;
		// the next fetch reads the new state.
		b.logger.Info("share: share-partition state replaced; reading it again", "group", t.key.Group, "topic", t.topic, "partition", t.key.Partition)
		return 0
	} else if err != nil {
		b.logger.Error("share: persisting state", "group", t.key.Group, "topic", t.topic, "partition", t.key.Partition, "err", err)
	}
	if len(acq) == 0 {
		return 0
	}
	t.acquired = append(t.acquired, acq...)
	t.records = b.readShareRecords(t.part, acq)
	n := 0
	for _, a := range acq {
		n += int(a.Last - a.First + 1)
	}
	return n
}

// abortedBatch reports whether a transactional batch of producer pid at
// offset belongs to one of the aborted transactions.
func abortedBatch(aborted []log.AbortedTxn, pid, offset int64) bool {
	for _, a := range aborted {
		if a.ProducerID == pid && a.FirstOffset <= offset && offset < a.LastOffset {
			return true
		}
	}
	return false
}

// readShareRecords returns the whole batches of part holding the acquired
// offsets (the client delivers only the acquired records of each batch).
func (b *Broker) readShareRecords(part *replica.Partition, acq []share.Acquired) []byte {
	var out []byte
	off, last := acq[0].First, acq[len(acq)-1].Last
	for off <= last {
		res, err := part.Read(off, 1<<20, true, false)
		if err != nil {
			break
		}
		buf, err := res.Bytes()
		if err != nil || len(buf) == 0 {
			break
		}
		next := off
		for len(buf) > 0 {
			h, err := batch.ParseHeader(buf)
			if err != nil || h.TotalSize() > len(buf) {
				buf = nil
				break
			}
			one := buf[:h.TotalSize()]
			buf = buf[h.TotalSize():]
			next = h.LastOffset() + 1
			if h.BaseOffset > last {
				break
			}
			for _, a := range acq {
				if a.First <= h.LastOffset() && a.Last >= h.BaseOffset {
					out = append(out, one...)
					break
				}
			}
		}
		if next <= off {
			break
		}
		off = next
	}
	return out
}

func (b *Broker) handleShareFetch(ctx context.Context, r *wire.Request, req *kmsg.ShareFetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member := derefStr(req.GroupID), derefStr(req.MemberID)
	gcfg := b.shares.GroupConfig(group)
	resp.AcquisitionLockTimeoutMillis = int32(gcfg.RecordLockDuration / time.Millisecond)
	fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if group == "" {
		return fail(kerr.InvalidRequest, "GroupId must be set.")
	}
	if member == "" {
		return fail(kerr.InvalidRequest, "MemberId must be set.")
	}
	if req.ShareSessionEpoch < -1 {
		return fail(kerr.InvalidShareSessionEpoch, "")
	}
	if b.authz != nil && b.groupDenied(r, authz.OpRead, group) {
		return fail(kerr.GroupAuthorizationFailed, "")
	}
	var targets []*shareTarget
	var add, forget []share.Key
	hasAcks := false
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			t := b.resolveShareTarget(r, group, rt.TopicID, rp.Partition)
			t.inReq = true
			t.acks = shareAckBatches(rp.AcknowledgementBatches, func(a kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
				return a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
			})
			hasAcks = hasAcks || len(t.acks) > 0
			targets = append(targets, t)
			if t.code == 0 {
				add = append(add, t.key)
			}
		}
	}
	if hasAcks && req.ShareSessionEpoch == 0 {
		return fail(kerr.InvalidRequest, "Acknowledge data present in the initial share fetch request.")
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forget = append(forget, share.Key{Group: group, TopicID: ft.TopicID, Partition: p})
		}
	}
	if req.ShareSessionEpoch == -1 {
		add = nil // the final request of a session fetches nothing
	}
	session, code := b.shares.Session(group, member, req.ShareSessionEpoch, add, forget)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	renew := req.Version >= 2 && req.IsRenewAck
	for _, t := range targets {
		b.applyShareAcks(t, member, renew)
	}
	if req.ShareSessionEpoch == -1 {
		b.shares.CloseSession(group, member)
		b.buildShareFetchResponse(resp, targets)
		return resp, nil
	}
	// the session's partitions not named in this request are fetched too
	byKey := map[share.Key]*shareTarget{}
	for _, t := range targets {
		byKey[t.key] = t
	}
	fetch := make([]*shareTarget, 0, len(session))
	for _, k := range session {
		t := byKey[k]
		if t == nil {
			t = b.resolveShareTarget(r, group, k.TopicID, k.Partition)
			targets = append(targets, t)
			byKey[k] = t
		}
		fetch = append(fetch, t)
	}
	if n := len(fetch); n > 1 { // rotate, so that no partition starves the others of MaxRecords
		k := int(req.ShareSessionEpoch) % n
		fetch = append(fetch[k:], fetch[:k]...)
	}
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	if renew {
		deadline = time.Now() // a renew-only request does not wait for records
	}
	for {
		got := 0
		var waits []<-chan struct{}
		for _, t := range fetch {
			if t.code != 0 || got >= maxRecords {
				continue
			}
			waits = append(waits, t.part.Wait())
			got += b.acquireShare(t, member, maxRecords-got, maxBytes, gcfg.ReadCommitted)
		}
		if got > 0 || !time.Now().Before(deadline) || len(waits) == 0 || renew {
			break
		}
		wake := deadline
		for _, t := range fetch {
			if t.code == 0 {
				if sp := b.shares.Lookup(t.key); sp != nil {
					if d := sp.NextDeadline(); !d.IsZero() && d.Before(wake) {
						wake = d
					}
				}
			}
		}
		if !waitAny(ctx, waits, wake) && ctx.Err() != nil {
			break
		}
	}
	b.buildShareFetchResponse(resp, targets)
	return resp, nil
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// buildShareFetchResponse lists the partitions named in the request and those
// with records acquired.
func (b *Broker) buildShareFetchResponse(resp *kmsg.ShareFetchResponse, targets []*shareTarget) {
	idx := map[[16]byte]int{}
	for _, t := range targets {
		if !t.inReq && len(t.acquired) == 0 && t.code == 0 {
			continue
		}
		i, ok := idx[t.key.TopicID]
		if !ok {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = t.key.TopicID
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			idx[t.key.TopicID] = i
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = t.key.Partition
		rp.ErrorCode = t.code
		rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = t.ackCode, t.ackMsg
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		if t.part != nil {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.nodeID, t.part.LeaderEpoch()
		}
		rp.Records = t.records
		if rp.Records == nil {
			rp.Records = []byte{}
		}
		for _, a := range t.acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
}

// AlterShareGroupOffsets on a cluster: the group coordinator that receives it may hold
// no replica of the topic partition, or only a follower's. It asks the partition's
// leader, over the peer transport ("share-partition"), for the log start offset and
// the high watermark that -2 (earliest) and -1 (latest) stand for. Before the new
// state is written to the share coordinator, every copy of the share partition held in
// memory (this broker's and the leader's) is flushed ("flush"), so that no write of the
// old state can land after the new one; once it is written, the leader drops its copy
// ("forget"), so that its next use reads the new state.
package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/share"
)

// sharePartitionMsg asks a partition's leader for its offsets ("offsets"), to write
// its in-memory copy of a share partition ("flush") or to drop it ("forget").
type sharePartitionMsg struct {
	Op        string   `json:"op"`
	Group     string   `json:"group,omitempty"`
	TopicID   [16]byte `json:"topic_id"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
}

type sharePartitionAnswer struct {
	Code           int16 `json:"code"`
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

// sharePartitionLeader is the leader of topic-partition in the metadata image, and
// whether it is this broker (a single node is always its partitions' leader).
func (b *Broker) sharePartitionLeader(topic string, p int32) (leader int32, local bool, code int16) {
	im := b.image()
	if im == nil {
		return b.self(), true, 0
	}
	ip, ok := im.Partition(topic, p)
	if !ok {
		return 0, false, kerr.UnknownTopicOrPartition.Code
	}
	if ip.Leader == metadata.NoLeader {
		return 0, false, kerr.LeaderNotAvailable.Code
	}
	return ip.Leader, ip.Leader == b.self(), 0
}

// localShareOffsets answers "offsets" from this broker's replica, which must lead.
func (b *Broker) localShareOffsets(topic string, p int32) sharePartitionAnswer {
	part := b.replicas.Get(topic, p)
	if part == nil || part.Role() != replica.Leader {
		return sharePartitionAnswer{Code: kerr.NotLeaderForPartition.Code}
	}
	return sharePartitionAnswer{LogStartOffset: part.LogStartOffset(), HighWatermark: part.HighWatermark()}
}

// shareStartOffset resolves the start offset of AlterShareGroupOffsets: -1 is the
// high watermark and -2 the log start offset of the partition's leader; an offset
// is kept as it is. A non-zero code is the partition's error.
func (b *Broker) shareStartOffset(topic string, p int32, start int64) (int64, int16) {
	if start >= 0 {
		return start, 0
	}
	leader, local, code := b.sharePartitionLeader(topic, p)
	if code != 0 {
		return 0, code
	}
	var a sharePartitionAnswer
	if local {
		a = b.localShareOffsets(topic, p)
	} else {
		var err error
		if a, err = b.cluster.sharePartitionRemote(leader, sharePartitionMsg{Op: "offsets", Topic: topic, Partition: p}); err != nil {
			b.logger.Warn("share: asking the partition's leader for its offsets", "topic", topic, "partition", p, "leader", leader, "err", err)
			return 0, kerr.NotLeaderForPartition.Code // retriable: the client asks again
		}
	}
	if a.Code != 0 {
		return 0, a.Code
	}
	if start == -1 {
		return a.HighWatermark, 0
	}
	return a.LogStartOffset, 0
}

// shareLeaderHighWatermark is the high watermark of topic-partition at its leader,
// part's if this broker leads it (-1: unknown). DescribeShareGroupOffsets counts
// the lag to it.
func (b *Broker) shareLeaderHighWatermark(topic string, p int32, part *replica.Partition) int64 {
	if part != nil && part.Role() == replica.Leader {
		return part.HighWatermark()
	}
	leader, local, code := b.sharePartitionLeader(topic, p)
	if code != 0 || local || b.cluster == nil {
		return -1
	}
	a, err := b.cluster.sharePartitionRemote(leader, sharePartitionMsg{Op: "offsets", Topic: topic, Partition: p})
	if err != nil || a.Code != 0 {
		return -1
	}
	return a.HighWatermark
}

// imageLeaderEpoch is the leader epoch of topic-partition in the metadata image
// (-1: unknown).
func (b *Broker) imageLeaderEpoch(topic string, p int32) int32 {
	im := b.image()
	if im == nil {
		return -1
	}
	ip, ok := im.Partition(topic, p)
	if !ok {
		return -1
	}
	return ip.LeaderEpoch
}

// flushShareCopy writes this broker's in-memory copy of share partition k, if it has
// one and it changed since its last write (share.Manager.Persist, under the lock that
// orders every write of the manager): once it returns, no earlier write of the copy
// is in flight, and the copy is marked written, so that a later Persist of it finds
// nothing to write. ExpireAll persists, every second, the copies it listed before it
// writes them: without this, a copy listed before AlterShareGroupOffsets dropped or
// replaced it could write the old state over the new one. A copy that is fenced (its
// broker no longer leads the partition, or its state was initialized again since it
// read it, which drops it) cannot write either; the new state is initialized with a
// higher state epoch (share.Manager.ResetStart), so such a write of the old copy is
// fenced too. A share coordinator not there yet is waited for, as the write of the new
// state does (retryShareState).
func (b *Broker) flushShareCopy(ctx context.Context, k share.Key) error {
	sp := b.shares.Lookup(k)
	if sp == nil {
		return nil
	}
	err := retryShareState(ctx, func() error { return b.shares.Persist(sp) })
	if err != nil && !errors.Is(err, kerr.FencedLeaderEpoch) && !errors.Is(err, kerr.FencedStateEpoch) {
		return err
	}
	return nil
}

// flushSharePartitionCopies prepares AlterShareGroupOffsets' write (or
// DeleteShareGroupOffsets' tombstone) of share partition k: this broker's copy and the partition leader's are flushed (flushShareCopy), so
// that neither can write the old state after the new one. A non-zero code (retriable:
// the client sends the request again) is the partition's error when that cannot be
// made sure of: the state is then not written. Without a leader in this broker's
// metadata image (the topic not published here yet, or its leader just lost), the
// broker that still holds a copy is unknown: LEADER_NOT_AVAILABLE (or
// UNKNOWN_TOPIC_OR_PARTITION), as Kafka answers a partition without a leader.
func (b *Broker) flushSharePartitionCopies(ctx context.Context, k share.Key, topic string) (int16, string) {
	if err := b.flushShareCopy(ctx, k); err != nil {
		b.logger.Warn("share: writing this broker's copy of the share partition before altering it", "group", k.Group, "topic", topic, "partition", k.Partition, "err", err)
		return shareStateErrorCode(err), "The share partition's state could not be written before it is replaced; send the request again."
	}
	if b.image() == nil {
		return 0, ""
	}
	leader, local, code := b.sharePartitionLeader(topic, k.Partition)
	if code != 0 {
		return code, "The partition has no leader in this broker's metadata yet; send the request again."
	}
	if local {
		return 0, ""
	}
	m := sharePartitionMsg{Op: "flush", Group: k.Group, TopicID: k.TopicID, Topic: topic, Partition: k.Partition}
	a, err := b.cluster.sharePartitionRemote(leader, m)
	if err != nil {
		b.logger.Warn("share: asking the partition's leader to write its share state", "group", k.Group, "topic", topic, "partition", k.Partition, "leader", leader, "err", err)
		return kerr.NotLeaderForPartition.Code, fmt.Sprintf("The partition's leader (broker %d) could not be reached; send the request again.", leader)
	}
	return a.Code, ""
}

// replaceShareState writes new state for share partition k (or deletes it) with
// write, retried while the share coordinator is not there yet, between
// flushSharePartitionCopies and forgetSharePartitionCopies, so that no copy of the
// old state is written after the new one or goes on serving. It returns the
// partition's error code and message, 0 and nil when all went through; what is
// logged on a failed write names the operation.
func (b *Broker) replaceShareState(ctx context.Context, k share.Key, topic, op string, write func() error) (int16, *string) {
	if code, msg := b.flushSharePartitionCopies(ctx, k, topic); code != 0 {
		if msg == "" {
			return code, nil
		}
		return code, &msg
	}
	if err := retryShareState(ctx, write); err != nil {
		b.logger.Error("share: "+op, "group", k.Group, "topic", topic, "partition", k.Partition, "err", err)
		return shareStateErrorCode(err), nil
	}
	if err := b.forgetSharePartitionCopies(k, topic); err != nil {
		msg := err.Error()
		return kerr.CoordinatorNotAvailable.Code, &msg
	}
	return 0, nil
}

// forgetSharePartitionCopies drops the in-memory copies of share partition k that no
// longer hold its state after AlterShareGroupOffsets wrote it (or
// DeleteShareGroupOffsets deleted it): this broker's if it
// does not lead the partition, and the leader's if the leader is another broker. A
// leader that cannot be told would keep its copy and could later write it over the
// new state: the error is returned (the request is answered with a retriable error
// for the partition, so the reset is sent again rather than reported done), and so it
// is when this broker no longer sees a leader (flushSharePartitionCopies saw one).
func (b *Broker) forgetSharePartitionCopies(k share.Key, topic string) error {
	if b.image() == nil {
		return nil
	}
	leader, local, code := b.sharePartitionLeader(topic, k.Partition)
	if local {
		return nil
	}
	b.shares.ForgetKey(k)
	if code != 0 {
		return fmt.Errorf("the share partition's new state is stored, but the partition has no leader in this broker's metadata to drop its copy of the old state (%w); send the request again", kerr.ErrorForCode(code))
	}
	m := sharePartitionMsg{Op: "forget", Group: k.Group, TopicID: k.TopicID, Topic: topic, Partition: k.Partition}
	if _, err := b.cluster.sharePartitionRemote(leader, m); err != nil {
		b.logger.Warn("share: telling the partition's leader to reload the share state", "group", k.Group, "topic", topic, "partition", k.Partition, "leader", leader, "err", err)
		return fmt.Errorf("the share partition's new state is stored, but the partition's leader (broker %d) could not be told to reload it; send the request again: %w", leader, err)
	}
	return nil
}

// sharePartitionRemote sends m to broker id.
func (c *clusterNode) sharePartitionRemote(id int32, m sharePartitionMsg) (sharePartitionAnswer, error) {
	addr, ok := c.peers.Addr(uint64(id))
	if !ok {
		return sharePartitionAnswer{}, fmt.Errorf("broker %d has no peer address", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out sharePartitionAnswer
	if err := c.peers.Call(ctx, addr, "share-partition", m, &out); err != nil {
		return sharePartitionAnswer{}, fmt.Errorf("broker %d: %w", id, err)
	}
	return out, nil
}

// sharePartitionLocal serves another broker's sharePartitionRemote.
func (c *clusterNode) sharePartitionLocal(ctx context.Context, m sharePartitionMsg) (sharePartitionAnswer, error) {
	switch m.Op {
	case "offsets":
		return c.b.localShareOffsets(m.Topic, m.Partition), nil
	case "flush":
		// The copy is written even if this broker no longer leads the partition;
		// the answer then tells the sender, whose metadata is behind, to try again
		// (the new leader may hold a copy).
		// Within the sender's 10 s (sharePartitionRemote).
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.b.flushShareCopy(fctx, share.Key{Group: m.Group, TopicID: m.TopicID, Partition: m.Partition})
		cancel()
		if err != nil {
			c.b.logger.Warn("share: writing the share state before it is altered", "group", m.Group, "topic", m.Topic, "partition", m.Partition, "err", err)
			return sharePartitionAnswer{Code: shareStateErrorCode(err)}, nil
		}
		if part := c.b.replicas.Get(m.Topic, m.Partition); part == nil || part.Role() != replica.Leader {
			return sharePartitionAnswer{Code: kerr.NotLeaderForPartition.Code}, nil
		}
		return sharePartitionAnswer{}, nil
	case "forget":
		c.b.shares.ForgetKey(share.Key{Group: m.Group, TopicID: m.TopicID, Partition: m.Partition})
		return sharePartitionAnswer{}, nil
	}
	return sharePartitionAnswer{}, fmt.Errorf("share-partition: unknown operation %q", m.Op)
}

// AlterShareGroupOffsets on a cluster: the group coordinator that receives it may hold
// no replica of the topic partition, or only a follower's. It asks the partition's
// leader, over the peer transport ("share-partition"), for the log start offset and
// the high watermark that -2 (earliest) and -1 (latest) stand for, and, once the new
// state is written to the share coordinator, has the leader drop the copy of the share
// partition it holds in memory, so that the leader's next use reads the new state.
package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/share"
)

// sharePartitionMsg asks a partition's leader for its offsets ("offsets") or to drop
// its in-memory copy of a share partition ("forget").
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

// forgetSharePartitionCopies drops the in-memory copies of share partition k that no
// longer hold its state after AlterShareGroupOffsets wrote it: this broker's if it
// does not lead the partition, and the leader's if the leader is another broker. A
// leader that cannot be told would keep its copy and could later write it over the
// new state: the error is returned (the request is answered with a retriable error
// for the partition, so the reset is sent again rather than reported done).
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
		return nil // no leader now: the next one reads the state again
	}
	m := sharePartitionMsg{Op: "forget", Group: k.Group, TopicID: k.TopicID, Topic: topic, Partition: k.Partition}
	if _, err := b.cluster.sharePartitionRemote(leader, m); err != nil {
		b.logger.Warn("share: telling the partition's leader to reload the share state", "group", k.Group, "topic", topic, "partition", k.Partition, "leader", leader, "err", err)
		return fmt.Errorf("the new start offset is stored, but the partition's leader (broker %d) could not be told to reload it; send the request again: %w", leader, err)
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
func (c *clusterNode) sharePartitionLocal(_ context.Context, m sharePartitionMsg) (sharePartitionAnswer, error) {
	switch m.Op {
	case "offsets":
		return c.b.localShareOffsets(m.Topic, m.Partition), nil
	case "forget":
		c.b.shares.ForgetKey(share.Key{Group: m.Group, TopicID: m.TopicID, Partition: m.Partition})
		return sharePartitionAnswer{}, nil
	}
	return sharePartitionAnswer{}, fmt.Errorf("share-partition: unknown operation %q", m.Op)
}

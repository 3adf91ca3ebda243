package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/metrics"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
)

// The broker's partitions live in b.replicas (internal/replica): every data
// handler reaches a partition's log through its replica.Partition, which
// knows this broker's role, the leader epoch and the in-sync set. Where
// those come from is the metadata's business; on a single node it is
// localState: this broker leads every partition, epoch 0, sole replica.

// partition returns the local partition topic/partition with its topic, or
// UNKNOWN_TOPIC_OR_PARTITION when the topic or the partition does not exist.
// Data-path handlers use it for every partition of a request and then ask
// the partition whether this broker may serve it (CheckLeader).
func (b *Broker) partition(topic string, partition int32) (*replica.Partition, *topics.Topic, int16) {
	t, ok := b.topics.Get(topic)
	if !ok || partition < 0 || partition >= t.Partitions {
		return nil, nil, kerr.UnknownTopicOrPartition.Code
	}
	p := b.replicas.Get(topic, partition)
	if p == nil {
		if b.cluster != nil {
			// The partition exists but has no replica here: the client's
			// metadata is stale; it refreshes and goes to the leader.
			return nil, nil, kerr.NotLeaderForPartition.Code
		}
		return nil, nil, kerr.UnknownTopicOrPartition.Code
	}
	return p, t, 0
}

// partitionExists answers UNKNOWN_TOPIC_OR_PARTITION (0 when it exists)
// for a partition of the cluster, wherever it lives: the transaction
// coordinator accepts partitions led by other brokers.
func (b *Broker) partitionExists(topic string, partition int32) int16 {
	t, ok := b.topics.Get(topic)
	if !ok || partition < 0 || partition >= t.Partitions {
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}

// localState is the state a single-node broker gives each partition: it is
// the leader, the only replica and the only in-sync replica, in leader epoch
// 0 (the epoch every batch written by earlier releases carries).
func (b *Broker) localState() replica.State {
	self := b.replicas.Self()
	return replica.State{Leader: self, LeaderEpoch: 0, Replicas: []int32{self}, ISR: []int32{self}}
}

// assignPartitions hands partitions [from, to) of topic, whose logs exist and
// which the metadata lists, to the partition layer; listeners (the
// coordinators of internal topics) hear that this broker leads them.
func (b *Broker) assignPartitions(topic string, from, to int32) error {
	for p := from; p < to; p++ {
		l := b.logs.Get(topic, p)
		if l == nil {
			return fmt.Errorf("sluice: %s-%d has no log", topic, p)
		}
		if _, err := b.replicas.Apply(l, b.localState()); err != nil {
			return err
		}
	}
	return nil
}

// assignAll assigns every partition of every topic (at start, after
// reconcile opened the logs). The internal topics come last: loading a
// __transaction_state partition completes the transactions found prepared,
// whose markers go to data partitions that must be served by then.
func (b *Broker) assignAll() error {
	if b.clusterCfg != nil {
		return nil // a cluster node's partitions follow the metadata (publish)
	}
	list := b.topics.List()
	for _, internal := range []bool{false, true} {
		for _, t := range list {
			if topics.IsInternal(t.Name) != internal {
				continue
			}
			if err := b.assignPartitions(t.Name, 0, t.Partitions); err != nil {
				return err
			}
		}
	}
	return nil
}

// unassignPartitions takes partitions [from, to) of topic out of the
// partition layer before their logs are deleted.
func (b *Broker) unassignPartitions(topic string, from, to int32) {
	for p := from; p < to; p++ {
		b.replicas.Remove(topic, p)
	}
}

// partitionView is a partition as Metadata and DescribeTopicPartitions
// report it.
type partitionView struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32 // replicas on brokers that are not live
}

// partitionInfo describes topic/partition from its state in the partition
// layer; a partition without one (its log failed to open) has no leader.
func (b *Broker) partitionInfo(topic string, partition int32) partitionView {
	if im := b.image(); im != nil {
		ip, ok := im.Partition(topic, partition)
		if !ok {
			return partitionView{Leader: replica.NoLeader, LeaderEpoch: -1, Replicas: []int32{}, ISR: []int32{}, Offline: []int32{}}
		}
		v := partitionView{Leader: ip.Leader, LeaderEpoch: ip.LeaderEpoch, Replicas: ip.Replicas, ISR: ip.ISR, Offline: []int32{}}
		for _, r := range ip.Replicas {
			if !im.IsLive(r) {
				v.Offline = append(v.Offline, r)
			}
		}
		return v
	}
	p := b.replicas.Get(topic, partition)
	if p == nil {
		return partitionView{Leader: replica.NoLeader, LeaderEpoch: -1, Replicas: []int32{}, ISR: []int32{}, Offline: []int32{}}
	}
	st := p.State()
	v := partitionView{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Replicas: st.Replicas, ISR: st.ISR, Offline: []int32{}}
	for _, r := range st.Replicas {
		if !b.isLiveBroker(r) {
			v.Offline = append(v.Offline, r)
		}
	}
	return v
}

// loadLedPartitions loads the partitions of topic this broker already leads
// (assigned before the coordinator listened: a new single node creates
// __consumer_offsets before its group coordinator exists).
func (b *Broker) loadLedPartitions(topic string, load func(int32) error) error {
	for _, p := range b.replicas.Partitions() {
		if p.Topic() == topic && p.Role() == replica.Leader {
			if err := load(p.Index()); err != nil {
				return err
			}
		}
	}
	return nil
}

// internalPartitionListener makes a coordinator follow the leadership of its
// internal topic's partitions: it loads a partition when this broker becomes
// its leader and unloads it when the broker stops leading it or it is
// removed.
func internalPartitionListener(topic string, load func(int32) error, unload func(int32)) replica.Listener {
	return func(e replica.Event) error {
		if e.Partition.Topic() != topic {
			return nil
		}
		if e.Kind == replica.BecameLeader {
			return load(e.Partition.Index())
		}
		unload(e.Partition.Index())
		return nil
	}
}

// replicationCounts are the replication gauges: under-replicated partitions
// this broker leads; on the active controller (a single node is its own)
// the partitions without a live leader.
func (b *Broker) replicationCounts() metrics.ReplicationCounts {
	var c metrics.ReplicationCounts
	for _, p := range b.replicas.Partitions() {
		if st := p.State(); st.Leader == b.self() && len(st.ISR) < len(st.Replicas) {
			c.UnderReplicated++
		}
	}
	if b.cluster == nil {
		c.ActiveController = 1
		return c
	}
	if !b.cluster.ctrl.Active() {
		return c
	}
	c.ActiveController = 1
	im := b.image()
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == metadata.NoLeader || !im.IsLive(p.Leader) {
				c.Offline++
			}
		}
	}
	return c
}

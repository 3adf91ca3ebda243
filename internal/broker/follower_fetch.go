package broker

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/wire"
)

// Follower fetching (KIP-392). With replica.selector.class set to Kafka's
// RackAwareReplicaSelector, a cluster node that leads a partition answers a
// consumer's Fetch (v11+) that names its rack (client.rack → rack_id) with
// preferred_read_replica when an in-sync replica in that rack holds the
// fetch offset and the leader itself is in another rack: no records, the
// leader's offsets, and the consumer fetches from that replica from then
// on. Any replica serves a consumer's Fetch v11+ (CheckReplica: the leader
// epoch rules, NOT_LEADER_OR_FOLLOWER on a non-replica) up to its own high
// watermark; a fetch offset past its log end is OFFSET_OUT_OF_RANGE, on
// which clients go back to the leader. sluice_consumer_fetch_bytes_total
// counts the record bytes served to consumers, by this broker's role.

const rackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// followerFetchVersion is the first Fetch version a follower may serve to
// a consumer (and that carries rack_id).
const followerFetchVersion = 11

// rackAwareSelection reports whether replica.selector.class selects by rack.
func (b *Broker) rackAwareSelection() bool {
	return b.cluster != nil && strings.TrimSpace(b.cfg.Raw["replica.selector.class"]) == rackAwareReplicaSelector
}

// preferredReadReplica is Kafka's RackAwareReplicaSelector on the leader:
// among the candidate replicas (in sync, holding fetchOffset, live, with an
// endpoint on the consumer's listener) in the consumer's rack, the leader if
// it is one, else the one with the largest log end offset (then the most
// recently caught up). ok is false when the consumer should stay on the
// leader.
func (b *Broker) preferredReadReplica(r *wire.Request, p *replica.Partition, fetchOffset int64, rack string) (int32, bool) {
	if rack == "" || !b.rackAwareSelection() {
		return -1, false
	}
	im := b.image()
	listener := b.listenerName(r)
	var best *replica.ReplicaView
	for i, v := range p.ReadReplicaCandidates(fetchOffset, time.Now()) {
		reg, ok := im.Broker(v.ID)
		if !ok || reg.Fenced || reg.Rack != rack {
			continue
		}
		if _, ok := reg.Endpoint(listener); !ok {
			continue
		}
		if i == 0 {
			return -1, false // the leader is in the consumer's rack
		}
		if best == nil || v.LogEndOffset > best.LogEndOffset ||
			(v.LogEndOffset == best.LogEndOffset && v.SinceCaughtUp < best.SinceCaughtUp) {
			best = &v
		}
	}
	if best == nil {
		return -1, false
	}
	return best.ID, true
}

// choosePreferredReplicas marks the consumer fetch's partitions that the
// leader sends to a replica in the consumer's rack.
func (b *Broker) choosePreferredReplicas(r *wire.Request, req *kmsg.FetchRequest, targets []fetchTarget, offsets func(int) int64) {
	if req.Version < followerFetchVersion || req.Rack == "" || !b.rackAwareSelection() {
		return
	}
	for i := range targets {
		ft := &targets[i]
		if ft.p == nil || ft.p.Role() != replica.Leader {
			continue
		}
		if id, ok := b.preferredReadReplica(r, ft.p, offsets(i), req.Rack); ok {
			ft.preferred, ft.hasPreferred = id, true
		}
	}
}

// countConsumerBytes adds the record bytes a consumer fetch returned to the
// per-role and the per-topic counters.
func (b *Broker) countConsumerBytes(targets []fetchTarget) {
	for i := range targets {
		ft := &targets[i]
		if ft.p == nil || ft.err != nil || ft.res.Size == 0 {
			continue
		}
		b.metrics.ConsumerFetched(ft.p.Role() != replica.Leader, ft.res.Size)
		ft.p.TopicStats(b.metrics).Fetched(ft.res.Size)
	}
}

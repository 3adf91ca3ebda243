package broker

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
)

// Replication throttling, as Kafka's: leader.replication.throttled.rate
// (bytes/s, server.properties) bounds what this broker serves as a leader
// to follower fetches of the partitions listed in their topic's
// leader.replication.throttled.replicas ("partition:broker,…" naming this
// broker, or "*"); follower.replication.throttled.rate bounds what it
// fetches as a follower of the partitions listed in
// follower.replication.throttled.replicas. While a quota is used up, the
// throttled partitions are left out (the leader answers them without
// records, the follower does not ask for them), and a fetch takes no more
// than the quota holds (at least one batch); other partitions are not held
// back. The followers' positions are still recorded, so high watermarks keep
// moving for what they have. The rates are read from server.properties and
// can be set dynamically (per broker or as the cluster-wide default, as
// kafka-reassign-partitions --throttle does); a change applies at once.

// replicationQuota is a byte budget refilled at rate per second, holding at
// most one second's worth (rate <= 0: unlimited).
type replicationQuota struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

func newReplicationQuota(rate int64) *replicationQuota {
	if rate <= 0 || rate == 1<<63-1 {
		return nil
	}
	return &replicationQuota{rate: float64(rate), tokens: float64(rate)}
}

func (q *replicationQuota) refill(now time.Time) {
	if !q.last.IsZero() {
		q.tokens = min(q.rate, q.tokens+now.Sub(q.last).Seconds()*q.rate)
	}
	q.last = now
}

// exceeded reports whether the budget is used up (nil: never).
func (q *replicationQuota) exceeded(now time.Time) bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refill(now)
	return q.tokens <= 0
}

// allowance is what the budget holds now (at least 0).
func (q *replicationQuota) allowance(now time.Time) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refill(now)
	return int64(max(q.tokens, 0))
}

// record takes n bytes from the budget (it may go below zero: the next
// sends wait until it has refilled).
func (q *replicationQuota) record(n int64, now time.Time) {
	if q == nil || n <= 0 {
		return
	}
	q.mu.Lock()
	q.refill(now)
	q.tokens -= float64(n)
	q.mu.Unlock()
}

// throttledReplica reports whether list (a *.replication.throttled.replicas
// value) names partition on broker, or is "*".
func throttledReplica(list string, partition, broker int32) bool {
	list = strings.TrimSpace(list)
	if list == "" {
		return false
	}
	if list == "*" {
		return true
	}
	want := strconv.Itoa(int(partition)) + ":" + strconv.Itoa(int(broker))
	for _, e := range strings.Split(list, ",") {
		if strings.TrimSpace(e) == want {
			return true
		}
	}
	return false
}

// replicationQuotas are the broker's two throttles, built from the
// effective configuration (server.properties and the dynamic broker
// configs, dynamic_configs.go) and rebuilt after a dynamic change.
type replicationQuotas struct {
	cur atomic.Pointer[replicationQuotaPair]
}

type replicationQuotaPair struct {
	leader, follower *replicationQuota
}

// reset drops the throttles; the next use rebuilds them from the
// configuration in effect.
func (q *replicationQuotas) reset() { q.cur.Store(nil) }

func (b *Broker) replThrottles() *replicationQuotaPair {
	q := &b.replQuotas
	if p := q.cur.Load(); p != nil {
		return p
	}
	cfg := b.conf()
	rate := func(name string) int64 {
		v, _ := cfg.Explicit(name)
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	p := &replicationQuotaPair{leader: newReplicationQuota(rate("leader.replication.throttled.rate")),
		follower: newReplicationQuota(rate("follower.replication.throttled.rate"))}
	if q.cur.CompareAndSwap(nil, p) {
		return p
	}
	if cur := q.cur.Load(); cur != nil {
		return cur
	}
	return p
}

// leaderThrottled reports whether this leader's answer to a follower for
// topic/partition counts against leader.replication.throttled.rate.
func (b *Broker) leaderThrottled(topic string, partition int32) bool {
	if b.replThrottles().leader == nil {
		return false
	}
	t, ok := b.topics.Get(topic)
	return ok && throttledReplica(b.topicSetting(t, "leader.replication.throttled.replicas"), partition, b.self())
}

// followerThrottled reports whether this follower's fetch of
// topic/partition counts against follower.replication.throttled.rate.
func (b *Broker) followerThrottled(t *topics.Topic, partition int32) bool {
	return b.replThrottles().follower != nil &&
		throttledReplica(b.topicSetting(t, "follower.replication.throttled.replicas"), partition, b.self())
}

// readForReplica serves a follower's fetch of one partition: within
// leader.replication.throttled.rate for throttled replicas (none while the
// quota is used up; the follower's position is recorded all the same).
// logStart is the follower's log start offset (DeleteRecords' low
// watermark).
func (b *Broker) readForReplica(ft *fetchTarget, replica int32, offset, logStart, limit int64, minOne bool) (log.ReadResult, error) {
	now := time.Now()
	ft.p.NoteReplicaLogStart(replica, logStart)
	if !b.leaderThrottled(ft.topic, ft.p.Index()) {
		return ft.p.ReadForReplica(replica, offset, int(limit), minOne, now)
	}
	q := b.replThrottles().leader
	if q.exceeded(now) {
		return ft.p.ReadForReplica(replica, offset, 0, false, now)
	}
	// No more than the budget holds (but at least one batch), so one
	// fetch does not take many seconds' worth at once.
	res, err := ft.p.ReadForReplica(replica, offset, int(min(limit, q.allowance(now))), true, now)
	q.record(res.Size, now)
	return res, err
}

// followerQuotaUsed reports whether this follower must leave p out of its
// next fetch (throttled, and follower.replication.throttled.rate used up).
func (b *Broker) followerQuotaUsed(p *replica.Partition, now time.Time) bool {
	q := b.replThrottles().follower
	if q == nil {
		return false
	}
	t, ok := b.topics.Get(p.Topic())
	return ok && b.followerThrottled(t, p.Index()) && q.exceeded(now)
}

// recordFollowerBytes counts n fetched bytes of p against the follower
// quota when p is throttled.
func (b *Broker) recordFollowerBytes(p *replica.Partition, n int) {
	q := b.replThrottles().follower
	if q == nil {
		return
	}
	if t, ok := b.topics.Get(p.Topic()); ok && b.followerThrottled(t, p.Index()) {
		q.record(int64(n), time.Now())
	}
}

// followerFetchBytes is the partition_max_bytes of a follower fetch of p:
// limit, or for a throttled partition what the follower quota holds (at
// least 1: the leader always sends one batch).
func (b *Broker) followerFetchBytes(p *replica.Partition, limit int32, now time.Time) int32 {
	q := b.replThrottles().follower
	if q == nil {
		return limit
	}
	if t, ok := b.topics.Get(p.Topic()); ok && b.followerThrottled(t, p.Index()) {
		return int32(min(int64(limit), q.allowance(now)+1))
	}
	return limit
}

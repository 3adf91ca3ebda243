package broker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
)

// Followers fetch from their leaders with Kafka's own Fetch (replica id
// set), so the leader's zero-copy fetch path serves replication too. One
// fetcher per leader broker carries every partition this broker follows
// there. A partition that starts following a leader epoch first asks the
// leader where that epoch's log ends (OffsetForLeaderEpoch, KIP-101/279) and
// truncates a diverged suffix; then it appends the leader's batches as they
// are and takes the leader's high watermark.
//
// Leaders keep their in-sync sets (isrLoop): a follower that has not caught
// up for replica.lag.time.max.ms leaves, one that caught up joins, proposed
// to the controller (AlterPartition) and applied when committed.

// fetchedPartition is one partition a fetcher replicates.
type fetchedPartition struct {
	p         *replica.Partition
	topicID   [16]byte
	epoch     int32 // the leader epoch being followed
	truncated bool  // the log was checked against the leader for epoch
	pos       int64 // the offset the last Fetch asked for
	copying   bool  // the log is a copy of the leader's from an empty start (replica_recopy.go)
	copyTo    int64 // the leader's high watermark when the copy began
}

// leaderFetcher replicates the partitions led by one broker.
type leaderFetcher struct {
	c      *clusterNode
	leader int32
	addr   string
	rc     *replicaConn // used by run only (stop closes it after run ended)
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	parts map[log.TopicPartition]*fetchedPartition
}

// fetchers are a cluster node's leader fetchers by leader id.
type fetchers struct {
	mu sync.Mutex
	m  map[int32]*leaderFetcher
}

// updateFetchers makes the fetchers follow the partition layer: every local
// partition this broker follows (with a live leader) is fetched from its
// leader; others are dropped; fetchers with nothing to do stop.
func (c *clusterNode) updateFetchers(im *metadata.Image) {
	want := map[int32]map[log.TopicPartition]*fetchedPartition{}
	// A follower of another broker has at least two replicas: only those
	// are looked at (not all, sorted: 100,000 of them on a busy node).
	for _, p := range c.b.replicas.Replicated() {
		st := p.State()
		if p.Role() != replica.Follower || st.Leader == replica.NoLeader || st.Leader == c.cfg.nodeID {
			continue
		}
		t, ok := c.b.topics.Get(p.Topic())
		if !ok {
			continue
		}
		if want[st.Leader] == nil {
			want[st.Leader] = map[log.TopicPartition]*fetchedPartition{}
		}
		want[st.Leader][log.TopicPartition{Topic: p.Topic(), Partition: p.Index()}] =
			&fetchedPartition{p: p, topicID: t.ID, epoch: st.LeaderEpoch}
	}
	c.fetch.mu.Lock()
	defer c.fetch.mu.Unlock()
	if c.fetch.m == nil {
		c.fetch.m = map[int32]*leaderFetcher{}
	}
	for id, f := range c.fetch.m {
		addr := c.leaderAddr(im, id)
		if len(want[id]) == 0 || addr != f.addr {
			f.stop()
			delete(c.fetch.m, id)
		}
	}
	for id, parts := range want {
		f := c.fetch.m[id]
		if f == nil {
			addr := c.leaderAddr(im, id)
			if addr == "" {
				continue
			}
			var err error
			if f, err = c.startFetcher(id, addr); err != nil {
				c.logger.Warn("cannot start a replica fetcher", "leader", id, "err", err)
				continue
			}
			c.fetch.m[id] = f
		}
		f.mu.Lock()
		for tp, np := range parts {
			if old, ok := f.parts[tp]; ok && old.p == np.p && old.epoch == np.epoch {
				continue // keep its truncation state
			}
			f.parts[tp] = np
		}
		for tp := range f.parts {
			if _, ok := parts[tp]; !ok {
				delete(f.parts, tp)
			}
		}
		f.mu.Unlock()
	}
}

// leaderAddr is broker id's address on the inter-broker listener
// (interbroker.go).
func (c *clusterNode) leaderAddr(im *metadata.Image, id int32) string {
	if c.ib == nil {
		return ""
	}
	return c.ib.addr(im, id)
}

func (c *clusterNode) startFetcher(leader int32, addr string) (*leaderFetcher, error) {
	rc := newReplicaConn(c.ib, addr, "sluice-replica-fetcher-"+strconv.Itoa(int(c.cfg.nodeID)), c.cfg.fetch.answerBytes)
	ctx, cancel := context.WithCancel(context.Background())
	f := &leaderFetcher{c: c, leader: leader, addr: addr, rc: rc, cancel: cancel, done: make(chan struct{}),
		parts: map[log.TopicPartition]*fetchedPartition{}}
	go f.run(ctx)
	return f, nil
}

func (f *leaderFetcher) stop() {
	f.cancel()
	<-f.done
	f.rc.close()
}

// stopFetchers stops every fetcher (shutdown).
func (c *clusterNode) stopFetchers() {
	c.fetch.mu.Lock()
	defer c.fetch.mu.Unlock()
	for id, f := range c.fetch.m {
		f.stop()
		delete(c.fetch.m, id)
	}
}

func (f *leaderFetcher) snapshot() []*fetchedPartition {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*fetchedPartition, 0, len(f.parts))
	for _, p := range f.parts {
		out = append(out, p)
	}
	return out
}

func (f *leaderFetcher) run(ctx context.Context) {
	defer close(f.done)
	backoff := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
			return true
		}
	}
	for ctx.Err() == nil {
		parts := f.snapshot()
		if len(parts) == 0 {
			if !backoff() {
				return
			}
			continue
		}
		for _, fp := range parts {
			if !fp.truncated {
				if err := f.truncate(ctx, fp); err != nil {
					if ctx.Err() == nil {
						f.c.logger.Debug("replica truncation check failed; retrying", "partition", fp.p.String(), "err", err)
					}
					continue
				}
			}
		}
		if err := f.fetchOnce(ctx, parts); err != nil && ctx.Err() == nil {
			f.c.logger.Debug("replica fetch failed; retrying", "leader", f.leader, "err", err)
			if !backoff() {
				return
			}
		}
	}
}

// truncate asks the leader where fp's latest epoch ends in its log and cuts
// this replica's log there if it goes further (a suffix the leader does not
// have: written under an older leader and never committed).
func (f *leaderFetcher) truncate(ctx context.Context, fp *fetchedPartition) error {
	latest := fp.p.LatestEpoch()
	if latest < 0 || fp.p.LogEndOffset() == 0 {
		fp.truncated = true
		return nil
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.c.cfg.nodeID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = fp.p.Topic()
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition = fp.p.Index()
	rp.CurrentLeaderEpoch = fp.epoch
	rp.LeaderEpoch = latest
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := f.rc.requestSmall(ctx, req, 5*time.Second)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("malformed OffsetForLeaderEpoch answer")
	}
	ans := resp.Topics[0].Partitions[0]
	if ans.ErrorCode != 0 {
		return kerr.ErrorForCode(ans.ErrorCode)
	}
	end := ans.EndOffset
	if ans.LeaderEpoch < 0 || end < 0 {
		// The leader knows none of our epochs: keep what our high
		// watermark says was committed, drop the rest.
		end = fp.p.HighWatermark()
	}
	if leo := fp.p.LogEndOffset(); end < leo {
		f.c.logger.Info("truncating a diverged replica to the leader's log", "partition", fp.p.String(),
			"leader", f.leader, "leader_epoch", fp.epoch, "from", leo, "to", end)
		if err := fp.p.TruncateTo(end); err != nil {
			return err
		}
	}
	fp.truncated = true
	return nil
}

// fetchOnce sends one Fetch for parts and applies the answer.
func (f *leaderFetcher) fetchOnce(ctx context.Context, parts []*fetchedPartition) error {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.c.cfg.nodeID
	req.ReplicaState.ID = f.c.cfg.nodeID
	req.ReplicaState.Epoch = f.c.epoch.Load()
	lim := f.c.cfg.fetch
	req.MaxWaitMillis = int32(lim.wait.Milliseconds())
	req.MinBytes = lim.minBytes
	req.MaxBytes = lim.responseBytes
	req.SessionID = 0
	req.SessionEpoch = -1
	byID := map[[16]byte]int{}
	byName := map[string]int{}
	var ready []*fetchedPartition
	now := time.Now()
	for _, fp := range parts {
		if !fp.truncated || f.c.b.followerQuotaUsed(fp.p, now) {
			continue
		}
		// The position, made durable first as flush.messages asks.
		pos, err := fp.p.FetchPosition()
		if err != nil {
			f.c.logger.Warn("replica position not reported: its log failed", "partition", fp.p.String(), "err", err)
			continue
		}
		ready = append(ready, fp)
		fp.pos = pos
		i, ok := byName[fp.p.Topic()]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = fp.p.Topic(), fp.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byName[fp.p.Topic()], byID[fp.topicID] = i, i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = fp.p.Index()
		rp.FetchOffset = pos
		rp.CurrentLeaderEpoch = fp.epoch
		rp.LastFetchedEpoch = fp.p.LatestEpoch()
		rp.LogStartOffset = fp.p.LogStartOffset()
		rp.PartitionMaxBytes = f.c.b.followerFetchBytes(fp.p, lim.partitionBytes, now)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(ready) == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return nil
	}
	r, frame, err := f.rc.request(ctx, req, lim.timeout)
	if err != nil {
		return err
	}
	// The record batches point into frame: appended (synchronously) below,
	// then the buffer goes back to its pool.
	defer frame.Release()
	resp := r.(*kmsg.FetchResponse)
	if h := f.c.fetchSeen.Load(); h != nil {
		(*h)(req, resp)
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	find := func(topic string, id [16]byte, partition int32) *fetchedPartition {
		for _, fp := range ready {
			if fp.p.Index() == partition && (fp.p.Topic() == topic || (topic == "" && fp.topicID == id)) {
				return fp
			}
		}
		return nil
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fp := find(rt.Topic, rt.TopicID, rp.Partition)
			if fp == nil {
				continue
			}
			f.apply(fp, &rp)
		}
	}
	return nil
}

// apply appends one partition's answer.
func (f *leaderFetcher) apply(fp *fetchedPartition, rp *kmsg.FetchResponseTopicPartition) {
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		if rp.LogStartOffset > fp.p.LogEndOffset() {
			// The leader no longer has what we miss: start at its start.
			f.c.logger.Info("replica restarts at the leader's log start", "partition", fp.p.String(),
				"from", fp.p.LogEndOffset(), "to", rp.LogStartOffset)
			if err := fp.p.FollowLogStart(rp.LogStartOffset); err != nil {
				f.c.logger.Warn("replica restart at the leader's log start failed", "partition", fp.p.String(), "err", err)
			}
			return
		}
		// Our end is past the leader's: truncate again against it.
		fp.truncated = false
		return
	default:
		// Not the leader (yet), fenced or unknown epoch: the metadata will
		// tell us what changed.
		return
	}
	if f.recopyIfCleanedAway(fp, rp) {
		return
	}
	if len(rp.RecordBatches) > 0 {
		f.c.b.recordFollowerBytes(fp.p, len(rp.RecordBatches))
		if _, err := fp.p.AppendAsFollower(rp.RecordBatches); err != nil {
			if errors.Is(err, log.ErrUnexpectedAppendOffset) || errors.Is(err, log.ErrLeaderEpochOutOfOrder) {
				fp.truncated = false
			}
			f.c.logger.Warn("replica append failed", "partition", fp.p.String(), "leader", f.leader, "err", err)
			return
		}
	}
	fp.p.FollowHighWatermark(rp.HighWatermark)
	if rp.LogStartOffset > fp.p.LogStartOffset() {
		if err := fp.p.FollowLogStart(min(rp.LogStartOffset, fp.p.LogEndOffset())); err != nil {
			f.c.logger.Warn("replica cannot follow the leader's log start", "partition", fp.p.String(), "err", err)
		}
	}
}

// isrLoop proposes in-sync set changes of the partitions this broker leads.
func (c *clusterNode) isrLoop(ctx context.Context) {
	lagMs, err := strconv.ParseInt(strings.TrimSpace(c.b.cfg.Raw["replica.lag.time.max.ms"]), 10, 64)
	if err != nil || lagMs <= 0 {
		lagMs = 30000
	}
	lag := time.Duration(lagMs) * time.Millisecond
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.epoch.Load() == 0 {
			continue
		}
		now := time.Now()
		for _, p := range c.b.replicas.Replicated() { // a single replica has no in-sync set to keep
			if p.Role() != replica.Leader || len(p.State().Replicas) < 2 {
				continue
			}
			isr, changed := p.ISRChange(now, lag)
			if !changed {
				continue
			}
			c.alterPartition(ctx, p, isr)
		}
	}
}

func (c *clusterNode) alterPartition(ctx context.Context, p *replica.Partition, isr []int32) {
	t, ok := c.b.topics.Get(p.Topic())
	if !ok {
		return
	}
	st := p.State()
	req := controller.AlterPartitionRequest{BrokerID: c.cfg.nodeID, BrokerEpoch: c.epoch.Load(), Topic: p.Topic(),
		TopicID: metadata.ID(t.ID), Partition: p.Index(), LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch, ISR: isr}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var resp controller.AlterPartitionResponse
	if err := callController(actx, c, "alter-partition", c.ctrl.AlterPartition, req, &resp); err != nil {
		c.logger.Debug("in-sync set change not accepted", "partition", p.String(), "isr", isr, "err", err)
		return
	}
	c.logger.Info("in-sync set changed", "partition", p.String(), "from", st.ISR, "to", isr)
	_ = c.waitPublished(actx, resp.Offset)
}

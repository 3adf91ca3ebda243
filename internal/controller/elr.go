package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// Eligible leader replicas (KIP-966), with eligible.leader.replicas.version
// 1 finalized.
//
// While a partition's in-sync set is smaller than its min.insync.replicas,
// the replicas that leave it stay eligible leaders (the ELR): no acks=all
// write was acknowledged without them. The in-sync set may then become
// empty (its last member fenced): the partition is leaderless until a
// member of its ELR is live, which is then elected as a clean leader (its
// only in-sync replica). An ELR member that joins the in-sync set leaves
// the ELR; the ELR is cleared once the in-sync set reaches
// min.insync.replicas again. LastKnownELR keeps the members that lost
// their eligibility without rejoining the in-sync set (an unclean election
// made another replica the leader, or they stopped being replicas), until
// the in-sync set is large enough again.
//
// Every partition change the controller commits passes through withELR
// (commit), so fencing, AlterPartition, elections and reassignments all
// keep the ELR. Without the feature, partitions have no ELR and the last
// in-sync replica stays in the set when fenced (so it alone can lead
// again), as before.

const minISRConfig = "min.insync.replicas"

// elrEnabled reports whether eligible leader replicas are on: on a new
// cluster by default, on one formatted by an older Sluice once upgraded
// (features.Finalized).
func elrEnabled(im *metadata.Image) bool {
	return features.Finalized(im.Features, im.ClusterID != "").Level(features.EligibleLeaderReplicasVersion) >= 1
}

// minISR returns topic t's min.insync.replicas: the topic's config, else
// the dynamic broker config of this node or of the cluster, else this
// node's server.properties.
func (c *Controller) minISR(im *metadata.Image, t *metadata.Topic) int {
	parse := func(v string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil && n >= 1
	}
	if t != nil {
		if n, ok := parse(t.Configs[minISRConfig]); ok {
			return n
		}
	}
	if n, ok := parse(im.BrokerConfigs[strconv.FormatUint(c.cfg.Quorum.ID(), 10)][minISRConfig]); ok {
		return n
	}
	if n, ok := parse(im.BrokerConfigs[""][minISRConfig]); ok {
		return n
	}
	return max(c.cfg.MinInsyncReplicas, 1)
}

// union returns the members of sets in replica order, restricted to
// replicas.
func inReplicaOrder(replicas []int32, keep func(int32) bool) []int32 {
	var out []int32
	for _, r := range replicas {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// maintainELR returns np (the change of partition p) with its ELR and
// LastKnownELR as KIP-966 keeps them; live reports unfenced brokers as of
// the change, crashed the brokers registering after an unclean shutdown
// (never eligible; elr_unclean.go).
func maintainELR(p, np metadata.Partition, minISR int, live, crashed func(int32) bool) metadata.Partition {
	// A broker returning to a leaderless partition with no in-sync replica
	// as its only eligible replica (every partition of a one-node cluster
	// after a clean restart) or as its last known leader (after a crash):
	// elected as maintainELRAll would, without its copies
	// (TestMaintainELRShortcutMatchesRules).
	if p.Leader == metadata.NoLeader && np.Leader == metadata.NoLeader && len(p.ISR) == 0 && len(np.ISR) == 0 && minISR >= 1 {
		var elected bool
		switch {
		case len(p.ELR) == 1 && len(np.ELR) == 1 && np.ELR[0] == p.ELR[0] && len(p.LastKnownELR) == 0 && len(np.LastKnownELR) == 0:
			if r := p.ELR[0]; slices.Contains(np.Replicas, r) && !crashed(r) && live(r) {
				np.Leader, np.ISR, np.ELR, np.LastKnownELR = r, []int32{r}, []int32{}, nil
				elected = true
			}
		case len(p.ELR) == 0 && len(np.ELR) == 0 && len(p.LastKnownELR) == 1 && len(np.LastKnownELR) == 1 && np.LastKnownELR[0] == p.LastKnownELR[0]:
			if r := p.LastKnownELR[0]; live(r) {
				np.Leader, np.ISR, np.ELR, np.LastKnownELR = r, []int32{r}, nil, nil
				elected = true
			}
		}
		if elected {
			if np.LeaderEpoch == p.LeaderEpoch {
				np.LeaderEpoch++
			}
			return np
		}
	}
	return maintainELRAll(p, np, minISR, live, crashed)
}

// maintainELRAll is maintainELR for every shape of change.
func maintainELRAll(p, np metadata.Partition, minISR int, live, crashed func(int32) bool) metadata.Partition {
	np.ELR, np.LastKnownELR = slices.Clone(np.ELR), slices.Clone(np.LastKnownELR)
	// The last in-sync replica leaves the set when it is fenced (without
	// ELR it stays, to lead again).
	if np.Leader == metadata.NoLeader && len(np.ISR) > 0 && !slices.ContainsFunc(np.ISR, live) {
		np.ISR = nil
	}
	unclean := np.Leader != metadata.NoLeader && np.Leader != p.Leader &&
		!slices.Contains(p.ISR, np.Leader) && !slices.Contains(p.ELR, np.Leader)
	if len(np.ISR) >= minISR {
		np.ELR, np.LastKnownELR = nil, nil
		return np
	}
	lost := func(r int32) bool { return false }
	if unclean {
		// Nobody of the old in-sync set or ELR is a clean leader any more.
		np.ELR = nil
		lost = func(r int32) bool {
			return (slices.Contains(p.ISR, r) || slices.Contains(p.ELR, r)) && !slices.Contains(np.ISR, r)
		}
	} else {
		np.ELR = inReplicaOrder(np.Replicas, func(r int32) bool {
			return (slices.Contains(p.ELR, r) || slices.Contains(p.ISR, r)) && !slices.Contains(np.ISR, r) && !crashed(r)
		})
		lost = func(r int32) bool {
			return slices.Contains(p.ELR, r) && !slices.Contains(np.ELR, r) && !slices.Contains(np.ISR, r)
		}
	}
	prev := slices.Clone(p.LastKnownELR)
	np.LastKnownELR = nil
	for _, r := range append(prev, append(slices.Clone(p.ISR), p.ELR...)...) {
		if (slices.Contains(prev, r) || lost(r)) && !slices.Contains(np.ISR, r) && !slices.Contains(np.ELR, r) &&
			!slices.Contains(np.LastKnownELR, r) {
			np.LastKnownELR = append(np.LastKnownELR, r)
		}
	}
	// A partition that loses its leader with no in-sync, eligible or last
	// known ELR member left remembers that leader as its last known ELR,
	// as Kafka 4.x records its last known leader (a replication factor 1
	// partition whose broker registers again after a crash before it was
	// fenced has no other candidate).
	if np.Leader == metadata.NoLeader && p.Leader != metadata.NoLeader && len(np.ISR) == 0 &&
		len(np.ELR) == 0 && len(np.LastKnownELR) == 0 && slices.Contains(np.Replicas, p.Leader) {
		np.LastKnownELR = []int32{p.Leader}
	}
	// A leaderless partition with no in-sync replica elects a live ELR
	// member (a clean election).
	if np.Leader == metadata.NoLeader && len(np.ISR) == 0 {
		for _, r := range np.ELR {
			if live(r) {
				np.Leader = r
				np.ISR = []int32{r}
				np.ELR = slices.DeleteFunc(np.ELR, func(x int32) bool { return x == r })
				if np.LeaderEpoch == p.LeaderEpoch {
					np.LeaderEpoch++
				}
				break
			}
		}
		// With no eligible replica left, a last known ELR of exactly one
		// live member leads, as Kafka 4.x elects the last known leader
		// ("balanced recovery"): every other copy is gone or uncleanly
		// restarted, so it has the most the partition still has (a
		// replication factor 1 partition whose broker crashed comes back
		// this way).
		if np.Leader == metadata.NoLeader && len(np.ELR) == 0 && len(np.LastKnownELR) == 1 && live(np.LastKnownELR[0]) {
			r := np.LastKnownELR[0]
			np.Leader, np.ISR, np.LastKnownELR = r, []int32{r}, nil
			if np.LeaderEpoch == p.LeaderEpoch {
				np.LeaderEpoch++
			}
		}
	}
	return np
}

// lastKnownLeader reports whether p is leaderless with neither in-sync nor
// eligible replicas and a last known ELR of exactly one member, id
// (maintainELR elects it once it is live).
func lastKnownLeader(p metadata.Partition, id int32) bool {
	return p.Leader == metadata.NoLeader && len(p.ISR) == 0 && len(p.ELR) == 0 &&
		len(p.LastKnownELR) == 1 && p.LastKnownELR[0] == id
}

// withELR returns recs with every partition change completed with its ELR
// when the feature is on (called by commit under the decision lock).
// Fence and unfence records earlier in the batch count for liveness.
func (c *Controller) withELR(recs []metadata.Record) []metadata.Record {
	im := c.cfg.Store.Image()
	if !elrEnabled(im) {
		return recs
	}
	liveness := map[int32]bool{}
	live := func(id int32) bool {
		if l, ok := liveness[id]; ok {
			return l
		}
		return im.IsLive(id)
	}
	// The partitions changed earlier in the batch, as changed (a batch
	// may change one twice), by topic and partition.
	changed := map[*metadata.Topic][]*metadata.Partition{}
	out := make([]metadata.Record, len(recs))
	// The last topic seen, its changes and min ISR (a batch lists a
	// topic's partitions together; minISR parses configs).
	var lastTopic *metadata.Topic
	var lastChanged []*metadata.Partition
	lastMinISR := 0
	// The completed changes, allocated together.
	var nps []metadata.Partition
	crashed := func(id int32) bool { return c.elrUnclean[id] }
	for i, r := range recs {
		out[i] = r
		switch r.Type {
		case metadata.FenceBroker, metadata.UnregisterBroker:
			liveness[r.BrokerID] = false
		case metadata.RegisterBroker:
			if r.Broker != nil {
				liveness[r.Broker.ID] = false // registered fenced
			}
		case metadata.UnfenceBroker:
			liveness[r.BrokerID] = true
		case metadata.ChangePartition:
			t := lastTopic
			if t == nil || t.Name != r.TopicName {
				t = im.Topics[r.TopicName]
			}
			if t == nil || r.Change == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
				continue
			}
			if t != lastTopic {
				lastTopic, lastMinISR = t, c.minISR(im, t)
				if lastChanged = changed[t]; lastChanged == nil {
					lastChanged = make([]*metadata.Partition, len(t.Partitions))
					changed[t] = lastChanged
				}
			}
			if ch := r.Change; ch.Leader != metadata.NoLeader && len(ch.ISR) >= lastMinISR && ch.ELR == nil && ch.LastKnownELR == nil {
				// A leader and enough in-sync replicas: no ELR, as
				// maintainELR would say (the change stays as it is).
				lastChanged[r.Partition] = ch
				continue
			}
			p := t.Partitions[r.Partition]
			if prev := lastChanged[r.Partition]; prev != nil {
				p = *prev
			}
			if len(nps) == cap(nps) {
				nps = make([]metadata.Partition, 0, len(recs)-i)
			}
			nps = append(nps, maintainELR(p, *r.Change, lastMinISR, live, crashed))
			np := &nps[len(nps)-1]
			out[i].Change = np
			lastChanged[r.Partition] = np
		}
	}
	return out
}

// elrElections elects a live ELR member for every leaderless partition
// whose in-sync set is empty (one controller step; a member that returns
// after its fencing is elected here).
func (c *Controller) elrElections(ctx context.Context) {
	im, err := c.begin()
	if err != nil {
		return
	}
	defer c.mu.Unlock()
	if !elrEnabled(im) {
		return
	}
	var recs []metadata.Record
	for _, t := range im.AttentionTopics() { // only topics with a partition reassigning or without a live leader
		for i, p := range t.Partitions {
			if p.Leader != metadata.NoLeader || len(p.ISR) > 0 ||
				!slices.ContainsFunc(p.ELR, im.IsLive) && !(len(p.LastKnownELR) == 1 && lastKnownLeader(p, p.LastKnownELR[0]) && im.IsLive(p.LastKnownELR[0])) {
				continue
			}
			np := p
			np.PartitionEpoch++ // withELR (commit) elects the leader
			recs = append(recs, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
				Partition: int32(i), Change: &np})
		}
	}
	if len(recs) == 0 {
		return
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		c.cfg.Logger.Warn("controller: election from eligible leader replicas failed", "err", err)
		return
	}
	for _, r := range recs {
		c.cfg.Logger.Info("controller: leader elected from the eligible leader replicas (KIP-966)",
			"topic", r.TopicName, "partition", r.Partition)
	}
}

package controller

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// Unclean leader election (unclean.leader.election.enable). When no live
// broker of a partition's in-sync set remains, the partition has no leader
// until one returns; with unclean election enabled for its topic (the
// topic's config, else the dynamic broker config of the controller's node
// or of the cluster, else the controller's server.properties) the
// controller makes the first live replica, in replica order, its leader and
// only in-sync replica, and says so loudly: records only the old in-sync
// set had are lost. Checked on every controller step, as Kafka's
// controller does after a broker is fenced or unfenced.

const uncleanConfig = "unclean.leader.election.enable"

// uncleanEnabled reports whether topic t may elect an out-of-sync leader.
func (c *Controller) uncleanEnabled(im *metadata.Image, t *metadata.Topic) bool {
	if v, ok := t.Configs[uncleanConfig]; ok {
		return parseBool(v)
	}
	if v, ok := im.BrokerConfigs[strconv.FormatUint(c.cfg.Quorum.ID(), 10)][uncleanConfig]; ok {
		return parseBool(v)
	}
	if v, ok := im.BrokerConfigs[""][uncleanConfig]; ok {
		return parseBool(v)
	}
	return c.cfg.UncleanLeaderElection
}

func parseBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// uncleanLeader returns p with an unclean leader when it has no live
// in-sync replica but a live replica outside the in-sync set (ok false
// otherwise).
func uncleanLeader(im *metadata.Image, p metadata.Partition) (metadata.Partition, bool) {
	if p.Leader != metadata.NoLeader && im.IsLive(p.Leader) {
		return p, false
	}
	for _, r := range p.ISR {
		if im.IsLive(r) {
			return p, false // a clean election is possible (and is the fencing path's)
		}
	}
	if len(p.ISR) == 0 && slices.ContainsFunc(p.ELR, im.IsLive) {
		return p, false // an eligible leader replica is elected (elr.go)
	}
	for _, r := range p.Replicas {
		if im.IsLive(r) && !slices.Contains(p.AddingReplicas, r) {
			np := p
			np.Leader = r
			np.ISR = []int32{r}
			np.LeaderEpoch++
			np.PartitionEpoch++
			return np, true
		}
	}
	return p, false
}

// uncleanElections elects out-of-sync leaders where topics allow it (one
// controller step).
func (c *Controller) uncleanElections(ctx context.Context) {
	im, err := c.begin()
	if err != nil {
		return
	}
	defer c.mu.Unlock()
	var recs []metadata.Record
	for _, t := range im.AttentionTopics() { // only topics with a partition reassigning or without a live leader
		enabled := -1
		for i, p := range t.Partitions {
			if p.Leader != metadata.NoLeader && im.IsLive(p.Leader) {
				continue
			}
			if enabled < 0 {
				enabled = 0
				if c.uncleanEnabled(im, t) {
					enabled = 1
				}
			}
			if enabled == 0 {
				continue
			}
			if np, ok := uncleanLeader(im, p); ok {
				recs = append(recs, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
					Partition: int32(i), Change: &np})
			}
		}
	}
	if len(recs) == 0 {
		return
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		c.cfg.Logger.Warn("controller: unclean leader election failed", "err", err)
		return
	}
	for _, r := range recs {
		old := im.Topics[r.TopicName].Partitions[r.Partition]
		c.cfg.Logger.Warn("controller: UNCLEAN leader election (unclean.leader.election.enable=true): no in-sync replica is live, "+
			"a replica outside the in-sync set now leads; records acknowledged by the old in-sync set may be lost",
			"topic", r.TopicName, "partition", r.Partition, "leader", r.Change.Leader, "old_isr", old.ISR,
			"leader_epoch", r.Change.LeaderEpoch)
	}
}

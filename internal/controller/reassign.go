package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// Partition reassignment, as Kafka's KRaft controller does it. Starting a
// reassignment records, in the partition, the replicas being added and
// removed; its replica list becomes the target followed by the replicas
// being removed, so the new replicas start fetching from the leader and
// join the in-sync set as they catch up. Once every target replica is in
// the in-sync set, the controller finishes it (completeReassignments, each
// controller step): the replicas become the target, the removed replicas
// leave the in-sync set (and delete their copy when they see the change),
// and the leader moves to the first live in-sync target replica if it was
// removed. Cancelling (null replicas) puts the original replicas back.

// ReassignRequest starts, changes or (Cancel) cancels the reassignment of
// one partition.
type ReassignRequest struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas,omitempty"`
	Cancel    bool    `json:"cancel,omitempty"`
	// KeepReplicationFactor refuses a target that changes the
	// replication factor (AlterPartitionReassignments v1 with
	// allow_replication_factor_change false; reassign_rf.go).
	KeepReplicationFactor bool `json:"keep_replication_factor,omitempty"`
}

// ReassignResponse is the outcome as a Kafka error code (0: accepted) and
// the metadata offset at which the change was applied (0: none).
type ReassignResponse struct {
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
	Offset  uint64 `json:"offset"`
}

// Reassign runs Kafka's AlterPartitionReassignments for one partition.
func (c *Controller) Reassign(ctx context.Context, req ReassignRequest) (ReassignResponse, error) {
	im, err := c.begin()
	if err != nil {
		return ReassignResponse{}, err
	}
	defer c.mu.Unlock()
	t, ok := im.Topics[req.Topic]
	if !ok {
		return ReassignResponse{Code: kerr.UnknownTopicOrPartition.Code,
			Message: fmt.Sprintf("Unable to find a topic named %s.", req.Topic)}, nil
	}
	if req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
		return ReassignResponse{Code: kerr.UnknownTopicOrPartition.Code,
			Message: fmt.Sprintf("Unable to find partition %s:%d.", req.Topic, req.Partition)}, nil
	}
	p := t.Partitions[req.Partition]
	var np metadata.Partition
	if req.Cancel {
		if !p.Reassigning() {
			return ReassignResponse{Code: kerr.NoReassignmentInProgress.Code,
				Message: fmt.Sprintf("No partition reassignment is in progress for %s:%d.", req.Topic, req.Partition)}, nil
		}
		np = revertReassignment(im, p)
		c.cfg.Logger.Info("controller: partition reassignment cancelled", "topic", req.Topic, "partition", req.Partition,
			"replicas", np.Replicas, "leader", np.Leader)
	} else {
		if msg := validateAssignment(im, req.Replicas); msg != "" {
			return ReassignResponse{Code: kerr.InvalidReplicaAssignment.Code, Message: msg}, nil
		}
		if len(req.Replicas) > c.cfg.MaxReplicationFactor {
			return ReassignResponse{Code: kerr.InvalidReplicaAssignment.Code,
				Message: fmt.Sprintf("The target replication factor %d is larger than %d.", len(req.Replicas), c.cfg.MaxReplicationFactor)}, nil
		}
		if req.KeepReplicationFactor {
			if msg := replicationFactorChange(p, req.Replicas); msg != "" {
				return ReassignResponse{Code: kerr.InvalidReplicationFactor.Code, Message: msg}, nil
			}
		}
		orig := p
		if p.Reassigning() {
			orig = revertReassignment(im, p)
		}
		if slices.Equal(orig.Replicas, req.Replicas) && !p.Reassigning() {
			return ReassignResponse{}, nil // already the assignment: nothing to do, as Kafka
		}
		np = startReassignment(orig, req.Replicas)
		if p.Reassigning() {
			// A new target while one is in progress: replicas already in
			// sync (and the leader) stay so.
			if isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(np.Replicas, r) }); len(isr) > 0 {
				np.ISR = isr
				if slices.Contains(isr, p.Leader) {
					np.Leader = p.Leader
				}
			}
		}
		if done, ok := finishReassignment(im, np); ok {
			np = done
		}
		c.cfg.Logger.Info("controller: partition reassignment started", "topic", req.Topic, "partition", req.Partition,
			"target", req.Replicas, "adding", np.AddingReplicas, "removing", np.RemovingReplicas)
	}
	if np.Leader != p.Leader {
		np.LeaderEpoch = p.LeaderEpoch + 1
	} else {
		np.LeaderEpoch = p.LeaderEpoch
	}
	np.PartitionEpoch = p.PartitionEpoch + 1
	off, err := c.commit(ctx, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
		Partition: req.Partition, Change: &np})
	if err != nil {
		return ReassignResponse{}, err
	}
	return ReassignResponse{Offset: off}, nil
}

// validateAssignment checks a target replica list as Kafka's controller
// does; "" when it is valid.
func validateAssignment(im *metadata.Image, replicas []int32) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	seen := map[int32]bool{}
	for _, r := range replicas {
		if seen[r] {
			return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", r)
		}
		seen[r] = true
		if _, ok := im.Broker(r); !ok {
			return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
	}
	return ""
}

// startReassignment is p (no reassignment in progress) with one towards
// target: replicas are the target followed by the current replicas not in
// it; the in-sync set and the leader stay.
func startReassignment(p metadata.Partition, target []int32) metadata.Partition {
	np := p
	np.Replicas = slices.Clone(target)
	np.AddingReplicas, np.RemovingReplicas = nil, nil
	for _, r := range p.Replicas {
		if !slices.Contains(target, r) {
			np.Replicas = append(np.Replicas, r)
			np.RemovingReplicas = append(np.RemovingReplicas, r)
		}
	}
	for _, r := range target {
		if !slices.Contains(p.Replicas, r) {
			np.AddingReplicas = append(np.AddingReplicas, r)
		}
	}
	np.ISR = slices.Clone(p.ISR)
	return np
}

// targetOf is the target replica list of a reassigning partition.
func targetOf(p metadata.Partition) []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) })
}

// revertReassignment is p with its reassignment undone: the replicas being
// added leave the replica list and the in-sync set; the leader moves to an
// original in-sync live replica if it was one being added.
func revertReassignment(im *metadata.Image, p metadata.Partition) metadata.Partition {
	np := p
	np.Replicas = slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
	// The original order: Kafka's replica list put the target first; the
	// replicas being removed were the original ones not in the target.
	np.AddingReplicas, np.RemovingReplicas = nil, nil
	np.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(np.Replicas, r) })
	if !slices.Contains(np.Replicas, np.Leader) {
		np.Leader = electFrom(im, np.Replicas, np.ISR)
	}
	if len(np.ISR) == 0 && len(np.Replicas) > 0 {
		// No original replica is in sync: the partition stays offline
		// until one returns (its in-sync set keeps one, as when the last
		// in-sync broker is fenced).
		np.ISR = []int32{np.Replicas[0]}
		np.Leader = metadata.NoLeader
	}
	return np
}

// electFrom is the first replica, in replica order, that is in isr and
// live; NoLeader when none is.
func electFrom(im *metadata.Image, replicas, isr []int32) int32 {
	for _, r := range replicas {
		if slices.Contains(isr, r) && im.IsLive(r) {
			return r
		}
	}
	return metadata.NoLeader
}

// finishReassignment returns p with its reassignment completed, when every
// target replica is in the in-sync set (ok false otherwise): the replicas
// are the target, the in-sync set loses the removed replicas, and a removed
// leader gives way to the first live in-sync target replica. Epochs are the
// caller's.
func finishReassignment(im *metadata.Image, p metadata.Partition) (metadata.Partition, bool) {
	if !p.Reassigning() {
		return p, false
	}
	target := targetOf(p)
	for _, r := range target {
		if !slices.Contains(p.ISR, r) {
			return p, false
		}
	}
	np := p
	np.Replicas = target
	np.AddingReplicas, np.RemovingReplicas = nil, nil
	np.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(target, r) })
	if !slices.Contains(target, np.Leader) {
		np.Leader = electFrom(im, target, np.ISR)
		if np.Leader == metadata.NoLeader {
			return p, false // wait for a target replica to be live
		}
	}
	return np, true
}

// completeReassignments commits the completion of every reassignment whose
// target replicas are all in sync (one controller step).
func (c *Controller) completeReassignments(ctx context.Context) {
	im, err := c.begin()
	if err != nil {
		return
	}
	defer c.mu.Unlock()
	var recs []metadata.Record
	for _, t := range im.AttentionTopics() { // only topics with a partition reassigning or without a live leader
		for i := range t.Partitions {
			if !t.Partitions[i].Reassigning() {
				continue // most of them (and no allocation for np)
			}
			p := t.Partitions[i]
			np, ok := finishReassignment(im, p)
			if !ok {
				continue
			}
			if np.Leader != p.Leader {
				np.LeaderEpoch++
			}
			np.PartitionEpoch++
			recs = append(recs, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
				Partition: int32(i), Change: &np})
		}
	}
	if len(recs) == 0 {
		return
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		c.cfg.Logger.Warn("controller: completing partition reassignments failed", "err", err)
		return
	}
	for _, r := range recs {
		c.cfg.Logger.Info("controller: partition reassignment completed", "topic", r.TopicName, "partition", r.Partition,
			"replicas", r.Change.Replicas, "leader", r.Change.Leader)
	}
}

package controller

import (
	"context"
	"slices"

	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// UpdateFeaturesRequest is an UpdateFeatures request forwarded by a broker.
type UpdateFeaturesRequest struct {
	Updates      []features.Update `json:"updates"`
	ValidateOnly bool              `json:"validate_only,omitempty"`
}

// UpdateFeaturesResponse is the outcome: a refusal (Code, Msg) or the
// finalized levels and the offset at which they were committed.
type UpdateFeaturesResponse struct {
	Code   int16           `json:"code,omitempty"`
	Msg    string          `json:"msg,omitempty"`
	Levels features.Levels `json:"levels,omitempty"`
	Offset uint64          `json:"offset,omitempty"`
}

// UpdateFeatures checks the updates against the image's finalized levels
// under the decision lock (so that two updates cannot both pass against the
// same levels) and commits a SetFeatures record with the result.
func (c *Controller) UpdateFeatures(ctx context.Context, req UpdateFeaturesRequest) (UpdateFeaturesResponse, error) {
	im, err := c.begin()
	if err != nil {
		return UpdateFeaturesResponse{}, err
	}
	defer c.mu.Unlock()
	cur := features.Finalized(im.Features, im.ClusterID != "")
	next, ferr := features.Apply(cur, req.Updates)
	if ferr != nil {
		return UpdateFeaturesResponse{Code: ferr.Code, Msg: ferr.Msg}, nil
	}
	if req.ValidateOnly {
		return UpdateFeaturesResponse{Levels: next, Offset: im.Offset}, nil
	}
	off, err := c.commit(ctx, metadata.Record{Type: metadata.SetFeatures, Features: next})
	if err != nil {
		return UpdateFeaturesResponse{}, err
	}
	if elrEnabled(im) && next.Level(features.EligibleLeaderReplicasVersion) < 1 {
		// Committed after the features record, so that withELR no longer
		// applies (elr.go).
		if recs := elrOff(c.cfg.Store.Image()); len(recs) > 0 {
			if o, err := c.commit(ctx, recs...); err != nil {
				c.cfg.Logger.Warn("controller: clearing the eligible leader replicas failed", "err", err)
			} else {
				off = o
			}
		}
	}
	return UpdateFeaturesResponse{Levels: next, Offset: off}, nil
}

// elrOff returns the partition changes that clear every ELR and last known
// ELR once eligible.leader.replicas.version is downgraded to 0. A partition
// whose in-sync set is empty gets its eligible replicas back as in-sync
// replicas (each has every acknowledged record, as the last in-sync replica
// kept without the feature has), led by the first live one.
func elrOff(im *metadata.Image) []metadata.Record {
	var out []metadata.Record
	for _, t := range im.SortedTopics() {
		for i, p := range t.Partitions {
			if len(p.ELR) == 0 && len(p.LastKnownELR) == 0 {
				continue
			}
			np := p
			if len(p.ISR) == 0 && len(p.ELR) > 0 {
				np.ISR = inReplicaOrder(p.Replicas, func(r int32) bool { return slices.Contains(p.ELR, r) })
				if np.Leader == metadata.NoLeader {
					if np.Leader = electFrom(im, p.Replicas, np.ISR); np.Leader != metadata.NoLeader {
						np.LeaderEpoch++
					}
				}
			}
			np.ELR, np.LastKnownELR = nil, nil
			np.PartitionEpoch++
			out = append(out, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
				Partition: int32(i), Change: &np})
		}
	}
	return out
}

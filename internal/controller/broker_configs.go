package controller

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// BrokerConfigsRequest replaces the dynamic configs of some entities (a
// broker id, or "" for the cluster-wide default), validated by the broker
// that received the request. An empty set removes the entity's configs.
type BrokerConfigsRequest struct {
	Entities map[string]map[string]string `json:"entities"`
	// Base, when set, holds the sets the change was computed from (by
	// entity): if an entity's current set differs (another change came
	// first), nothing is recorded and the answer is INVALID_UPDATE_VERSION,
	// so that the broker computes the change again.
	Base map[string]map[string]string `json:"base,omitempty"`
}

// SetBrokerConfigs records each entity's new dynamic config set, all in one
// batch; entities whose set is unchanged get no record.
func (c *Controller) SetBrokerConfigs(ctx context.Context, req BrokerConfigsRequest) (OffsetResponse, error) {
	im, err := c.begin()
	if err != nil {
		return OffsetResponse{}, err
	}
	defer c.mu.Unlock()
	for ent, base := range req.Base {
		if !maps.Equal(im.BrokerConfigs[ent], base) {
			return OffsetResponse{}, errorf(kerr.InvalidUpdateVersion, "the dynamic configs of %q changed meanwhile", ent)
		}
	}
	var recs []metadata.Record
	for _, ent := range slices.Sorted(maps.Keys(req.Entities)) {
		next := req.Entities[ent]
		if maps.Equal(im.BrokerConfigs[ent], next) {
			continue
		}
		recs = append(recs, metadata.Record{Type: metadata.SetBrokerConfigs, Entity: ent, Configs: next})
	}
	if len(recs) == 0 {
		return OffsetResponse{Offset: im.Offset}, nil
	}
	off, err := c.commit(ctx, recs...)
	if err != nil {
		return OffsetResponse{}, err
	}
	return OffsetResponse{Offset: off}, nil
}

package controller

import (
	"context"
	"maps"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// SetGroupConfigsRequest replaces the configs of one group (validated by
// the broker that received IncrementalAlterConfigs).
type SetGroupConfigsRequest struct {
	Group   string            `json:"group"`
	Configs map[string]string `json:"configs,omitempty"`
}

// SetGroupConfigs records a group's new configs.
func (c *Controller) SetGroupConfigs(ctx context.Context, req SetGroupConfigsRequest) (OffsetResponse, error) {
	im, err := c.begin()
	if err != nil {
		return OffsetResponse{}, err
	}
	defer c.mu.Unlock()
	if maps.Equal(im.GroupConfigs[req.Group], req.Configs) {
		return OffsetResponse{Offset: im.Offset}, nil
	}
	off, err := c.commit(ctx, metadata.Record{Type: metadata.SetGroupConfigs, Entity: req.Group, Configs: req.Configs})
	if err != nil {
		return OffsetResponse{}, err
	}
	return OffsetResponse{Offset: off}, nil
}

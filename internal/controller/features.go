package controller

import (
	"context"

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
	return UpdateFeaturesResponse{Levels: next, Offset: off}, nil
}

// UpdateFeatures (key 57), v0–v2: changes finalized feature levels
// (KIP-584; `kafka-features upgrade|downgrade`, Admin.updateFeatures).
// Admin.describeFeatures reads the levels from ApiVersions
// (api_versions.go). Needs ALTER on the CLUSTER.
//
// A single node stores the levels in its data directory (features.json); a
// cluster node sends the update to the active controller, which validates
// it against the metadata image and commits a SetFeatures record, and
// answers once this broker has published it. As Kafka's controller, the
// request is all-or-nothing: any invalid update refuses the whole request
// (top-level error; v0–v1 also report it for every feature). The supported
// features and their ranges are internal/features'.
package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.UpdateFeatures, (*Broker).handleUpdateFeatures) }

func (b *Broker) handleUpdateFeatures(_ context.Context, r *wire.Request, req *kmsg.UpdateFeaturesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		if req.Version <= 1 {
			for _, u := range req.FeatureUpdates {
				res := kmsg.NewUpdateFeaturesResponseResult()
				res.Feature, res.ErrorCode, res.ErrorMessage = u.Feature, code, kmsg.StringPtr(msg)
				resp.Results = append(resp.Results, res)
			}
		}
		return resp, nil
	}
	if !b.allowedCluster(r, authz.OpAlter) {
		return fail(kerr.ClusterAuthorizationFailed.Code, clusterAuthMessage)
	}
	if len(req.FeatureUpdates) == 0 {
		return fail(kerr.InvalidRequest.Code, "the request must contain at least one feature update")
	}
	updates := make([]features.Update, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		typ := features.UpgradeType(u.UpgradeType)
		if req.Version == 0 {
			typ = features.Upgrade
			if u.AllowDowngrade {
				typ = features.SafeDowngrade
			}
		}
		lvl := u.MaxVersionLevel
		if lvl < 0 && typ != features.Upgrade { // v0's "< 1 deletes the feature"
			lvl = 0
		}
		updates = append(updates, features.Update{Name: u.Feature, Level: lvl, Type: typ})
	}
	if err := b.updateFeatures(updates, req.ValidateOnly); err != nil {
		var fe *features.Error
		var be *Error
		switch {
		case errors.As(err, &fe):
			return fail(fe.Code, fe.Msg)
		case errors.As(err, &be):
			return fail(be.Code, be.Msg)
		default:
			b.logger.Error("update features failed", "err", err)
			return fail(kerr.UnknownServerError.Code, err.Error())
		}
	}
	if !req.ValidateOnly {
		levels, epoch := b.finalizedFeatures()
		b.logger.Info("finalized features updated", "features", levels, "epoch", epoch)
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// updateFeatures applies updates on this node or through the controller.
func (b *Broker) updateFeatures(updates []features.Update, validateOnly bool) error {
	if c := b.cluster; c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		var resp controller.UpdateFeaturesResponse
		if err := callController(ctx, c, "update-features", c.ctrl.UpdateFeatures,
			controller.UpdateFeaturesRequest{Updates: updates, ValidateOnly: validateOnly}, &resp); err != nil {
			return asBrokerError(err)
		}
		if resp.Code != 0 {
			return &features.Error{Code: resp.Code, Msg: resp.Msg}
		}
		if validateOnly {
			return nil
		}
		if err := c.waitPublished(ctx, resp.Offset); err != nil {
			return asBrokerError(err)
		}
		return nil
	}
	if b.features == nil {
		return &Error{Code: kerr.UnknownServerError.Code, Msg: "feature store not open"}
	}
	_, err := b.features.Update(updates, validateOnly)
	return err
}

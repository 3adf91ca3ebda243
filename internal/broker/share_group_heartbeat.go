// ShareGroupHeartbeat (key 76), v1: share-group membership (KIP-932). A member joins
// with epoch 0 and its subscription, heartbeats with its epoch, and leaves with -1;
// the assignment is the simple assignor's (share_groups.go, internal/share). v0 was
// Apache Kafka 4.0's early-access version, removed in 4.1, and is not served. With an
// authorizer: READ on the group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every
// subscribed topic (TOPIC_AUTHORIZATION_FAILED), as Kafka. With share.version finalized
// at 0 (UpdateFeatures) it answers UNSUPPORTED_VERSION, as Kafka.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ShareGroupHeartbeat, (*Broker).handleShareGroupHeartbeat) }

func (b *Broker) handleShareGroupHeartbeat(_ context.Context, r *wire.Request, req *kmsg.ShareGroupHeartbeatRequest) (kmsg.Response, error) {
	if b.featureLevel(features.ShareVersion) < 1 { // share.version 0: share groups are off, as in Kafka
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = kmsg.StringPtr("The share group protocol is disabled (share.version is 0).")
		return resp, nil
	}
	if b.authz != nil { // READ on the group, DESCRIBE on the subscribed topics
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		if b.groupDenied(r, authz.OpRead, req.GroupID) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		if len(b.deniedTopics(r, authz.OpDescribe, req.SubscribedTopicNames)) > 0 {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("The group has subscribed to topics which are not authorized.")
			return resp, nil
		}
	}
	if b.groups != nil && !b.groups.Coordinates(req.GroupID) {
		// As Kafka: only the group's coordinator takes its heartbeats; the
		// member finds the coordinator again.
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		resp.ErrorMessage = kmsg.StringPtr("This is not the coordinator of share group " + req.GroupID + ".")
		return resp, nil
	}
	c := groupClient(r)
	return b.shares.Heartbeat(req, share.Client{ID: c.ID, Host: c.Host}), nil
}

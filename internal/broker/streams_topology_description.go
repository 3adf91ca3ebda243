// StreamsGroupTopologyDescriptionUpdate (key 93), v0 (KIP-1331): a Kafka
// Streams member pushes its topology's description when a StreamsGroupHeartbeat
// v1 answer asks for it (TopologyDescriptionRequired); StreamsGroupDescribe v1
// returns it (IncludeTopologyDescription). The group coordinator stores it
// (internal/group/streams_topology_description.go). As Kafka: READ on the
// group (GROUP_AUTHORIZATION_FAILED), UNSUPPORTED_VERSION while
// streams.version is 0.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.StreamsGroupTopologyDescriptionUpdate, (*Broker).handleStreamsGroupTopologyDescriptionUpdate)
}

func (b *Broker) handleStreamsGroupTopologyDescriptionUpdate(_ context.Context, r *wire.Request, req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	if b.featureLevel(features.StreamsVersion) < 1 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if b.authz != nil && b.groupDenied(r, authz.OpRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.groups.StreamsGroupTopologyDescriptionUpdate(req), nil
}

// ListConfigResources (key 74), v0–v1 (KIP-1142; Kafka 4.1 renamed
// ListClientMetricsResources to it): the config resources an admin client
// can describe, as `kafka-configs --describe --entity-type groups` and
// `--entity-type client-metrics` list them.
//
// As Apache Kafka 4.x: the request needs DESCRIBE_CONFIGS on the cluster
// (else CLUSTER_AUTHORIZATION_FAILED). v0 serves the CLIENT_METRICS type
// only; v1 takes the resource types to list (none: every supported type),
// and a type outside TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS and GROUP
// (or outside CLIENT_METRICS at v0) is UNSUPPORTED_VERSION. The answer lists
// the groups that have group configs set (whether or not the group exists),
// the client-metrics resources, one BROKER_LOGGER and one BROKER resource per
// live broker (its node id), then every topic (internal ones included), in
// that order of types.
//
// Sluice has no client-metrics subscriptions (KIP-714 is not served), so the
// CLIENT_METRICS type is always empty.
package broker

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ListConfigResources, (*Broker).handleListConfigResources) }

func (b *Broker) handleListConfigResources(_ context.Context, r *wire.Request, req *kmsg.ListConfigResourcesRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !b.allowedCluster(r, authz.OpDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	supported := []int8{resourceTopic, resourceBroker, resourceBrokerLogger, resourceClientMetrics, resourceGroup}
	if req.Version == 0 {
		supported = []int8{resourceClientMetrics}
	}
	want := req.ResourceTypes
	if len(want) == 0 {
		want = supported
	}
	for _, t := range want {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	add := func(typ int8, name string) {
		cr := kmsg.NewListConfigResourcesResponseConfigResource()
		cr.Name, cr.Type = name, typ
		resp.ConfigResources = append(resp.ConfigResources, cr)
	}
	if slices.Contains(want, resourceGroup) && b.shares != nil {
		for _, g := range slices.Sorted(maps.Keys(b.shares.AllGroupConfigs())) {
			add(resourceGroup, g)
		}
	}
	// CLIENT_METRICS: none (see above).
	for _, typ := range []int8{resourceBrokerLogger, resourceBroker} {
		if slices.Contains(want, typ) {
			for _, cb := range b.liveBrokers(r) {
				add(typ, strconv.Itoa(int(cb.id)))
			}
		}
	}
	if slices.Contains(want, resourceTopic) {
		for _, t := range b.topics.List() {
			add(resourceTopic, t.Name)
		}
	}
	if resp.ConfigResources == nil {
		resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	}
	return resp, nil
}

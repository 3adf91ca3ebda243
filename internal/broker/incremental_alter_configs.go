// IncrementalAlterConfigs (key 44), v0–v1: SET, DELETE, APPEND and SUBTRACT
// (the last two on list configs such as cleanup.policy) on a topic's config
// overrides. Each resource is all-or-nothing: the new override set is
// validated as a whole against the config table before anything changes; a
// rejected change (INVALID_CONFIG naming the config) leaves the config
// untouched. Accepted changes are persisted, then applied live to every
// partition's log (log.Log.SetConfig). validate_only checks and changes
// nothing.
//
// GROUP resources hold the share-group configs (share_group_configs.go).
//
// Errors per resource: unknown topic UNKNOWN_TOPIC_OR_PARTITION; a config
// listed twice, an unknown operation or a resource listed twice
// INVALID_REQUEST.
//
// BROKER resources (this broker's id, or "" for the cluster-wide default)
// hold the dynamic broker configs (dynamic_configs.go): each resource's new
// set is validated as a whole — an unknown name INVALID_CONFIG, a config
// that cannot change at runtime INVALID_REQUEST "Cannot update these configs
// dynamically", a bad value INVALID_CONFIG — then stored (a single node's
// data directory; the cluster metadata through the controller) and applied
// without a restart. Deleting a config that has no dynamic value succeeds.
//
// Differences from Kafka: only the dynamic configs Sluice applies live are
// accepted (the broker-level topic defaults, the replication throttle rates,
// unclean.leader.election.enable, max.connections, max.connections.per.ip;
// docs/configuration.md marks them); other configs Kafka can change at
// runtime are refused like static ones.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.IncrementalAlterConfigs, (*Broker).handleIncrementalAlterConfigs) }

func (b *Broker) handleIncrementalAlterConfigs(_ context.Context, r *wire.Request, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{int8(rr.ResourceType), rr.ResourceName}
	}
	errs := b.alterEach(keys, func(i int) error {
		if err := b.configResourceDenied(r, authz.OpAlterConfigs, keys[i].typ, keys[i].name); err != nil {
			return err
		}
		return b.incrementalAlterOne(&req.Resources[i], req.ValidateOnly)
	})
	for i, rr := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), errorMessage(errs[i])
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *Broker) incrementalAlterOne(rr *kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	ops := make([]config.AlterOp, 0, len(rr.Configs))
	seen := make(map[string]bool, len(rr.Configs))
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return errorf(kerr.InvalidRequest, "Error due to duplicate config keys: %s", c.Name)
		}
		seen[c.Name] = true
		op := int8(c.Op)
		if op < config.OpSet || op > config.OpSubtract {
			return errorf(kerr.InvalidRequest, "Unknown alter config operation %d for %s.", op, c.Name)
		}
		ops = append(ops, config.AlterOp{Name: c.Name, Op: op, Value: c.Value})
	}
	if int8(rr.ResourceType) == resourceGroup {
		return b.alterGroupConfigs(rr.ResourceName, ops, validateOnly) // share_group_configs.go
	}
	if int8(rr.ResourceType) == resourceBroker {
		return b.alterBrokerConfigs(rr.ResourceName, validateOnly, func(current map[string]string) (map[string]string, error) { // dynamic_configs.go
			next, err := b.conf().ApplyIncrementalBroker(current, ops)
			if err != nil {
				return nil, asInvalidConfig(err)
			}
			return next, nil
		})
	}
	return b.alterTopicConfigs(int8(rr.ResourceType), rr.ResourceName, validateOnly,
		func(current map[string]string) (map[string]string, error) {
			next, err := config.ApplyIncremental(current, ops)
			if err != nil {
				return nil, asInvalidConfig(err)
			}
			return next, nil
		})
}

// IncrementalAlterConfigs (key 44), v0–v1: SET, DELETE, APPEND and SUBTRACT
// (the last two on list configs such as cleanup.policy) on a topic's config
// overrides. Each resource is all-or-nothing: the new override set is
// validated as a whole against the config table before anything changes; a
// rejected change (INVALID_CONFIG naming the config) leaves the config
// untouched. Accepted changes are persisted, then applied live to every
// partition's log (log.Log.SetConfig). validate_only checks and changes
// nothing.
//
// Errors per resource: unknown topic UNKNOWN_TOPIC_OR_PARTITION; a config
// listed twice, an unknown operation or a resource listed twice
// INVALID_REQUEST.
//
// Differences from Kafka: broker resources cannot be altered — Sluice has no
// dynamic broker configuration (INVALID_REQUEST telling to use --config).

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.IncrementalAlterConfigs, (*Broker).handleIncrementalAlterConfigs) }

type resourceKey struct {
	typ  int8
	name string
}

func (b *Broker) handleIncrementalAlterConfigs(_ context.Context, _ *wire.Request, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	count := map[resourceKey]int{}
	for _, r := range req.Resources {
		count[resourceKey{int8(r.ResourceType), r.ResourceName}]++
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	for _, rr := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if count[resourceKey{int8(rr.ResourceType), rr.ResourceName}] > 1 {
			err = errorf(kerr.InvalidRequest, "Resource %s is listed more than once in the request.", rr.ResourceName)
		} else {
			err = b.incrementalAlterOne(&rr, req.ValidateOnly)
		}
		if err != nil {
			res.ErrorCode = errorCode(err)
			res.ErrorMessage = errorMessage(err)
		}
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
	t, err := b.alterableTopic(int8(rr.ResourceType), rr.ResourceName)
	if err != nil {
		return err
	}
	next, err := config.ApplyIncremental(t.Configs, ops)
	if err != nil {
		return asInvalidConfig(err)
	}
	cfg, err := b.resolveOverrides(next)
	if err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	return b.setTopicConfigs(t.Name, next, cfg)
}

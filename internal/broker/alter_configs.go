// AlterConfigs (key 33), v0–v2: the older whole-state form — the given
// configs become the topic's complete set of overrides (anything not listed
// returns to the broker default). kafkajs and Rust rdkafka only send this
// one. Validation, persistence and live application are as for
// IncrementalAlterConfigs: all-or-nothing per resource; validate_only
// changes nothing.
//
// Errors per resource: unknown topic UNKNOWN_TOPIC_OR_PARTITION; a null
// value or a config listed twice INVALID_REQUEST; a bad name or value
// INVALID_CONFIG naming it.
//
// BROKER resources (this broker's id, or "" for the cluster-wide default):
// the given configs become the entity's complete set of dynamic broker
// configs, validated and applied as by IncrementalAlterConfigs
// (dynamic_configs.go).

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AlterConfigs, (*Broker).handleAlterConfigs) }

func (b *Broker) handleAlterConfigs(_ context.Context, r *wire.Request, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	keys := make([]resourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = resourceKey{int8(rr.ResourceType), rr.ResourceName}
	}
	errs := b.alterEach(keys, func(i int) error {
		if err := b.configResourceDenied(r, authz.OpAlterConfigs, keys[i].typ, keys[i].name); err != nil {
			return err
		}
		return b.alterOne(&req.Resources[i], req.ValidateOnly)
	})
	for i, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(errs[i]), errorMessage(errs[i])
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *Broker) alterOne(rr *kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	overrides := make(map[string]string, len(rr.Configs))
	for _, c := range rr.Configs {
		if _, dup := overrides[c.Name]; dup {
			return errorf(kerr.InvalidRequest, "Error due to duplicate config keys: %s", c.Name)
		}
		if c.Value == nil {
			return errorf(kerr.InvalidRequest, "Null value not supported for : %s", c.Name)
		}
		overrides[c.Name] = *c.Value
	}
	if int8(rr.ResourceType) == resourceBroker {
		return b.alterBrokerConfigs(rr.ResourceName, validateOnly, // dynamic_configs.go
			func(map[string]string) (map[string]string, error) { return overrides, nil })
	}
	return b.alterTopicConfigs(int8(rr.ResourceType), rr.ResourceName, validateOnly,
		func(map[string]string) (map[string]string, error) { return overrides, nil })
}

// resourceKey names a config resource within one request.
type resourceKey struct {
	typ  int8
	name string
}

// alterEach runs alter(i) for each resource of an (Incremental)AlterConfigs
// request, in order, under adminMu, and returns each one's outcome. A
// resource listed more than once is refused (INVALID_REQUEST) and not
// altered, as in Kafka.
func (b *Broker) alterEach(keys []resourceKey, alter func(i int) error) []error {
	count := make(map[resourceKey]int, len(keys))
	for _, k := range keys {
		count[k]++
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	errs := make([]error, len(keys))
	for i, k := range keys {
		if count[k] > 1 {
			errs[i] = errorf(kerr.InvalidRequest, "Resource %s is listed more than once in the request.", k.name)
			continue
		}
		errs[i] = alter(i)
	}
	return errs
}

// alterTopicConfigs is the validate-and-apply path of both alter requests:
// it resolves the target topic, computes its complete new override set with
// next (given the current one), validates that set as a whole (INVALID_CONFIG
// naming the config) and, unless validateOnly, persists and applies it
// live. Nothing changes unless everything is valid. Caller holds adminMu.
func (b *Broker) alterTopicConfigs(typ int8, name string, validateOnly bool, next func(current map[string]string) (map[string]string, error)) error {
	t, err := b.alterableTopic(typ, name)
	if err != nil {
		return err
	}
	overrides, err := next(t.Configs)
	if err != nil {
		return err
	}
	cfg, err := b.resolveOverrides(overrides)
	if err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	return b.setTopicConfigs(t.Name, overrides, cfg)
}

// alterableTopic resolves the target of an alter request: a topic, or an
// error for other resource types.
func (b *Broker) alterableTopic(typ int8, name string) (*topics.Topic, error) {
	switch typ {
	case resourceTopic:
		return b.lookupTopic(name)
	case resourceBrokerLogger:
		if err := b.checkBrokerResource(name); err != nil {
			return nil, err
		}
		return nil, errorf(kerr.InvalidRequest, "Sluice has no per-logger levels to change.")
	default:
		return nil, errorf(kerr.InvalidRequest, "Unsupported resource type %d.", typ)
	}
}

// lookupTopic returns the named topic of a config request: INVALID_TOPIC_EXCEPTION
// for an illegal name, UNKNOWN_TOPIC_OR_PARTITION for a missing topic.
func (b *Broker) lookupTopic(name string) (*topics.Topic, error) {
	if err := topics.ValidateName(name); err != nil {
		return nil, &Error{Code: kerr.InvalidTopicException.Code, Msg: err.Error()}
	}
	t, ok := b.topics.Get(name)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
	}
	return t, nil
}

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
// Differences from Kafka: broker resources cannot be altered (no dynamic
// broker configuration; INVALID_REQUEST).

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AlterConfigs, (*Broker).handleAlterConfigs) }

func (b *Broker) handleAlterConfigs(_ context.Context, _ *wire.Request, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	count := map[resourceKey]int{}
	for _, r := range req.Resources {
		count[resourceKey{int8(r.ResourceType), r.ResourceName}]++
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	for _, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if count[resourceKey{int8(rr.ResourceType), rr.ResourceName}] > 1 {
			err = errorf(kerr.InvalidRequest, "Resource %s is listed more than once in the request.", rr.ResourceName)
		} else {
			err = b.alterOne(&rr, req.ValidateOnly)
		}
		if err != nil {
			res.ErrorCode = errorCode(err)
			res.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *Broker) alterOne(rr *kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	overrides := make(map[string]*string, len(rr.Configs))
	for _, c := range rr.Configs {
		if _, dup := overrides[c.Name]; dup {
			return errorf(kerr.InvalidRequest, "Error due to duplicate config keys: %s", c.Name)
		}
		if c.Value == nil {
			return errorf(kerr.InvalidRequest, "Null value not supported for : %s", c.Name)
		}
		overrides[c.Name] = c.Value
	}
	t, err := b.alterableTopic(int8(rr.ResourceType), rr.ResourceName)
	if err != nil {
		return err
	}
	plain, cfg, err := b.validateTopicConfigs(overrides)
	if err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	return b.setTopicConfigs(t.Name, plain, cfg)
}

// alterableTopic resolves the target of an alter request: a topic, or an
// error for other resource types.
func (b *Broker) alterableTopic(typ int8, name string) (*topics.Topic, error) {
	switch typ {
	case resourceTopic:
		if err := topics.ValidateName(name); err != nil {
			return nil, &Error{Code: kerr.InvalidTopicException.Code, Msg: err.Error()}
		}
		t, ok := b.topics.Get(name)
		if !ok {
			return nil, errorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
		}
		return t, nil
	case resourceBroker, resourceBrokerLogger:
		if err := b.checkBrokerResource(name); err != nil {
			return nil, err
		}
		return nil, errorf(kerr.InvalidRequest, "Sluice has no dynamic broker configuration: set broker configs in the --config file and restart.")
	default:
		return nil, errorf(kerr.InvalidRequest, "Unsupported resource type %d.", typ)
	}
}

// DescribeConfigs (key 32), v1–v4: the effective configuration of topics
// (every topic config of the config table: override, broker setting or
// default) and of this broker (every broker config), each with its source,
// read-only and sensitive flags, synonyms (when include_synonyms), type (v3+)
// and documentation (v3+, when include_documentation). config_names filters
// the entries; null means all.
//
// Resources: TOPIC (unknown → UNKNOWN_TOPIC_OR_PARTITION, illegal name →
// INVALID_TOPIC_EXCEPTION); BROKER named "" (the cluster-wide dynamic
// defaults set, each DYNAMIC_DEFAULT_BROKER_CONFIG) or this node's id (every
// broker config; source DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG or DEFAULT_CONFIG, synonyms in Kafka's order; any
// other name → INVALID_REQUEST, as Kafka); BROKER_LOGGER → an empty list
// (Sluice has no per-logger levels); GROUP → the share-group configs
// (share_group_configs.go); anything else INVALID_REQUEST.
// Sensitive values are returned as null.

package broker

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DescribeConfigs, (*Broker).handleDescribeConfigs) }

const (
	resourceTopic        = int8(kmsg.ConfigResourceTypeTopic)
	resourceBroker       = int8(kmsg.ConfigResourceTypeBroker)
	resourceBrokerLogger = int8(kmsg.ConfigResourceTypeBrokerLogger)
)

func (b *Broker) handleDescribeConfigs(_ context.Context, r *wire.Request, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		values, err := []config.Value(nil), b.configResourceDenied(r, authz.OpDescribeConfigs, int8(rr.ResourceType), rr.ResourceName)
		if err == nil {
			values, err = b.describeResource(int8(rr.ResourceType), rr.ResourceName)
		}
		if err != nil {
			res.ErrorCode = errorCode(err)
			res.ErrorMessage = errorMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		var want map[string]bool
		if rr.ConfigNames != nil {
			want = make(map[string]bool, len(rr.ConfigNames))
			for _, n := range rr.ConfigNames {
				want[n] = true
			}
		}
		for _, v := range values {
			if want != nil && !want[v.Name] {
				continue
			}
			res.Configs = append(res.Configs, describeEntry(req, v))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// describeResource returns the resolved configs of one resource.
func (b *Broker) describeResource(typ int8, name string) ([]config.Value, error) {
	switch typ {
	case resourceTopic:
		t, err := b.lookupTopic(name)
		if err != nil {
			return nil, err
		}
		return b.conf().ResolveTopic(t.Configs), nil
	case resourceBroker:
		if err := b.checkBrokerResource(name); err != nil {
			return nil, err
		}
		if name == "" {
			return b.conf().DescribeClusterDefaults(), nil // dynamic_configs.go
		}
		return b.withMetricsAddr(b.conf().DescribeBroker()), nil // health.go
	case resourceBrokerLogger:
		if err := b.checkBrokerResource(name); err != nil {
			return nil, err
		}
		return nil, nil
	case resourceGroup:
		return b.describeGroupConfigs(name) // share_group_configs.go
	default:
		return nil, errorf(kerr.InvalidRequest, "Unsupported resource type %d.", typ)
	}
}

// checkBrokerResource accepts "" (cluster default) and this node's id.
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return errorf(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != b.self() {
		return errorf(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", b.self(), name)
	}
	return nil
}

func describeEntry(req *kmsg.DescribeConfigsRequest, v config.Value) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = v.Name
	if !v.Null && !v.Def.Sensitive {
		c.Value = kmsg.StringPtr(v.Value)
	}
	c.ReadOnly = v.Def.ReadOnly
	c.Source = kmsg.ConfigSource(v.Source)
	c.IsSensitive = v.Def.Sensitive
	if req.IncludeSynonyms {
		for _, s := range v.Synonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name = s.Name
			if !v.Def.Sensitive {
				syn.Value = kmsg.StringPtr(s.Value)
			}
			syn.Source = kmsg.ConfigSource(s.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
	}
	if req.Version >= 3 {
		c.ConfigType = kmsg.ConfigType(v.Def.Type.Kmsg())
		if req.IncludeDocumentation {
			c.Documentation = kmsg.StringPtr(v.Def.Doc)
		}
	}
	return c
}

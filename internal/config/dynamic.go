package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Dynamic broker configs, as Kafka's: a broker config Kafka marks dynamic
// (read_only=false) can be set at runtime for one broker (DYNAMIC_BROKER_CONFIG)
// or as the cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG). The
// effective value is, in this order: this broker's dynamic value, the
// cluster-wide dynamic default, the static properties, the default.
//
// Sluice accepts a dynamic value only for the configs it applies live
// (LiveDynamic): the broker-level defaults of topic configs (re-resolved
// for every topic without its own override), the replication throttle rates,
// unclean.leader.election.enable, max.connections and
// max.connections.per.ip. Other configs Kafka marks dynamic are refused
// like static ones, so that no accepted change is silently ignored until a
// restart.

// liveExtra are the dynamic configs, other than the topic-config defaults,
// that Sluice applies without a restart.
var liveExtra = map[string]bool{
	"leader.replication.throttled.rate":   true,
	"follower.replication.throttled.rate": true,
	"unclean.leader.election.enable":      true,
	"max.connections":                     true,
	"max.connections.per.ip":              true,
}

// LiveDynamic reports whether name can be set dynamically on Sluice: Kafka
// marks it dynamic and Sluice applies a change without a restart.
func LiveDynamic(name string) bool {
	i, ok := brokerIndex[name]
	if !ok || brokerDefs[i].ReadOnly || brokerDefs[i].Effect != "" && !liveExtra[name] {
		return false
	}
	if liveExtra[name] {
		return true
	}
	_, topicDefault := brokerChain[name]
	return topicDefault
}

// ValidateDynamic checks a complete set of dynamic configs for one entity:
// an unknown name or a bad value is a *ConfigError (INVALID_CONFIG), a
// config that cannot change at runtime a *RequestError (INVALID_REQUEST)
// listing every such name, as Kafka's "Cannot update these configs
// dynamically".
func ValidateDynamic(configs map[string]string) error {
	names := slices.Sorted(maps.Keys(configs))
	var static []string
	for _, n := range names {
		i, ok := brokerIndex[n]
		if !ok {
			if _, prefixed := lookupPrefixed(n); prefixed {
				static = append(static, n)
				continue
			}
			return &ConfigError{Name: n, Msg: "unknown broker config name" + didYouMean(SuggestBroker(n))}
		}
		if err := brokerDefs[i].Check(strings.TrimSpace(configs[n])); err != nil {
			return err
		}
		if !LiveDynamic(n) {
			static = append(static, n)
		}
	}
	if len(static) > 0 {
		return &RequestError{Msg: fmt.Sprintf("Cannot update these configs dynamically: [%s]", strings.Join(static, ", "))}
	}
	return nil
}

// WithDynamic returns a copy of b with the given dynamic configs of this
// broker and cluster-wide defaults on top of its static properties. The
// maps are expected to have passed ValidateDynamic; the combination is
// checked again (cross-config rules) and an error leaves b as it was.
func (b *Broker) WithDynamic(perBroker, clusterDefault map[string]string) (*Broker, error) {
	nb := *b
	nb.DynamicBroker = trimmed(perBroker)
	nb.DynamicDefault = trimmed(clusterDefault)
	if err := nb.fill(); err != nil {
		return nil, err
	}
	return &nb, nil
}

func trimmed(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// dynamicValue is name's dynamic value: this broker's, else the cluster
// default's.
func (b *Broker) dynamicValue(name string) (string, bool) {
	if v, ok := b.DynamicBroker[name]; ok {
		return v, true
	}
	v, ok := b.DynamicDefault[name]
	return v, ok
}

// Explicit returns the value of name set dynamically or in the properties
// (not the default): ok is false when none is set.
func (b *Broker) Explicit(name string) (string, bool) {
	if v, ok := b.dynamicValue(name); ok {
		return v, true
	}
	v, ok := b.Raw[name]
	return v, ok
}

// DescribeClusterDefaults describes the cluster-wide dynamic defaults, as
// DescribeConfigs reports the broker resource "": only the configs set,
// each with source DYNAMIC_DEFAULT_BROKER_CONFIG.
func (b *Broker) DescribeClusterDefaults() []Value {
	var out []Value
	for _, n := range slices.Sorted(maps.Keys(b.DynamicDefault)) {
		i, ok := brokerIndex[n]
		if !ok {
			continue
		}
		d := brokerDefs[i]
		v := Value{Name: n, Value: b.DynamicDefault[n], Source: SourceDynamicDefault, Def: cloneDef(d),
			Synonyms: []Synonym{{Name: n, Value: b.DynamicDefault[n], Source: SourceDynamicDefault}}}
		if d.Sensitive {
			v.Value, v.Null, v.Synonyms[0].Value = "", true, ""
		}
		out = append(out, v)
	}
	return out
}

// ApplyIncrementalBroker applies IncrementalAlterConfigs operations to an
// entity's dynamic broker configs, as ApplyIncremental does for topic
// overrides; APPEND and SUBTRACT start from the current dynamic value, else
// from b's effective value. The result is checked by ValidateDynamic.
func (b *Broker) ApplyIncrementalBroker(current map[string]string, ops []AlterOp) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	for _, op := range ops {
		if op.Op < OpSet || op.Op > OpSubtract {
			return nil, &RequestError{Msg: fmt.Sprintf("unknown alter operation %d for config %q", op.Op, op.Name)}
		}
		d, ok := LookupBroker(op.Name)
		if !ok {
			return nil, &ConfigError{Name: op.Name, Msg: "unknown broker config name" + didYouMean(SuggestBroker(op.Name))}
		}
		if op.Op != OpDelete && op.Value == nil {
			return nil, &ConfigError{Name: op.Name, Msg: "null value not supported for this operation"}
		}
		switch op.Op {
		case OpSet:
			out[op.Name] = *op.Value
		case OpDelete:
			delete(out, op.Name)
		case OpAppend, OpSubtract:
			if d.Type != List {
				return nil, &ConfigError{Name: op.Name, Value: *op.Value,
					Msg: fmt.Sprintf("APPEND and SUBTRACT need a LIST config; this one is %s", d.Type)}
			}
			base, ok := out[op.Name]
			if !ok {
				base, _ = b.Value(op.Name)
			}
			items := parseList(base)
			for _, v := range parseList(*op.Value) {
				if op.Op == OpAppend {
					if !slices.Contains(items, v) {
						items = append(items, v)
					}
				} else {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			out[op.Name] = strings.Join(items, ",")
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

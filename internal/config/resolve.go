package config

import (
	"strconv"
	"strings"
)

// Config sources as DescribeConfigs reports them; equal to the
// kmsg.ConfigSource constants of the same names.
const (
	SourceDynamicTopic   int8 = 1 // DYNAMIC_TOPIC_CONFIG: a topic override
	SourceDynamicBroker  int8 = 2 // DYNAMIC_BROKER_CONFIG: set for this broker at runtime
	SourceDynamicDefault int8 = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG: cluster-wide default set at runtime
	SourceStaticBroker   int8 = 4 // STATIC_BROKER_CONFIG: set in the broker's properties
	SourceDefault        int8 = 5 // DEFAULT_CONFIG: Kafka's (or Sluice's) default
)

// Value is one resolved config entry as DescribeConfigs reports it.
type Value struct {
	Name, Value string
	Null        bool // no value (Kafka null); always true for sensitive configs
	Source      int8 // kmsg.ConfigSource
	Synonyms    []Synonym
	Def         Def
}

// Synonym is one entry of a Value's synonym chain, highest precedence first.
type Synonym struct {
	Name, Value string
	Source      int8 // kmsg.ConfigSource
}

// brokerSynonymEntries lists the values of the broker names in chain, in
// Kafka's order: by source first (this broker's dynamic configs, the
// cluster-wide dynamic defaults, the static properties, the defaults), then
// in chain order within a source.
func (b *Broker) brokerSynonymEntries(chain []string) []Synonym {
	var out []Synonym
	for _, src := range []struct {
		m   map[string]string
		src int8
	}{{b.DynamicBroker, SourceDynamicBroker}, {b.DynamicDefault, SourceDynamicDefault}, {b.Raw, SourceStaticBroker}} {
		for _, n := range chain {
			if v, ok := src.m[n]; ok {
				out = append(out, Synonym{Name: n, Value: v, Source: src.src})
			}
		}
	}
	for _, n := range chain {
		if d := brokerDefs[brokerIndex[n]].Default; d != nil {
			out = append(out, Synonym{Name: n, Value: *d, Source: SourceDefault})
		}
	}
	if brokerDefs[brokerIndex[chain[0]]].Sensitive {
		for i := range out {
			out[i].Value = ""
		}
	}
	return out
}

// convertSynonym turns a broker synonym's value into the topic config's
// unit: *.hours and *.minutes become milliseconds; a negative retention time
// means unlimited (-1), as in Kafka.
func convertSynonym(name, v string) string {
	var mult int64
	switch {
	case strings.HasSuffix(name, ".hours"):
		mult = 3600000
	case strings.HasSuffix(name, ".minutes"):
		mult = 60000
	default:
		return v
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return v // cannot happen: broker values are validated
	}
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*mult, 10)
}

// resolveTopicDef resolves one topic config. Precedence: topic override >
// first broker synonym set dynamically for this broker > first set as a
// cluster-wide dynamic default > first set in the properties > default.
func (b *Broker) resolveTopicDef(d Def, overrides map[string]string) Value {
	val := Value{Name: d.Name, Def: cloneDef(d)}
	if v, ok := overrides[d.Name]; ok {
		val.Value, val.Source = v, SourceDynamicTopic
		val.Synonyms = append(val.Synonyms, Synonym{Name: d.Name, Value: v, Source: SourceDynamicTopic})
	}
	if len(d.Synonyms) > 0 {
		val.Synonyms = append(val.Synonyms, b.brokerSynonymEntries(d.Synonyms)...)
	}
	if val.Source == 0 {
		for _, s := range val.Synonyms {
			if s.Source != SourceDefault && s.Source != SourceDynamicTopic {
				val.Value, val.Source = convertSynonym(s.Name, s.Value), s.Source
				break
			}
		}
	}
	if val.Source == 0 {
		val.Source = SourceDefault
		if d.Default == nil {
			val.Null = true
		} else {
			val.Value = *d.Default
		}
	}
	if d.Sensitive {
		val.Value, val.Null = "", true
	}
	return val
}

// ResolveTopic returns every topic config, sorted by name, with its
// effective value, source and synonyms for a topic with the given overrides.
// Overrides are expected to be valid (see ValidateTopicConfigs); names that
// are not topic configs are ignored.
func (b *Broker) ResolveTopic(overrides map[string]string) []Value {
	out := make([]Value, len(topicDefs))
	for i, d := range topicDefs {
		out[i] = b.resolveTopicDef(d, overrides)
	}
	return out
}

// ResolveTopicConfig resolves a single topic config; ok is false if name is
// not a topic config.
func (b *Broker) ResolveTopicConfig(name string, overrides map[string]string) (Value, bool) {
	i, ok := topicIndex[name]
	if !ok {
		return Value{}, false
	}
	return b.resolveTopicDef(topicDefs[i], overrides), true
}

// brokerChain is the synonym chain DescribeConfigs reports for a broker
// config: when the name is a broker synonym of a topic config, that list
// from the name onwards (log.retention.minutes → minutes, hours); otherwise
// just the name.
var brokerChain = map[string][]string{}

func init() {
	for _, d := range topicDefs {
		for i, s := range d.Synonyms {
			brokerChain[s] = d.Synonyms[i:]
		}
	}
}

func (b *Broker) describeBrokerDef(d Def) Value {
	val := Value{Name: d.Name, Def: cloneDef(d)}
	chain := brokerChain[d.Name]
	if chain == nil {
		chain = []string{d.Name}
	}
	val.Synonyms = b.brokerSynonymEntries(chain)
	if v, ok := b.dynamicValue(d.Name); ok {
		val.Value = v
	} else if v, ok := b.Raw[d.Name]; ok {
		val.Value = v
	} else if d.Default != nil {
		val.Value = *d.Default
	} else {
		val.Null = true
	}
	val.Source = SourceDefault
	if len(val.Synonyms) > 0 {
		val.Source = val.Synonyms[0].Source
	}
	if d.Sensitive {
		val.Value, val.Null = "", true
	}
	return val
}

// DescribeBroker returns every broker config, sorted by name, as
// DescribeConfigs reports them for the broker resource.
func (b *Broker) DescribeBroker() []Value {
	out := make([]Value, len(brokerDefs))
	for i, d := range brokerDefs {
		out[i] = b.describeBrokerDef(d)
	}
	return out
}

// DescribeBrokerConfig describes a single broker config; ok is false if name
// is not a broker config.
func (b *Broker) DescribeBrokerConfig(name string) (Value, bool) {
	i, ok := brokerIndex[name]
	if !ok {
		return Value{}, false
	}
	return b.describeBrokerDef(brokerDefs[i]), true
}

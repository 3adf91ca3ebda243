package config

import (
	"slices"
	"strings"
)

var (
	topicIndex  = map[string]int{}
	brokerIndex = map[string]int{}
)

func init() {
	brokerDefs = append(append(append(brokerDefs, securityDefs...), oauthDefs...), groupBoundDefs...)
	topicDefs = append(topicDefs, dlqTopicDefs...) // group_defs.go
	sortDefs := func(defs []Def) {
		slices.SortFunc(defs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	}
	sortDefs(topicDefs)
	sortDefs(brokerDefs)
	for _, defs := range [][]Def{topicDefs, brokerDefs} {
		for i := range defs {
			if defs[i].rule.fn == nil {
				defs[i].rule = typeRule(defs[i].Type)
			}
			defs[i].Validate, defs[i].Valid = defs[i].rule.fn, defs[i].rule.desc
		}
	}
	for i, d := range topicDefs {
		if _, dup := topicIndex[d.Name]; dup {
			panic("config: duplicate topic config " + d.Name)
		}
		topicIndex[d.Name] = i
	}
	for i, d := range brokerDefs {
		if _, dup := brokerIndex[d.Name]; dup {
			panic("config: duplicate broker config " + d.Name)
		}
		brokerIndex[d.Name] = i
	}
}

// cloneDef returns a copy of d that shares nothing mutable with the table.
func cloneDef(d Def) Def {
	d.Synonyms = slices.Clone(d.Synonyms)
	if d.Default != nil {
		d.Default = ptr(*d.Default)
	}
	return d
}

func cloneDefs(defs []Def) []Def {
	out := make([]Def, len(defs))
	for i, d := range defs {
		out[i] = cloneDef(d)
	}
	return out
}

// TopicDefs returns every topic-level config, sorted by name. The result is
// a copy: callers may modify it.
func TopicDefs() []Def { return cloneDefs(topicDefs) }

// LookupTopic finds a topic-level config by name.
func LookupTopic(name string) (Def, bool) {
	i, ok := topicIndex[name]
	if !ok {
		return Def{}, false
	}
	return cloneDef(topicDefs[i]), true
}

// BrokerDefs returns every broker-level config, sorted by name. The result
// is a copy: callers may modify it.
func BrokerDefs() []Def { return cloneDefs(brokerDefs) }

// LookupBroker finds a broker-level config by name. A per-listener name
// (listener.name.<listener>.<config>) returns the def of its config under the
// full name.
func LookupBroker(name string) (Def, bool) {
	i, ok := brokerIndex[name]
	if !ok {
		return lookupPrefixed(name)
	}
	return cloneDef(brokerDefs[i]), true
}

// ValidateTopicOverrides checks that every name is a known topic config and
// every value is valid for it. A nil value (CreateTopics with a null config
// value) is rejected like Kafka does, with INVALID_CONFIG naming every null
// config. Otherwise the first problem in name order is returned. The error
// is always a *ConfigError.
func ValidateTopicOverrides(overrides map[string]*string) error {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	slices.Sort(names)
	var nulls []string
	for _, n := range names {
		if overrides[n] == nil {
			nulls = append(nulls, n)
		}
	}
	if len(nulls) > 0 {
		return &ConfigError{Name: strings.Join(nulls, ","), Msg: "null value not supported for topic configs"}
	}
	for _, n := range names {
		if err := checkTopic(n, *overrides[n]); err != nil {
			return err
		}
	}
	return nil
}

// checkTopic validates one topic config name and value.
func checkTopic(name, value string) error {
	i, ok := topicIndex[name]
	if !ok {
		return unknownTopic(name)
	}
	return topicDefs[i].Check(value)
}

func unknownTopic(name string) error {
	return &ConfigError{Name: name, Msg: "unknown topic config name" + didYouMean(SuggestTopic(name))}
}

// ValidateTopicConfigs is ValidateTopicOverrides for a map without null
// values (e.g. stored overrides or AlterConfigs input after null checks).
func ValidateTopicConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := checkTopic(n, configs[n]); err != nil {
			return err
		}
	}
	return nil
}

// describeDefault renders a default for docs: "null" for nil, `""` for empty.
func describeDefault(d *string) string {
	switch {
	case d == nil:
		return "null"
	case *d == "":
		return `""`
	}
	return *d
}

// typeRule is the validator of a config without a specific one: values must
// at least parse as its type.
func typeRule(t Type) rule {
	switch t {
	case Boolean:
		return vBool()
	case Int, Short, Long:
		return vInt(t)
	case Double:
		return vDouble()
	}
	return rule{}
}

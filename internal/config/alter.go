package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Incremental alter operation types (IncrementalAlterConfigs).
const (
	OpSet      int8 = 0
	OpDelete   int8 = 1
	OpAppend   int8 = 2
	OpSubtract int8 = 3
)

// AlterOp is one IncrementalAlterConfigs operation on a topic config.
type AlterOp struct {
	Name  string
	Op    int8 // OpSet, OpDelete, OpAppend, OpSubtract
	Value *string
}

// ApplyIncremental applies ops to a copy of current (a topic's overrides)
// and returns the new override map; current is never modified.
//
// SET stores the value; DELETE removes the override (reverting to the broker
// value or default); APPEND and SUBTRACT work on LIST configs only, starting
// from the current override or, when there is none, from the config's
// default, as Kafka does. APPEND adds the elements not yet present, SUBTRACT
// removes every occurrence.
//
// Errors: a repeated name or an unknown operation is a *RequestError
// (INVALID_REQUEST); an unknown name, a missing value, APPEND/SUBTRACT on a
// non-list config or an invalid resulting value is a *ConfigError
// (INVALID_CONFIG).
func ApplyIncremental(current map[string]string, ops []AlterOp) (map[string]string, error) {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, &RequestError{Msg: fmt.Sprintf("config %q appears more than once in the request", op.Name)}
		}
		seen[op.Name] = true
		if op.Op < OpSet || op.Op > OpSubtract {
			return nil, &RequestError{Msg: fmt.Sprintf("unknown alter operation %d for config %q", op.Op, op.Name)}
		}
	}
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	for _, op := range ops {
		i, ok := topicIndex[op.Name]
		if !ok {
			return nil, unknownTopic(op.Name)
		}
		d := topicDefs[i]
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
			if !ok && d.Default != nil {
				base = *d.Default
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
		if v, ok := out[op.Name]; ok {
			if err := d.Check(v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

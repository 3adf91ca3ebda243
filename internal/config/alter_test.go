package config

import (
	"errors"
	"maps"
	"testing"
)

func TestApplyIncremental(t *testing.T) {
	cur := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}
	orig := maps.Clone(cur)
	cases := []struct {
		name string
		cur  map[string]string
		ops  []AlterOp
		want map[string]string
		code int16 // 0 = success
	}{
		{"set", cur, []AlterOp{{"segment.ms", OpSet, ptr("60000")}},
			map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "segment.ms": "60000"}, 0},
		{"delete", cur, []AlterOp{{"retention.ms", OpDelete, nil}},
			map[string]string{"cleanup.policy": "compact"}, 0},
		{"delete absent", cur, []AlterOp{{"segment.ms", OpDelete, nil}}, orig, 0},
		{"append to override", cur, []AlterOp{{"cleanup.policy", OpAppend, ptr("delete")}},
			map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete"}, 0},
		{"append existing", cur, []AlterOp{{"cleanup.policy", OpAppend, ptr("compact")}}, orig, 0},
		{"append to default", nil, []AlterOp{{"cleanup.policy", OpAppend, ptr("compact")}},
			map[string]string{"cleanup.policy": "delete,compact"}, 0},
		{"subtract", map[string]string{"cleanup.policy": "compact,delete"}, []AlterOp{{"cleanup.policy", OpSubtract, ptr("delete")}},
			map[string]string{"cleanup.policy": "compact"}, 0},
		{"subtract to empty", cur, []AlterOp{{"cleanup.policy", OpSubtract, ptr("compact")}}, nil, 40},
		{"throttled append", nil, []AlterOp{{"leader.replication.throttled.replicas", OpAppend, ptr("0:1")}},
			map[string]string{"leader.replication.throttled.replicas": "0:1"}, 0},
		{"append non-list", cur, []AlterOp{{"retention.ms", OpAppend, ptr("5")}}, nil, 40},
		{"bad value", cur, []AlterOp{{"retention.ms", OpSet, ptr("soon")}}, nil, 40},
		{"append bad word", cur, []AlterOp{{"cleanup.policy", OpAppend, ptr("shred")}}, nil, 40},
		{"unknown name", cur, []AlterOp{{"retention.mss", OpSet, ptr("1")}}, nil, 40},
		{"unknown name delete", cur, []AlterOp{{"retention.mss", OpDelete, nil}}, nil, 40},
		{"null set", cur, []AlterOp{{"retention.ms", OpSet, nil}}, nil, 40},
		{"duplicate", cur, []AlterOp{{"retention.ms", OpSet, ptr("1")}, {"retention.ms", OpDelete, nil}}, nil, 42},
		{"unknown op", cur, []AlterOp{{"retention.ms", 9, ptr("1")}}, nil, 42},
		{"several", cur, []AlterOp{{"retention.ms", OpDelete, nil}, {"segment.bytes", OpSet, ptr("1048576")},
			{"cleanup.policy", OpAppend, ptr("delete")}},
			map[string]string{"segment.bytes": "1048576", "cleanup.policy": "compact,delete"}, 0},
	}
	for _, c := range cases {
		got, err := ApplyIncremental(c.cur, c.ops)
		if c.code == 0 {
			if err != nil || !maps.Equal(got, c.want) {
				t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
			}
		} else {
			var coded interface{ KafkaCode() int16 }
			if !errors.As(err, &coded) || coded.KafkaCode() != c.code || got != nil {
				t.Errorf("%s: want code %d, got %v (%v)", c.name, c.code, err, got)
			}
		}
		if !maps.Equal(cur, orig) {
			t.Fatalf("%s: input mutated: %v", c.name, cur)
		}
	}
}

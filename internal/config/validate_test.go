package config

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopicValues(t *testing.T) {
	cases := []struct {
		name, value string
		ok          bool
	}{
		// LIST: cleanup.policy
		{"cleanup.policy", "compact", true},
		{"cleanup.policy", "delete", true},
		{"cleanup.policy", "compact,delete", true},
		{"cleanup.policy", "delete,compact", true},
		{"cleanup.policy", " compact , delete ", true},
		{"cleanup.policy", "", false},
		{"cleanup.policy", "   ", false},
		{"cleanup.policy", "shred", false},
		{"cleanup.policy", "compact,compact", false},
		{"cleanup.policy", "compact,", false},
		{"cleanup.policy", ",compact", false},
		{"cleanup.policy", "compact,,delete", false},
		{"cleanup.policy", "Compact", false},
		// LONG with a lower bound
		{"retention.ms", "-1", true},
		{"retention.ms", "0", true},
		{"retention.ms", " 3600000 ", true},
		{"retention.ms", "9223372036854775807", true},
		{"retention.ms", "-2", false},
		{"retention.ms", "9223372036854775808", false},
		{"retention.ms", "1h", false},
		{"retention.ms", "1.5", false},
		{"retention.ms", "", false},
		{"retention.bytes", "-12345", true},
		{"segment.ms", "0", false},
		{"local.retention.ms", "-2", true},
		{"local.retention.ms", "-3", false},
		// INT
		{"segment.bytes", "1048576", true},
		{"segment.bytes", "1048575", false},
		{"segment.bytes", "2147483647", true},
		{"segment.bytes", "2147483648", false},
		{"max.message.bytes", "0", true},
		{"max.message.bytes", "-1", false},
		{"compression.gzip.level", "-1", true},
		{"compression.gzip.level", "0", false},
		{"compression.gzip.level", "9", true},
		{"compression.gzip.level", "10", false},
		{"compression.lz4.level", "17", true},
		{"compression.lz4.level", "18", false},
		{"compression.zstd.level", "-131072", true},
		{"compression.zstd.level", "-131073", false},
		{"compression.zstd.level", "22", true},
		{"compression.zstd.level", "23", false},
		// DOUBLE
		{"min.cleanable.dirty.ratio", "0", true},
		{"min.cleanable.dirty.ratio", "1", true},
		{"min.cleanable.dirty.ratio", "0.25", true},
		{"min.cleanable.dirty.ratio", "1.01", false},
		{"min.cleanable.dirty.ratio", "-0.1", false},
		{"min.cleanable.dirty.ratio", "NaN", false},
		{"min.cleanable.dirty.ratio", "half", false},
		// BOOLEAN
		{"preallocate", "true", true},
		{"preallocate", "FALSE", true},
		{"preallocate", " True ", true},
		{"preallocate", "yes", false},
		{"preallocate", "1", false},
		{"remote.storage.enable", "false", true},
		{"remote.storage.enable", "true", false},
		// STRING enums
		{"compression.type", "zstd", true},
		{"compression.type", "uncompressed", true},
		{"compression.type", "producer", true},
		{"compression.type", "none", false},
		{"compression.type", "ZSTD", false},
		{"message.timestamp.type", "LogAppendTime", true},
		{"message.timestamp.type", "logappendtime", false},
		// LIST: throttled replicas
		{"leader.replication.throttled.replicas", "", true},
		{"leader.replication.throttled.replicas", "*", true},
		{"leader.replication.throttled.replicas", "0:1, 1:2", true},
		{"leader.replication.throttled.replicas", "0:x", false},
		{"leader.replication.throttled.replicas", "*,0:1", false},
	}
	for _, c := range cases {
		err := ValidateTopicOverrides(map[string]*string{c.name: ptr(c.value)})
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: err=%v, want ok=%v", c.name, c.value, err, c.ok)
			continue
		}
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Name != c.name || ce.KafkaCode() != 40 {
				t.Errorf("%s=%q: want *ConfigError naming it, got %#v", c.name, c.value, err)
			}
		}
	}
}

func TestValidateTopicOverridesNamesAndNulls(t *testing.T) {
	if err := ValidateTopicOverrides(nil); err != nil {
		t.Fatal(err)
	}
	err := ValidateTopicOverrides(map[string]*string{"retention.ms": ptr("1000"), "retention.mss": ptr("1")})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Name != "retention.mss" || !strings.Contains(ce.Msg, "unknown") {
		t.Fatalf("unknown name: %v", err)
	}
	// Broker names are not topic names.
	if ValidateTopicOverrides(map[string]*string{"log.retention.ms": ptr("1")}) == nil {
		t.Fatal("broker name accepted as topic config")
	}
	err = ValidateTopicOverrides(map[string]*string{"segment.ms": nil, "segment.bytes": nil, "retention.ms": ptr("1")})
	if !errors.As(err, &ce) || ce.Name != "segment.bytes,segment.ms" || ce.KafkaCode() != 40 || !strings.Contains(ce.Msg, "null") {
		t.Fatalf("null values: %v", err)
	}
	// Several valid overrides at once.
	ok := map[string]*string{"cleanup.policy": ptr("compact"), "min.compaction.lag.ms": ptr("0"), "segment.bytes": ptr("1048576")}
	if err := ValidateTopicOverrides(ok); err != nil {
		t.Fatal(err)
	}
	if err := ValidateTopicConfigs(map[string]string{"cleanup.policy": "shred"}); err == nil {
		t.Fatal("ValidateTopicConfigs accepted a bad value")
	}
}

func TestDefCheckWithoutValidator(t *testing.T) {
	d := Def{Name: "x"}
	if err := d.Check("anything"); err != nil {
		t.Fatal(err)
	}
}

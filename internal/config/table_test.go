package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTablesSortedUniqueAndDefaultsValid(t *testing.T) {
	for _, tc := range []struct {
		kind string
		defs []Def
	}{{"topic", TopicDefs()}, {"broker", BrokerDefs()}} {
		if !slices.IsSortedFunc(tc.defs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("%s defs not sorted", tc.kind)
		}
		for _, d := range tc.defs {
			if d.Doc == "" || d.Type.String() == "UNKNOWN" {
				t.Errorf("%s %s: missing doc or type", tc.kind, d.Name)
			}
			if d.Default != nil {
				if err := d.Check(*d.Default); err != nil {
					t.Errorf("%s %s: default %q does not validate: %v", tc.kind, d.Name, *d.Default, err)
				}
			}
		}
	}
}

func TestKafka4TopicConfigSet(t *testing.T) {
	want := []string{
		"cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
		"compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable", "file.delete.delay.ms",
		"flush.messages", "flush.ms",
		"follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
		"local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
		"message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
		"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
		"remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
		"retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
		"unclean.leader.election.enable",
	}
	var got []string
	for _, d := range TopicDefs() {
		got = append(got, d.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("topic configs:\n got %v\nwant %v", got, want)
	}
	for _, removed := range []string{"message.format.version", "message.downconversion.enable", "message.timestamp.difference.max.ms"} {
		if _, ok := LookupTopic(removed); ok {
			t.Errorf("%s was removed in Kafka 4.0 but is a topic config", removed)
		}
		if _, ok := LookupBroker("log." + removed); ok {
			t.Errorf("log.%s was removed in Kafka 4.0 but is a broker config", removed)
		}
	}
}

func TestTopicSynonymsAreBrokerConfigsOfSameKind(t *testing.T) {
	for _, d := range TopicDefs() {
		for _, s := range d.Synonyms {
			bd, ok := LookupBroker(s)
			if !ok {
				t.Errorf("%s: synonym %s is not a broker config", d.Name, s)
				continue
			}
			if bd.Default != nil && d.Default != nil {
				// The broker default converted to topic units must equal the
				// topic default when it is the first synonym with a default.
				first := ""
				for _, s2 := range d.Synonyms {
					if b2, _ := LookupBroker(s2); b2.Default != nil {
						first = s2
						break
					}
				}
				if s == first && convertSynonym(s, *bd.Default) != *d.Default {
					t.Errorf("%s default %s != broker %s default %s", d.Name, *d.Default, s, *bd.Default)
				}
			}
		}
	}
}

func TestSpotDefaults(t *testing.T) {
	for name, want := range map[string]string{
		"segment.bytes": "1073741824", "retention.ms": "604800000", "max.message.bytes": "1048588",
		"message.timestamp.after.max.ms": "3600000", "compression.type": "producer", "cleanup.policy": "delete",
		"min.cleanable.dirty.ratio": "0.5", "delete.retention.ms": "86400000",
	} {
		d, _ := LookupTopic(name)
		if d.Default == nil || *d.Default != want {
			t.Errorf("%s default = %v, want %s", name, d.Default, want)
		}
	}
	for name, want := range map[string]string{
		"num.partitions": "1", "default.replication.factor": "1", "auto.create.topics.enable": "true",
		"socket.request.max.bytes": "104857600", "connections.max.idle.ms": "600000",
		"offsets.topic.num.partitions": "50", "offsets.retention.minutes": "10080",
		"group.initial.rebalance.delay.ms": "3000", "num.recovery.threads.per.data.dir": "2",
		"group.coordinator.rebalance.protocols": "classic,consumer,streams",
	} {
		d, _ := LookupBroker(name)
		if d.Default == nil || *d.Default != want {
			t.Errorf("%s default = %v, want %s", name, d.Default, want)
		}
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	d, _ := LookupTopic("retention.ms")
	d.Synonyms[0] = "mutated"
	*d.Default = "1"
	defs := TopicDefs()
	defs[0].Name = "mutated"
	again, _ := LookupTopic("retention.ms")
	if again.Synonyms[0] != "log.retention.ms" || *again.Default != "604800000" || TopicDefs()[0].Name != "cleanup.policy" {
		t.Fatal("caller mutation leaked into the table")
	}
	if _, ok := LookupTopic("no.such.config"); ok {
		t.Fatal("unknown name found")
	}
}

func TestKmsgWireValues(t *testing.T) {
	for typ, want := range map[Type]kmsg.ConfigType{
		Boolean: kmsg.ConfigTypeBoolean, String: kmsg.ConfigTypeString, Int: kmsg.ConfigTypeInt,
		Short: kmsg.ConfigTypeShort, Long: kmsg.ConfigTypeLong, Double: kmsg.ConfigTypeDouble,
		List: kmsg.ConfigTypeList, Class: kmsg.ConfigTypeClass, Password: kmsg.ConfigTypePassword,
	} {
		if typ.Kmsg() != int8(want) {
			t.Errorf("%s.Kmsg() = %d, want %d", typ, typ.Kmsg(), want)
		}
		if typ.String() != strings.ToUpper(want.String()) {
			t.Errorf("%s.String() vs kmsg %s", typ, want)
		}
	}
	if Type(0).Kmsg() != 0 || Type(0).String() != "UNKNOWN" {
		t.Error("zero Type")
	}
	for got, want := range map[int8]kmsg.ConfigSource{
		SourceDynamicTopic: kmsg.ConfigSourceDynamicTopicConfig, SourceDynamicBroker: kmsg.ConfigSourceDynamicBrokerConfig,
		SourceStaticBroker: kmsg.ConfigSourceStaticBrokerConfig, SourceDefault: kmsg.ConfigSourceDefaultConfig,
	} {
		if got != int8(want) {
			t.Errorf("source %d != kmsg %d", got, want)
		}
	}
}

func TestErrorsCarryKafkaCodes(t *testing.T) {
	err := ValidateTopicOverrides(map[string]*string{"retention.ms": ptr("abc")})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.KafkaCode() != 40 || ce.Name != "retention.ms" {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "retention.ms") || !strings.Contains(err.Error(), "LONG") {
		t.Errorf("message %q should name the config and the problem", err)
	}
	if (&RequestError{}).KafkaCode() != 42 {
		t.Error("RequestError code")
	}
}

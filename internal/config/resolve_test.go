package config

import (
	"testing"
)

func mustBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, err := NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func find(t *testing.T, vals []Value, name string) Value {
	t.Helper()
	for _, v := range vals {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("%s not in values", name)
	return Value{}
}

func TestResolvePrecedence(t *testing.T) {
	def := DefaultBroker()
	static := mustBroker(t, map[string]string{"log.retention.hours": "24", "log.cleanup.policy": "compact"})

	// Default.
	v := find(t, def.ResolveTopic(nil), "retention.ms")
	if v.Value != "604800000" || v.Source != SourceDefault || v.Null {
		t.Fatalf("default: %+v", v)
	}
	if len(v.Synonyms) != 1 || v.Synonyms[0] != (Synonym{"log.retention.hours", "168", SourceDefault}) {
		t.Fatalf("default synonyms: %+v", v.Synonyms)
	}
	// Broker static beats default, converted to ms.
	v = find(t, static.ResolveTopic(nil), "retention.ms")
	if v.Value != "86400000" || v.Source != SourceStaticBroker {
		t.Fatalf("static: %+v", v)
	}
	// Topic override beats broker static.
	v = find(t, static.ResolveTopic(map[string]string{"retention.ms": "1000"}), "retention.ms")
	if v.Value != "1000" || v.Source != SourceDynamicTopic {
		t.Fatalf("override: %+v", v)
	}
	want := []Synonym{
		{"retention.ms", "1000", SourceDynamicTopic},
		{"log.retention.hours", "24", SourceStaticBroker},
		{"log.retention.hours", "168", SourceDefault},
	}
	if len(v.Synonyms) != len(want) {
		t.Fatalf("synonyms %+v", v.Synonyms)
	}
	for i := range want {
		if v.Synonyms[i] != want[i] {
			t.Fatalf("synonym %d = %+v, want %+v", i, v.Synonyms[i], want[i])
		}
	}
	// Synonym precedence: log.retention.ms > minutes > hours.
	b := mustBroker(t, map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"})
	if v := find(t, b.ResolveTopic(nil), "retention.ms"); v.Value != "120000" {
		t.Fatalf("minutes should win over hours: %+v", v)
	}
	b = mustBroker(t, map[string]string{"log.retention.ms": "5", "log.retention.minutes": "2"})
	if v := find(t, b.ResolveTopic(nil), "retention.ms"); v.Value != "5" {
		t.Fatalf("ms should win: %+v", v)
	}
	b = mustBroker(t, map[string]string{"log.retention.hours": "-5"})
	if v := find(t, b.ResolveTopic(nil), "retention.ms"); v.Value != "-1" {
		t.Fatalf("negative hours is unlimited: %+v", v)
	}
	// Config without broker synonym.
	v = find(t, static.ResolveTopic(nil), "remote.storage.enable")
	if v.Value != "false" || v.Source != SourceDefault || len(v.Synonyms) != 0 {
		t.Fatalf("no synonym: %+v", v)
	}
	if got := len(def.ResolveTopic(nil)); got != len(TopicDefs()) {
		t.Fatalf("ResolveTopic returned %d values", got)
	}
}

func TestTopicTyped(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.cleanup.policy": "compact", "log.roll.hours": "1", "message.max.bytes": "2000000"})
	tc, err := b.Topic(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !tc.CleanupPolicyCompact || tc.CleanupPolicyDelete || tc.SegmentMs != 3600000 || tc.MaxMessageBytes != 2000000 ||
		tc.RetentionMs != 604800000 || tc.SegmentBytes != 1073741824 || tc.MinCleanableDirtyRatio != 0.5 ||
		tc.MessageTimestampType != "CreateTime" || tc.CompressionType != "producer" || tc.TimestampAfterMaxMs != 3600000 ||
		tc.FlushMessages != maxInt64 || tc.CompressionZstdLevel != 3 || tc.MinInsyncReplicas != 1 {
		t.Fatalf("%+v", tc)
	}
	tc, err = b.Topic(map[string]string{"cleanup.policy": " delete , compact ", "retention.ms": "-1", "flush.messages": "1"})
	if err != nil || !tc.CleanupPolicyCompact || !tc.CleanupPolicyDelete || tc.RetentionMs != -1 || tc.FlushMessages != 1 {
		t.Fatalf("%v %+v", err, tc)
	}
	if _, err := b.Topic(map[string]string{"cleanup.policy": "shred"}); err == nil {
		t.Fatal("bad override accepted")
	}
	if _, err := b.Topic(map[string]string{"bogus": "1"}); err == nil {
		t.Fatal("unknown override accepted")
	}
}

func TestDescribeBroker(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.retention.minutes": "30", "ssl.keystore.password": "secret", "num.partitions": "4"})
	vals := b.DescribeBroker()
	if len(vals) != len(BrokerDefs()) {
		t.Fatalf("got %d values", len(vals))
	}
	v := find(t, vals, "num.partitions")
	if v.Value != "4" || v.Source != SourceStaticBroker || !v.Def.ReadOnly {
		t.Fatalf("%+v", v)
	}
	v = find(t, vals, "log.retention.ms")
	if !v.Null || v.Source != SourceStaticBroker || len(v.Synonyms) != 2 ||
		v.Synonyms[0] != (Synonym{"log.retention.minutes", "30", SourceStaticBroker}) || v.Def.ReadOnly {
		t.Fatalf("%+v", v)
	}
	v = find(t, vals, "log.retention.hours")
	if v.Value != "168" || v.Source != SourceDefault {
		t.Fatalf("%+v", v)
	}
	v = find(t, vals, "ssl.keystore.password")
	if !v.Null || v.Value != "" || !v.Def.Sensitive || v.Synonyms[0].Value != "" {
		t.Fatalf("sensitive leaked: %+v", v)
	}
	v = find(t, vals, "advertised.listeners")
	if !v.Null || v.Source != SourceDefault {
		t.Fatalf("%+v", v)
	}
	if _, ok := b.DescribeBrokerConfig("nope"); ok {
		t.Fatal("unknown broker config described")
	}
	if _, ok := b.ResolveTopicConfig("nope", nil); ok {
		t.Fatal("unknown topic config resolved")
	}
}

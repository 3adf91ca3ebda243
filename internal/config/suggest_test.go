package config

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	for _, c := range []struct{ name, broker, topic string }{
		{"num.partitons", "num.partitions", ""},
		{"num.partitions", "num.partitions", ""},
		{"retention.ms", "log.retention.ms", "retention.ms"},
		{"segment.bytes", "log.segment.bytes", "segment.bytes"},
		{"cleanup.policy", "log.cleanup.policy", "cleanup.policy"},
		{"log.retention.ms", "log.retention.ms", "retention.ms"},
		{"retention.msx", "", "retention.ms"},
		{"cleanup.polciy", "", "cleanup.policy"},
		{"auto.create.topics.enabel", "auto.create.topics.enable", ""},
		{"no.such.setting", "", ""},
		{"x", "", ""},
	} {
		if got := SuggestBroker(c.name); got != c.broker {
			t.Errorf("SuggestBroker(%q) = %q, want %q", c.name, got, c.broker)
		}
		if got := SuggestTopic(c.name); got != c.topic {
			t.Errorf("SuggestTopic(%q) = %q, want %q", c.name, got, c.topic)
		}
	}
}

func TestUnknownNamesSuggest(t *testing.T) {
	for props, want := range map[string]string{
		"num.partitons":   "config num.partitons: unknown broker config name (did you mean num.partitions?)",
		"retention.ms":    "config retention.ms: unknown broker config name (did you mean log.retention.ms?)",
		"no.such.setting": "config no.such.setting: unknown broker config name",
	} {
		_, err := NewBroker(map[string]string{props: "1"})
		if err == nil || err.Error() != want {
			t.Errorf("NewBroker(%s): %v, want %q", props, err, want)
		}
	}
	err := ValidateTopicConfigs(map[string]string{"log.retention.ms": "1"})
	if err == nil || !strings.HasSuffix(err.Error(), "unknown topic config name (did you mean retention.ms?)") {
		t.Errorf("topic log.retention.ms: %v", err)
	}
	err = ValidateTopicConfigs(map[string]string{"cleanup.polcy": "compact"})
	if err == nil || !strings.HasSuffix(err.Error(), "(did you mean cleanup.policy?)") {
		t.Errorf("topic cleanup.polcy: %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"num.partitons", "num.partitions", 1}, {"", "abc", 3}} {
		if got := editDistance(c.a, c.b, 100); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

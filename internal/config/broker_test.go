package config

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultBroker(t *testing.T) {
	b := DefaultBroker()
	if b.NodeID != 1 || b.NumPartitions != 1 || b.DefaultReplicationFactor != 1 || !b.AutoCreateTopics ||
		b.SocketRequestMaxBytes != 104857600 || b.ConnectionsMaxIdleMs != 600000 || b.OffsetsTopicNumPartitions != 50 ||
		b.OffsetsRetentionMinutes != 10080 || !b.LogCleanerEnable || b.LogCleanerThreads != 1 ||
		b.LogCleanerDedupeBufferSize != 134217728 || b.LogCleanerBackoffMs != 15000 || b.MessageMaxBytes != 1048588 ||
		b.GroupInitialRebalanceDelayMs != 3000 || b.GroupConsumerSessionTimeoutMs != 45000 ||
		b.GroupConsumerHeartbeatIntervalMs != 5000 || b.TransactionalIDExpirationMs != 604800000 ||
		b.ProducerIDExpirationMs != 86400000 || !b.DeleteTopicEnable || len(b.Raw) != 0 {
		t.Fatalf("defaults: %+v", b)
	}
	if len(b.LogDirs) != 1 || b.LogDirs[0] != "./data" {
		t.Fatalf("log dirs %v", b.LogDirs)
	}
	if got := strings.Join(b.GroupCoordinatorRebalanceProtocols, ","); got != "classic,consumer,streams" {
		t.Fatalf("protocols %s", got)
	}
}

func TestNewBrokerRejects(t *testing.T) {
	cases := []struct {
		props map[string]string
		name  string
	}{
		{map[string]string{"no.such.setting": "1"}, "no.such.setting"},
		{map[string]string{"retention.ms": "1"}, "retention.ms"}, // topic name, not broker
		{map[string]string{"log.message.format.version": "3.0"}, "log.message.format.version"},
		{map[string]string{"num.partitions": "0"}, "num.partitions"},
		{map[string]string{"num.partitions": "two"}, "num.partitions"},
		{map[string]string{"log.cleaner.enable": "maybe"}, "log.cleaner.enable"},
		{map[string]string{"log.cleanup.policy": "compact,"}, "log.cleanup.policy"},
		{map[string]string{"log.segment.bytes": "1024"}, "log.segment.bytes"},
		{map[string]string{"node.id": "1", "broker.id": "2"}, "broker.id"},
		{map[string]string{"group.coordinator.rebalance.protocols": "consumer"}, "group.coordinator.rebalance.protocols"},
		{map[string]string{"group.min.session.timeout.ms": "10", "group.max.session.timeout.ms": "5"}, "group.min.session.timeout.ms"},
		{map[string]string{"group.consumer.heartbeat.interval.ms": "50000"}, "group.consumer.heartbeat.interval.ms"},
		{map[string]string{"replica.fetch.wait.max.ms": "5000", "replica.socket.timeout.ms": "1000"}, "replica.fetch.wait.max.ms"},
		{map[string]string{"replica.fetch.wait.max.ms": "5000", "replica.lag.time.max.ms": "2000"}, "replica.fetch.wait.max.ms"},
		{map[string]string{"log.dirs": "a,,b"}, "log.dirs"},
		{map[string]string{"remote.log.storage.system.enable": "true"}, "remote.log.storage.system.enable"},
		{map[string]string{"socket.send.buffer.bytes": "lots"}, "socket.send.buffer.bytes"}, // no specific validator: type check
	}
	for _, c := range cases {
		_, err := NewBroker(c.props)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Name != c.name || ce.KafkaCode() != 40 {
			t.Errorf("%v: want *ConfigError naming %s, got %v", c.props, c.name, err)
		}
	}
}

func TestNewBrokerValues(t *testing.T) {
	b, err := NewBroker(map[string]string{
		"broker.id": "7", "log.dir": "/var/a", "num.partitions": " 3 ", "auto.create.topics.enable": "FALSE",
		"log.cleaner.threads": "2", "group.consumer.assignors": "range", "ssl.keystore.password": "secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 7 || b.NumPartitions != 3 || b.AutoCreateTopics || b.LogCleanerThreads != 2 ||
		b.LogDirs[0] != "/var/a" || b.GroupConsumerAssignors[0] != "range" || b.Raw["num.partitions"] != "3" {
		t.Fatalf("%+v", b)
	}
	b, err = NewBroker(map[string]string{"log.dir": "/ignored", "log.dirs": "/d1, /d2", "node.id": "4", "broker.id": "4"})
	if err != nil || len(b.LogDirs) != 2 || b.LogDirs[1] != "/d2" || b.NodeID != 4 {
		t.Fatalf("%v %+v", err, b)
	}
}

func TestAuthorizerConfigs(t *testing.T) {
	b, err := NewBroker(map[string]string{
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    " User:admin ; User:CN=broker,O=Example;",
		"allow.everyone.if.no.acl.found": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.AuthorizerClassName != "org.apache.kafka.metadata.authorizer.StandardAuthorizer" || !b.AllowEveryoneIfNoACL ||
		len(b.SuperUsers) != 2 || b.SuperUsers[0] != "User:admin" || b.SuperUsers[1] != "User:CN=broker,O=Example" {
		t.Fatalf("%+v", b)
	}
	d := DefaultBroker()
	if d.AuthorizerClassName != "" || d.AllowEveryoneIfNoACL || len(d.SuperUsers) != 0 {
		t.Fatalf("defaults: %q %v %v", d.AuthorizerClassName, d.AllowEveryoneIfNoACL, d.SuperUsers)
	}
	for props, want := range map[[2]string]string{
		{"authorizer.class.name", "com.example.MyAuthorizer"}: "other authorizer classes are not supported",
		{"super.users", "admin"}:                              `principal "admin" has no type`,
	} {
		_, err := NewBroker(map[string]string{props[0]: props[1]})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: got %v, want %q", props[0], props[1], err, want)
		}
	}
}

package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// alterGroupConfigs sets (or, for a nil value, deletes) several configs of group in
// one IncrementalAlterConfigs and returns the resource's error code and message.
func alterGroupConfigs(t *testing.T, tb *testBroker, group string, kv ...any) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = kv[i].(string), kmsg.IncrementalAlterConfigOpSet
		if v, ok := kv[i+1].(string); ok {
			c.Value = &v
		} else {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	res := tb.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	msg := ""
	if res.ErrorMessage != nil {
		msg = *res.ErrorMessage
	}
	return res.ErrorCode, msg
}

// Kafka 4.4's consumer.*, share.*, streams.assignor.offload.enable and
// errors.deadletterqueue.* group configs: described with the broker's values,
// validated against their types and the broker's group.*.min/max bounds with
// Kafka's messages, and settable.
func TestGroupConfigsOfKafka44(t *testing.T) {
	tb := shareTestBroker(t, map[string]string{"group.consumer.max.session.timeout.ms": "50000"})
	for name, want := range map[string]string{
		"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "5000",
		"consumer.assignment.interval.ms": "1000", "consumer.assignor.offload.enable": "true",
		"share.delivery.count.limit": "5", "share.partition.max.record.locks": "2000",
		"share.renew.acknowledge.enable": "true", "share.assignment.interval.ms": "1000",
		"share.assignor.offload.enable": "true", "streams.assignor.offload.enable": "true",
		"errors.deadletterqueue.topic.name": "", "errors.deadletterqueue.copy.record.enable": "false",
	} {
		if v, src := describeGroupConfig(t, tb, "g", name); v != want || src != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: %q (%v), want the default %q", name, v, src, want)
		}
	}
	for _, c := range []struct{ name, value, msg string }{
		{"consumer.session.timeout.ms", "40000", "consumer.session.timeout.ms must be in the range 45000 to 50000 inclusive."},
		{"consumer.session.timeout.ms", "55000", "consumer.session.timeout.ms must be in the range 45000 to 50000 inclusive."},
		{"consumer.heartbeat.interval.ms", "16000", "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"consumer.heartbeat.interval.ms", "x", "Invalid value x for configuration consumer.heartbeat.interval.ms: Not a number of type INT"},
		{"consumer.assignment.interval.ms", "20000", "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive."},
		{"consumer.assignor.offload.enable", "yes", "Invalid value yes for configuration consumer.assignor.offload.enable: Expected value to be either true or false"},
		{"share.delivery.count.limit", "1", "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"share.partition.max.record.locks", "99", "Value must be at least 100"},
		{"share.partition.max.record.locks", "4001", "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"share.record.lock.duration.ms", "10000", "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"share.session.timeout.ms", "70000", "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"share.heartbeat.interval.ms", "1000", "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"share.renew.acknowledge.enable", "1", "Expected value to be either true or false"},
		{"share.assignment.interval.ms", "-1", "Value must be at least 0"},
		{"streams.assignor.offload.enable", "maybe", "Expected value to be either true or false"},
		{"errors.deadletterqueue.topic.name", "__dlq", "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
		{"errors.deadletterqueue.copy.record.enable", "", "Expected value to be either true or false"},
	} {
		code, msg := alterGroupConfigs(t, tb, "g", c.name, c.value)
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, c.msg) {
			t.Errorf("%s=%q: %v %q, want INVALID_CONFIG %q", c.name, c.value, kerr.ErrorForCode(code), msg, c.msg)
		}
	}
	// the session timeout must exceed the heartbeat interval, the group's or the broker's
	group := group44Configs()
	for _, c := range [][]any{
		{"consumer.session.timeout.ms", "45000", "consumer.heartbeat.interval.ms", "45000"},
		{"share.session.timeout.ms", "45000", "share.heartbeat.interval.ms", "45000"},
	} {
		code, msg := alterGroupConfigs(t, tb, "g", c...)
		// the heartbeat bound (15000) is checked first, as in Kafka
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, "heartbeat.interval.ms must be in the range") {
			t.Errorf("%v: %v %q", c, kerr.ErrorForCode(code), msg)
		}
	}
	tb2 := shareTestBroker(t, map[string]string{"group.consumer.max.heartbeat.interval.ms": "60000", "group.share.max.heartbeat.interval.ms": "60000",
		"group.consumer.heartbeat.interval.ms": "6000"})
	// the synonym of a group config is its broker config, as in Kafka
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "g", []string{"consumer.heartbeat.interval.ms", "share.isolation.level"}
	dreq.Resources, dreq.IncludeSynonyms = append(dreq.Resources, dr), true
	for _, c := range tb2.request(dreq).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		want := map[string]string{"consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms 6000 STATIC_BROKER_CONFIG",
			"share.isolation.level": "share.isolation.level read_uncommitted DEFAULT_CONFIG"}[c.Name]
		if len(c.ConfigSynonyms) != 1 || c.Source != c.ConfigSynonyms[0].Source ||
			c.ConfigSynonyms[0].Name+" "+*c.ConfigSynonyms[0].Value+" "+c.ConfigSynonyms[0].Source.String() != want {
			t.Errorf("%s: source %v, synonyms %+v, want %s", c.Name, c.Source, c.ConfigSynonyms, want)
		}
	}
	for _, p := range []string{"consumer", "share"} {
		code, msg := alterGroupConfigs(t, tb2, "g", p+".heartbeat.interval.ms", "45000")
		if want := p + ".session.timeout.ms must be greater than " + p + ".heartbeat.interval.ms"; code != kerr.InvalidConfig.Code || msg != want {
			t.Errorf("%s heartbeat = the broker's session timeout: %v %q, want %q", p, kerr.ErrorForCode(code), msg, want)
		}
	}
	// valid values are stored and described as the group's
	if code, msg := alterGroupConfigs(t, tb, "g", group...); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	for i := 0; i < len(group); i += 2 {
		if v, src := describeGroupConfig(t, tb, "g", group[i].(string)); v != group[i+1] || src != kmsg.ConfigSourceGroupConfig {
			t.Errorf("%s: %q (%v), want the group's %q", group[i], v, src, group[i+1])
		}
	}
	tb.restart() // persisted
	if v, _ := describeGroupConfig(t, tb, "g", "errors.deadletterqueue.topic.name"); v != "dlq" {
		t.Errorf("after a restart: errors.deadletterqueue.topic.name=%q", v)
	}
	if code, _ := alterGroupConfigs(t, tb, "g", "consumer.assignor.offload.enable", nil); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if v, src := describeGroupConfig(t, tb, "g", "consumer.assignor.offload.enable"); v != "true" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after delete: %q (%v)", v, src)
	}
}

// joinConsumerGroup sends a joining ConsumerGroupHeartbeat for member of group (topic t),
// retrying while the coordinator is not ready (up to 60 s).
func joinConsumerGroup(t *testing.T, tb *testBroker, group, member, topic string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	waitFor(t, "a ConsumerGroupHeartbeat answered by a ready coordinator", func() bool {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, 0, 30000
		req.SubscribedTopicNames, req.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp = tb.request(req).(*kmsg.ConsumerGroupHeartbeatResponse)
		switch resp.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
			return false
		}
		return true
	})
	return resp
}

func group44Configs() []any {
	return []any{
		"consumer.session.timeout.ms", "48000", "consumer.heartbeat.interval.ms", "6000",
		"consumer.assignment.interval.ms", "0", "consumer.assignor.offload.enable", "false",
		"share.delivery.count.limit", "3", "share.partition.max.record.locks", "100",
		"share.renew.acknowledge.enable", "FALSE", "share.assignment.interval.ms", "500",
		"share.assignor.offload.enable", "false", "streams.assignor.offload.enable", "false",
		"errors.deadletterqueue.topic.name", "dlq", "errors.deadletterqueue.copy.record.enable", "true",
	}
}

// consumer.heartbeat.interval.ms is the interval ConsumerGroupHeartbeat tells the
// group's members (the session timeout is tested in internal/group).
func TestConsumerGroupConfigHeartbeatInterval(t *testing.T) {
	tb := shareTestBroker(t, nil)
	shareProduceN(t, tb, "t", 1, 0)
	if code, msg := alterGroupConfigs(t, tb, "cg", "consumer.heartbeat.interval.ms", "7000"); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	for group, want := range map[string]int32{"cg": 7000, "other": 5000} {
		resp := joinConsumerGroup(t, tb, group, "m-"+group, "t")
		if resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != want {
			t.Errorf("%s: %v, heartbeat interval %d ms, want %d", group, kerr.ErrorForCode(resp.ErrorCode), resp.HeartbeatIntervalMillis, want)
		}
	}
}

// share.delivery.count.limit, share.partition.max.record.locks and
// share.renew.acknowledge.enable apply to the group's share partitions.
func TestShareGroupConfigsHonoured(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 0)
	cl := tb.client(kgo.DefaultProduceTopic("q"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := make([]*kgo.Record, 101)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte("v"), Partition: 0}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code, msg := alterGroupConfigs(t, tb, "sg", "share.delivery.count.limit", "2", "share.partition.max.record.locks", "100",
		"share.renew.acknowledge.enable", "false"); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	// at most 100 records locked at once (the broker's limit is 2000)
	a := &shareMember{t: t, tb: tb, group: "sg", name: "A", id: id}
	if got := a.acquire(500); len(got) != 100 || got[0] != 1 {
		t.Fatalf("acquired %d records, want 100 (share.partition.max.record.locks)", len(got))
	}
	// RENEW is refused for the group (Kafka: INVALID_RECORD_STATE)
	req := kmsg.NewPtrShareAcknowledgeRequest()
	g, m := "sg", "A"
	req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = &g, &m, a.epoch, true
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 0, []int8{share.AckRenew}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.request(req).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("renew with share.renew.acknowledge.enable=false: %+v", resp)
	}
	a.epoch++
	// offset 0 released twice reaches the delivery count limit of 2 and is archived
	a.ack(0, share.AckRelease)
	if got := a.acquire(1); got[0] != 2 {
		t.Fatalf("acquired %v, want offset 0 a second time", got)
	}
	a.ack(0, share.AckRelease)
	sp := tb.broker().shares.Partition(share.Key{Group: "sg", TopicID: id}, nil)
	if start, _ := sp.Offsets(); start != 1 {
		t.Fatalf("start offset %d: offset 0 not archived at its second release", start)
	}
}

// A group config set within the broker's bounds and then outside them (the bounds were
// tightened) runs clamped into the new bounds, as Kafka's GroupConfig.evaluate; it is
// still described as set.
func TestGroupConfigsClampedToBrokerBounds(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 1)
	if code, msg := alterGroupConfigs(t, tb, "g", "consumer.heartbeat.interval.ms", "12000", "share.record.lock.duration.ms", "50000"); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	tb.opts.Props["group.consumer.max.heartbeat.interval.ms"] = "10000"
	tb.opts.Props["group.share.max.record.lock.duration.ms"] = "40000"
	tb.restart()
	if resp := joinConsumerGroup(t, tb, "g", "m", "q"); resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != 10000 {
		t.Errorf("heartbeat: %v, interval %d ms, want 10000 (the new upper bound)", kerr.ErrorForCode(resp.ErrorCode), resp.HeartbeatIntervalMillis)
	}
	if r := shareFetch(t, tb, "g", "A", 0, id, 10, 100); r.AcquisitionLockTimeoutMillis != 40000 {
		t.Errorf("share fetch lock timeout %d ms, want 40000 (the new upper bound)", r.AcquisitionLockTimeoutMillis)
	}
	if v, src := describeGroupConfig(t, tb, "g", "consumer.heartbeat.interval.ms"); v != "12000" || src != kmsg.ConfigSourceGroupConfig {
		t.Errorf("described as %s (%v), want the stored 12000", v, src)
	}
}

// share.auto.offset.reset=by_duration:<ISO-8601 duration> starts a new share partition at
// the first record written at most that long ago.
func TestShareAutoOffsetResetByDuration(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 0)
	cl := tb.client(kgo.DefaultProduceTopic("q"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	old := time.Now().Add(-2 * time.Hour)
	for i, ts := range []time.Time{old, old, time.Now(), time.Now()} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte{byte('a' + i)}, Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if code, msg := alterGroupConfigs(t, tb, "g", "share.auto.offset.reset", "by_duration:PT1H"); code != 0 {
		t.Fatalf("set: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alterGroupConfigs(t, tb, "g", "share.auto.offset.reset", "by_duration:-PT1H"); code != kerr.InvalidConfig.Code ||
		!strings.Contains(msg, "by_duration:<PnDTnHnMn.nS>") {
		t.Fatalf("a negative duration: %v %s", kerr.ErrorForCode(code), msg)
	}
	got := (&shareMember{t: t, tb: tb, group: "g", name: "A", id: id}).acquire(10)
	if len(got) != 2 || got[2] != 1 || got[3] != 1 {
		t.Fatalf("acquired %v, want offsets 2 and 3 (written within the hour)", got)
	}
}

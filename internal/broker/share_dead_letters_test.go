package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/share"
)

// readDeadLetters polls topic from its start until it holds n records (deadline 30 s).
func readDeadLetters(t *testing.T, tb *testBroker, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := tb.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := dpCtx(t, 30*time.Second)
	var out []*kgo.Record
	for len(out) < n {
		if ctx.Err() != nil {
			t.Fatalf("%s: %d dead letters, want %d", topic, len(out), n)
		}
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// KIP-1191: a share group's rejected records and those past the delivery count limit go
// to its dead-letter topic, with Kafka's headers (and the record itself with
// errors.deadletterqueue.copy.record.enable); a missing topic is created when
// errors.deadletterqueue.auto.create.topics.enable is on; a topic without
// errors.deadletterqueue.group.enable gets nothing.
func TestShareDeadLetters(t *testing.T) {
	tb := shareTestBroker(t, map[string]string{"errors.deadletterqueue.auto.create.topics.enable": "true"})
	id := shareProduceN(t, tb, "q", 1, 3)
	ctx := context.Background()
	if _, err := tb.admin().CreateTopic(ctx, 1, 1, map[string]*string{"errors.deadletterqueue.group.enable": kgoStr("true")}, "dlq.q"); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.admin().CreateTopic(ctx, 1, 1, nil, "dlq.off"); err != nil {
		t.Fatal(err)
	}
	for g, kv := range map[string][]any{
		"sg":  {"errors.deadletterqueue.topic.name", "dlq.q", "errors.deadletterqueue.copy.record.enable", "true", "share.delivery.count.limit", "2"},
		"off": {"errors.deadletterqueue.topic.name", "dlq.off"},
		"new": {"errors.deadletterqueue.topic.name", "dlq.new"},
	} {
		if code, msg := alterGroupConfigs(t, tb, g, kv...); code != 0 {
			t.Fatalf("%s: %v %s", g, kerr.ErrorForCode(code), msg)
		}
	}
	// sg: offset 0 rejected; offset 1 released at its second delivery (the limit)
	sg := &shareMember{t: t, tb: tb, group: "sg", name: "A", id: id}
	if got := sg.acquire(10); len(got) != 3 {
		t.Fatalf("acquired %v", got)
	}
	sg.ack(0, share.AckReject)
	sg.ack(1, share.AckRelease)
	if got := sg.acquire(1); got[1] != 2 {
		t.Fatalf("acquired %v, want offset 1 a second time", got)
	}
	sg.ack(1, share.AckRelease)
	// off (topic not enabled) before new (created): written in order, so once new's
	// dead letter is there, off's was dropped
	off := &shareMember{t: t, tb: tb, group: "off", name: "A", id: id}
	if got := off.acquire(1); len(got) != 1 {
		t.Fatalf("off acquired %v", got)
	}
	off.ack(0, share.AckReject)
	created := &shareMember{t: t, tb: tb, group: "new", name: "A", id: id}
	if got := created.acquire(1); len(got) != 1 {
		t.Fatalf("new acquired %v", got)
	}
	created.ack(0, share.AckReject)

	recs := readDeadLetters(t, tb, "dlq.q", 2)
	for i, want := range []map[string]string{
		{"__dlq.errors.topic": "q", "__dlq.errors.partition": "0", "__dlq.errors.offset": "0", "__dlq.errors.group": "sg",
			"__dlq.errors.delivery.count": "1", "__dlq.errors.message": "Offset rejected by client."},
		{"__dlq.errors.topic": "q", "__dlq.errors.partition": "0", "__dlq.errors.offset": "1", "__dlq.errors.group": "sg",
			"__dlq.errors.delivery.count": "2", "__dlq.errors.message": "Offset delivery count exceeded the threshold."},
	} {
		h := headers(recs[i])
		for k, v := range want {
			if h[k] != v {
				t.Errorf("dead letter %d: %s=%q, want %q (%v)", i, k, h[k], v, h)
			}
		}
		if string(recs[i].Value) != string(rune('a'+i)) {
			t.Errorf("dead letter %d: value %q, want the record's (copy.record.enable)", i, recs[i].Value)
		}
	}
	fresh := readDeadLetters(t, tb, "dlq.new", 1)
	if h := headers(fresh[0]); fresh[0].Value != nil || h["__dlq.errors.group"] != "new" {
		t.Errorf("dlq.new: value %q, headers %v", fresh[0].Value, h)
	}
	if tp, ok := tb.broker().topics.Get("dlq.new"); !ok || tp.Configs["errors.deadletterqueue.group.enable"] != "true" {
		t.Errorf("dlq.new created without errors.deadletterqueue.group.enable=true: %+v", tp)
	}
	part := tb.broker().replicas.Get("dlq.off", 0)
	if part == nil {
		t.Fatal("dlq.off has no partition here")
	}
	if end := part.HighWatermark(); end != 0 {
		t.Fatalf("dlq.off (errors.deadletterqueue.group.enable=false) got %d dead letters", end)
	}
}

func kgoStr(s string) *string { return &s }

// shareMember fetches and acknowledges as one share-group member, keeping its share
// session epoch.
type shareMember struct {
	t           *testing.T
	tb          *testBroker
	group, name string
	id          [16]byte
	epoch       int32
}

// acquire fetches until records are acquired (the share partition and its coordinator
// may not be ready at once; deadline 60 s).
func (m *shareMember) acquire(maxRecords int32) map[int64]int16 {
	m.t.Helper()
	var got map[int64]int16
	waitFor(m.t, m.group+" to acquire records", func() bool {
		got = shareAcquired(m.t, shareFetch(m.t, m.tb, m.group, m.name, m.epoch, m.id, maxRecords, 500))
		m.epoch++
		return len(got) > 0
	})
	return got
}

func (m *shareMember) ack(off int64, typ int8) {
	m.t.Helper()
	if _, part := shareAcknowledge(m.t, m.tb, m.group, m.name, m.epoch, m.id, shareAck{off, off, []int8{typ}}); part != 0 {
		m.t.Fatalf("%s: ack %d of %d: %v", m.group, typ, off, kerr.ErrorForCode(part))
	}
	m.epoch++
}

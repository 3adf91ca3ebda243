package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// shareTestBroker starts a broker with one share-state partition and share
// groups reading from the earliest offset, plus props.
func shareTestBroker(t *testing.T, props map[string]string) *testBroker {
	t.Helper()
	p := map[string]string{
		"share.coordinator.state.topic.num.partitions": "1",
		"share.auto.offset.reset":                      "earliest",
	}
	for k, v := range props {
		p[k] = v
	}
	return startTestBroker(t, testOptions{Props: p})
}

// produceN creates topic (partitions) and writes n records to partition 0,
// one batch per record, and returns the topic id.
func shareProduceN(t *testing.T, tb *testBroker, topic string, partitions int32, n int) [16]byte {
	t.Helper()
	ctx := context.Background()
	if _, err := tb.admin().CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}, Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	top, ok := tb.broker().topics.Get(topic)
	if !ok {
		t.Fatalf("topic %s missing", topic)
	}
	return [16]byte(top.ID)
}

type shareAck struct {
	first, last int64
	types       []int8
}

// shareFetch sends a ShareFetch for partition 0 of topic id.
func shareFetch(t *testing.T, tb *testBroker, group, member string, epoch int32, id [16]byte, maxRecords, maxWaitMs int32, acks ...shareAck) *kmsg.ShareFetchResponse {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &group, &member
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxRecords = epoch, maxWaitMs, maxRecords
	req.MaxBytes = 1 << 20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
	for _, a := range acks {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return tb.request(req).(*kmsg.ShareFetchResponse)
}

// shareAcknowledge sends a ShareAcknowledge for partition 0 of topic id and
// returns the top-level and partition error codes.
func shareAcknowledge(t *testing.T, tb *testBroker, group, member string, epoch int32, id [16]byte, acks ...shareAck) (int16, int16) {
	t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acks {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.request(req).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
		return resp.ErrorCode, 0
	}
	return 0, resp.Topics[0].Partitions[0].ErrorCode
}

// acquired flattens a response's acquired records of partition 0:
// offset -> delivery count; it also checks that every acquired offset is in
// the returned record batches.
func shareAcquired(t *testing.T, resp *kmsg.ShareFetchResponse) map[int64]int16 {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareFetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	out := map[int64]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("ShareFetch partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			have := map[int64]bool{}
			for buf := rp.Records; len(buf) >= 61; {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(buf); err != nil {
					t.Fatalf("records: %v", err)
				}
				for o := rb.FirstOffset; o <= rb.FirstOffset+int64(rb.LastOffsetDelta); o++ {
					have[o] = true
				}
				buf = buf[12+int(rb.Length):]
			}
			for _, a := range rp.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					if !have[o] {
						t.Fatalf("acquired offset %d not in the returned records", o)
					}
					out[o] = a.DeliveryCount
				}
			}
		}
	}
	return out
}

func shareHeartbeat(t *testing.T, tb *testBroker, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	req.SubscribedTopicNames = topics
	return tb.request(req).(*kmsg.ShareGroupHeartbeatResponse)
}

func TestShareGroupMembership(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 2, 0)

	r1 := shareHeartbeat(t, tb, "sg", "m1", 0, "q")
	if r1.ErrorCode != 0 || r1.Assignment == nil || len(r1.Assignment.TopicPartitions) != 1 || len(r1.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("join m1: %+v", r1)
	}
	r2 := shareHeartbeat(t, tb, "sg", "m2", 0, "q")
	if r2.ErrorCode != 0 || r2.MemberEpoch <= r1.MemberEpoch {
		t.Fatalf("join m2: %+v", r2)
	}
	// m1 learns its new assignment: two members share two partitions
	r1b := shareHeartbeat(t, tb, "sg", "m1", r1.MemberEpoch)
	if r1b.ErrorCode != 0 || r1b.Assignment == nil || r1b.Assignment.TopicPartitions[0].TopicID != id || len(r1b.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("m1 heartbeat: %+v", r1b)
	}
	// a third member on a two-partition topic still gets a partition
	r3 := shareHeartbeat(t, tb, "sg", "m3", 0, "q")
	if r3.Assignment == nil || len(r3.Assignment.TopicPartitions) != 1 || len(r3.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("join m3: %+v", r3)
	}
	if r := shareHeartbeat(t, tb, "sg", "m1", r1.MemberEpoch); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("stale epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := shareHeartbeat(t, tb, "sg", "nobody", 3); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := shareHeartbeat(t, tb, "sg", "m4", 0); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("join without topics: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := shareHeartbeat(t, tb, "sg", "", 0, "q"); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty member id: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{"sg", "missing"}
	d := tb.request(dreq).(*kmsg.ShareGroupDescribeResponse)
	if len(d.Groups) != 2 || d.Groups[0].ErrorCode != 0 || len(d.Groups[0].Members) != 3 || d.Groups[0].Assignor != "simple" || d.Groups[0].GroupState != "Stable" {
		t.Fatalf("describe: %+v", d.Groups)
	}
	for _, m := range d.Groups[0].Members {
		if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "q" {
			t.Fatalf("member %s assignment: %+v", m.MemberID, m.Assignment)
		}
	}
	if d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe missing: %v", kerr.ErrorForCode(d.Groups[1].ErrorCode))
	}

	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	l := tb.request(lreq).(*kmsg.ListGroupsResponse)
	if len(l.Groups) != 1 || l.Groups[0].Group != "sg" || l.Groups[0].GroupType != "share" {
		t.Fatalf("list: %+v", l.Groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"sg"}
	if r := tb.request(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		if r := shareHeartbeat(t, tb, "sg", m, -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
			t.Fatalf("leave %s: %+v", m, r)
		}
	}
	if r := tb.request(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete empty: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
}

func TestShareFetchAcknowledge(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 10)

	a := shareFetch(t, tb, "sg", "A", 0, id, 500, 100)
	got := shareAcquired(t, a)
	if len(got) != 10 || got[0] != 1 || got[9] != 1 {
		t.Fatalf("A's first fetch acquired %v", got)
	}
	if a.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("lock timeout %d", a.AcquisitionLockTimeoutMillis)
	}
	// B finds everything locked
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "B", 0, id, 500, 10)); len(got) != 0 {
		t.Fatalf("B acquired locked records %v", got)
	}
	// B cannot acknowledge A's records
	if top, part := shareAcknowledge(t, tb, "sg", "B", 1, id, shareAck{0, 0, []int8{share.AckAccept}}); top != 0 || part != kerr.InvalidRecordState.Code {
		t.Fatalf("B acks A's record: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	// A: accept 0-2, release 3-4, reject 5, accept 6-9 (per-offset types)
	if top, part := shareAcknowledge(t, tb, "sg", "A", 1, id,
		shareAck{0, 2, []int8{share.AckAccept}},
		shareAck{3, 5, []int8{share.AckRelease, share.AckRelease, share.AckReject}},
		shareAck{6, 9, []int8{share.AckAccept}}); top != 0 || part != 0 {
		t.Fatalf("A acks: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	// B's next fetch (epoch 2 after its ShareAcknowledge) gets the released records, delivered a second time
	got = shareAcquired(t, shareFetch(t, tb, "sg", "B", 2, id, 500, 100))
	if len(got) != 2 || got[3] != 2 || got[4] != 2 {
		t.Fatalf("B acquired %v, want 3 and 4 with delivery count 2", got)
	}
	// acknowledging twice is INVALID_RECORD_STATE
	if _, part := shareAcknowledge(t, tb, "sg", "A", 2, id, shareAck{0, 0, []int8{share.AckAccept}}); part != kerr.InvalidRecordState.Code {
		t.Fatalf("second ack: %v", kerr.ErrorForCode(part))
	}
	// B accepts with its next fetch, which also picks up new records
	cl := tb.client(kgo.DefaultProduceTopic("q"))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("k")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp := shareFetch(t, tb, "sg", "B", 3, id, 500, 1000, shareAck{3, 4, []int8{share.AckAccept}})
	if rp := resp.Topics[0].Partitions[0]; rp.AcknowledgeErrorCode != 0 {
		t.Fatalf("ack in fetch: %v", kerr.ErrorForCode(rp.AcknowledgeErrorCode))
	}
	if got := shareAcquired(t, resp); len(got) != 1 || got[10] != 1 {
		t.Fatalf("B acquired %v, want the new offset 10", got)
	}
	sp := tb.broker().shares.Partition(share.Key{Group: "sg", TopicID: id}, nil)
	if start, end := sp.Offsets(); start != 10 || end != 11 {
		t.Fatalf("share-partition offsets %d-%d, want 10-11", start, end)
	}
	// closing B's session releases offset 10
	shareAcknowledge(t, tb, "sg", "B", -1, id)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 3, id, 500, 1000)); len(got) != 1 || got[10] != 2 {
		t.Fatalf("A acquired %v after B closed its session", got)
	}
}

func TestShareSessionErrors(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 2)
	if top, _ := shareAcknowledge(t, tb, "sg", "A", 0, id, shareAck{0, 0, []int8{1}}); top != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack with epoch 0: %v", kerr.ErrorForCode(top))
	}
	if top, _ := shareAcknowledge(t, tb, "sg", "A", 1, id, shareAck{0, 0, []int8{1}}); top != kerr.ShareSessionNotFound.Code {
		t.Fatalf("ack without session: %v", kerr.ErrorForCode(top))
	}
	if r := shareFetch(t, tb, "sg", "A", 0, id, 1, 100, shareAck{0, 0, []int8{1}}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acks in the initial fetch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 1, 100)); len(got) != 1 {
		t.Fatalf("max records 1 acquired %v", got)
	}
	if r := shareFetch(t, tb, "sg", "A", 5, id, 1, 100); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if _, part := shareAcknowledge(t, tb, "sg", "A", 1, id, shareAck{0, 0, []int8{9}}); part != kerr.InvalidRequest.Code {
		t.Fatalf("bad ack type: %v", kerr.ErrorForCode(part))
	}
	if _, part := shareAcknowledge(t, tb, "sg", "A", 2, id, shareAck{0, 0, []int8{1, 1}}); part != kerr.InvalidRequest.Code {
		t.Fatalf("types longer than the range: %v", kerr.ErrorForCode(part))
	}
	var unknown [16]byte
	unknown[0] = 1
	if r := shareFetch(t, tb, "sg", "A", 3, unknown, 1, 0); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %+v", r.Topics)
	}
}

func TestShareLockExpiryAndDeliveryLimit(t *testing.T) {
	tb := shareTestBroker(t, map[string]string{
		"group.share.record.lock.duration.ms": "200",
		"group.share.delivery.count.limit":    "3",
	})
	id := shareProduceN(t, tb, "q", 1, 1)
	// A takes offset 0 and never acknowledges: after the lock expires B gets it
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 10, 100)); got[0] != 1 {
		t.Fatalf("A acquired %v", got)
	}
	epochB := int32(0)
	var got map[int64]int16
	deadline := time.Now().Add(30 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		got = shareAcquired(t, shareFetch(t, tb, "sg", "B", epochB, id, 10, 1000))
		epochB++
	}
	if got[0] != 2 {
		t.Fatalf("B acquired %v, want offset 0 delivered a second time", got)
	}
	// B releases it: third delivery to A, who releases it again: the limit (3) archives it
	if _, part := shareAcknowledge(t, tb, "sg", "B", epochB, id, shareAck{0, 0, []int8{share.AckRelease}}); part != 0 {
		t.Fatalf("release: %v", kerr.ErrorForCode(part))
	}
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 1, id, 10, 1000)); got[0] != 3 {
		t.Fatalf("A acquired %v, want offset 0 a third time", got)
	}
	if _, part := shareAcknowledge(t, tb, "sg", "A", 2, id, shareAck{0, 0, []int8{share.AckRelease}}); part != 0 {
		t.Fatalf("release: %v", kerr.ErrorForCode(part))
	}
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 3, id, 10, 300)); len(got) != 0 {
		t.Fatalf("archived record delivered again: %v", got)
	}
	sp := tb.broker().shares.Partition(share.Key{Group: "sg", TopicID: id}, nil)
	if start, _ := sp.Offsets(); start != 1 {
		t.Fatalf("start offset %d after archiving offset 0", start)
	}
}

func TestShareRenew(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 1)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 10, 100)); got[0] != 1 {
		t.Fatalf("A acquired %v", got)
	}
	sp := tb.broker().shares.Partition(share.Key{Group: "sg", TopicID: id}, nil)
	before := sp.NextDeadline()
	waitFor(t, "the clock to move", func() bool { return time.Now().After(before.Add(-30*time.Second + time.Millisecond)) })
	// RENEW needs v2 with IsRenewAck
	req := kmsg.NewPtrShareAcknowledgeRequest()
	g, m := "sg", "A"
	req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = &g, &m, 1, true
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 0, []int8{share.AckRenew}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, ab)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.request(req).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("renew: %+v", resp)
	}
	if after := sp.NextDeadline(); !after.After(before) {
		t.Fatalf("lock deadline %v not moved past %v by RENEW", after, before)
	}
	// RENEW without IsRenewAck is an invalid type
	if _, part := shareAcknowledge(t, tb, "sg", "A", 2, id, shareAck{0, 0, []int8{share.AckRenew}}); part != kerr.InvalidRequest.Code {
		t.Fatalf("renew without IsRenewAck: %v", kerr.ErrorForCode(part))
	}
	// still acquired by A: A accepts it
	if _, part := shareAcknowledge(t, tb, "sg", "A", 3, id, shareAck{0, 0, []int8{share.AckAccept}}); part != 0 {
		t.Fatalf("accept after renew: %v", kerr.ErrorForCode(part))
	}
}

func TestShareStateSurvivesRestart(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 6)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 500, 100)); len(got) != 6 {
		t.Fatalf("acquired %v", got)
	}
	// accept 0-1 and 4, reject 5, leave 2-3 unacknowledged (locked)
	if top, part := shareAcknowledge(t, tb, "sg", "A", 1, id,
		shareAck{0, 1, []int8{share.AckAccept}}, shareAck{4, 5, []int8{share.AckAccept, share.AckReject}}); top != 0 || part != 0 {
		t.Fatalf("acks: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	tb.restart()
	// 2 and 3 come back (their locks died with the broker); 0, 1, 4 and 5 never do
	got := shareAcquired(t, shareFetch(t, tb, "sg", "B", 0, id, 500, 500))
	if len(got) != 2 || got[2] != 2 || got[3] != 2 {
		t.Fatalf("after restart acquired %v, want 2 and 3 with delivery count 2", got)
	}
	sp := tb.broker().shares.Partition(share.Key{Group: "sg", TopicID: id}, nil)
	if start, end := sp.Offsets(); start != 2 || end != 6 {
		t.Fatalf("share-partition offsets %d-%d after restart, want 2-6", start, end)
	}
	// the group is known again (empty) and listed
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	if l := tb.request(lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 {
		t.Fatalf("share groups after restart: %+v", l.Groups)
	}
}

func TestApiVersionsShareFeature(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	resp := tb.request(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	found := false
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "share.version" && f.MaxVersionLevel == 1 {
			found = true
		}
	}
	if !found || resp.FinalizedFeaturesEpoch < 0 {
		t.Fatalf("finalized features %+v (epoch %d)", resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
	}
	keys := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = k.MaxVersion
	}
	for key, max := range map[int16]int16{76: 1, 77: 1, 78: 2, 79: 2} {
		if keys[key] != max {
			t.Fatalf("api key %d max version %d, want %d", key, keys[key], max)
		}
	}
}

func TestShareGroupOffsets(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 2, 5)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 500, 100)); len(got) != 5 {
		t.Fatalf("acquired %v", got)
	}
	if _, part := shareAcknowledge(t, tb, "sg", "A", 1, id, shareAck{0, 1, []int8{share.AckAccept}}, shareAck{3, 3, []int8{share.AckAccept}}); part != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(part))
	}
	describe := func(topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID, g.Topics = "sg", topics
		req.Groups = append(req.Groups, g)
		resp := tb.request(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		return resp.Groups[0]
	}
	// all partitions with state: partition 0, start 2, lag 5-2-1 (offset 3 accepted) = 2
	g := describe(nil)
	if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Topic != "q" || len(g.Topics[0].Partitions) != 1 {
		t.Fatalf("describe all: %+v", g)
	}
	if p := g.Topics[0].Partitions[0]; p.Partition != 0 || p.StartOffset != 2 || p.Lag != 2 {
		t.Fatalf("partition 0: %+v", p)
	}
	// requested partitions: 1 never fetched (-1), 7 unknown
	qt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	qt.Topic, qt.Partitions = "q", []int32{1, 7}
	g = describe([]kmsg.DescribeShareGroupOffsetsRequestGroupTopic{qt})
	if ps := g.Topics[0].Partitions; ps[0].StartOffset != -1 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("describe requested: %+v", ps)
	}

	// alter needs an empty group: A is a member
	shareHeartbeat(t, tb, "sg", "A", 0, "q")
	alter := func(offset int64) *kmsg.AlterShareGroupOffsetsResponse {
		return tb.request(alterShareOffsetsReq("sg", "q", 0, offset)).(*kmsg.AlterShareGroupOffsetsResponse)
	}
	if r := alter(0); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	shareHeartbeat(t, tb, "sg", "A", -1)
	if r := alter(0); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	// every record from 0 is delivered again (a new window: delivery count 1)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "B", 0, id, 500, 100)); len(got) != 5 || got[0] != 1 {
		t.Fatalf("after reset acquired %v", got)
	}
	shareFetch(t, tb, "sg", "B", -1, id, 0, 0) // close B's session: its records are released

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "sg"
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = "q"
	del.Topics = append(del.Topics, dt)
	if r := tb.request(del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete offsets: %+v", r)
	}
	if g := describe(nil); len(g.Topics) != 0 {
		t.Fatalf("state left after delete: %+v", g.Topics)
	}
	del.GroupID = "nope"
	if r := tb.request(del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete offsets of a missing group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// alterGroupConfig sets (value non-nil) or deletes a group config and
// returns the resource's error code.
func alterGroupConfig(t *testing.T, tb *testBroker, group, name string, value *string) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, value, kmsg.IncrementalAlterConfigOpSet
	if value == nil {
		c.Op = kmsg.IncrementalAlterConfigOpDelete
	}
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return tb.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
}

func describeGroupConfig(t *testing.T, tb *testBroker, group, name string) (string, kmsg.ConfigSource) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, r)
	resp := tb.request(req).(*kmsg.DescribeConfigsResponse)
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe group configs: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == name && c.Value != nil {
			return *c.Value, c.Source
		}
	}
	t.Fatalf("no %s in %+v", name, resp.Resources[0].Configs)
	return "", 0
}

func TestShareGroupConfigs(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, testOptions{DataDir: dir, Props: map[string]string{"share.coordinator.state.topic.num.partitions": "1"}})
	id := shareProduceN(t, tb, "q", 1, 3)
	if v, src := describeGroupConfig(t, tb, "g1", "share.auto.offset.reset"); v != "latest" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("default: %s (%v)", v, src)
	}
	if code := alterGroupConfig(t, tb, "g1", "share.auto.offset.reset", kmsg.StringPtr("sometimes")); code != kerr.InvalidConfig.Code {
		t.Fatalf("bad value: %v", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfig(t, tb, "g1", "no.such.config", kmsg.StringPtr("1")); code != kerr.InvalidConfig.Code {
		t.Fatalf("unknown name: %v", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfig(t, tb, "g1", "share.auto.offset.reset", kmsg.StringPtr("earliest")); code != 0 {
		t.Fatalf("set: %v", kerr.ErrorForCode(code))
	}
	if code := alterGroupConfig(t, tb, "g1", "share.record.lock.duration.ms", kmsg.StringPtr("20000")); code != 0 {
		t.Fatalf("set lock duration: %v", kerr.ErrorForCode(code))
	}
	tb.restart() // group configs are persisted
	if v, src := describeGroupConfig(t, tb, "g1", "share.auto.offset.reset"); v != "earliest" || src != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after restart: %s (%v)", v, src)
	}
	// g1 starts at the earliest offset, g2 (no config) at the latest
	r := shareFetch(t, tb, "g1", "A", 0, id, 500, 100)
	if got := shareAcquired(t, r); len(got) != 3 || r.AcquisitionLockTimeoutMillis != 20000 {
		t.Fatalf("g1 acquired %v (lock %d ms)", got, r.AcquisitionLockTimeoutMillis)
	}
	if got := shareAcquired(t, shareFetch(t, tb, "g2", "A", 0, id, 500, 10)); len(got) != 0 {
		t.Fatalf("g2 acquired %v", got)
	}
	if code := alterGroupConfig(t, tb, "g1", "share.auto.offset.reset", nil); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if v, src := describeGroupConfig(t, tb, "g1", "share.auto.offset.reset"); v != "latest" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after delete: %s (%v)", v, src)
	}
}

func TestShareReadCommitted(t *testing.T) {
	tb := shareTestBroker(t, nil)
	ctx := dpCtx(t, 30*time.Second)
	id := shareProduceN(t, tb, "q", 1, 0)
	if code := alterGroupConfig(t, tb, "rc", "share.isolation.level", kmsg.StringPtr("read_committed")); code != 0 {
		t.Fatalf("set isolation: %v", kerr.ErrorForCode(code))
	}
	txn := tb.client(kgo.TransactionalID("share-txn"), kgo.DefaultProduceTopic("q"))
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("t")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	// offsets 0-1 aborted, 2 abort marker, 3-4 committed, 5 commit marker
	got := shareAcquired(t, shareFetch(t, tb, "rc", "A", 0, id, 500, 1000))
	if len(got) != 2 || got[3] != 1 || got[4] != 1 {
		t.Fatalf("read_committed acquired %v, want 3 and 4", got)
	}
	// read_uncommitted (the default) gets the aborted records too
	got = shareAcquired(t, shareFetch(t, tb, "ru", "A", 0, id, 500, 1000))
	if len(got) != 4 || got[0] != 1 || got[4] != 1 {
		t.Fatalf("read_uncommitted acquired %v, want 0, 1, 3, 4", got)
	}
}

func TestShareStateOfDeletedTopicIsDropped(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 2)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 500, 100)); len(got) != 2 {
		t.Fatalf("acquired %v", got)
	}
	if r, err := tb.admin().DeleteTopic(context.Background(), "q"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	k := share.Key{Group: "sg", TopicID: id}
	waitFor(t, "the deleted topic's share state to go", func() bool { return tb.broker().shares.Lookup(k) == nil })
	tb.restart()
	if tb.broker().shares.Lookup(k) != nil {
		t.Fatal("the deleted topic's share state came back after a restart")
	}
}

func TestShareFetchRotatesPartitions(t *testing.T) {
	tb := shareTestBroker(t, nil)
	ctx := dpCtx(t, 30*time.Second)
	id := shareProduceN(t, tb, "q", 2, 0)
	cl := tb.client(kgo.DefaultProduceTopic("q"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range []int32{0, 0, 1, 1} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v"), Partition: p}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int32]int{}
	for epoch := int32(0); epoch < 2; epoch++ {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("A")
		req.ShareSessionEpoch, req.MaxRecords, req.MaxWaitMillis, req.MaxBytes = epoch, 1, 100, 1<<20
		if epoch == 0 {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = id
			rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}, {Partition: 1, PartitionMaxBytes: 1 << 20}}
			req.Topics = append(req.Topics, rt)
		}
		resp := tb.request(req).(*kmsg.ShareFetchResponse)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				got[rp.Partition] += len(rp.AcquiredRecords)
			}
		}
	}
	if got[0] != 1 || got[1] != 1 {
		t.Fatalf("two fetches of one record each acquired %v per partition, want one from each", got)
	}
}

// alterShareOffsetsReq is an AlterShareGroupOffsets request for one partition.
func alterShareOffsetsReq(group, topic string, partition int32, start int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	rp.Partition, rp.StartOffset = partition, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

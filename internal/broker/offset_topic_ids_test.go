package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit v10 and OffsetFetch v10 name topics by id: a commit by id is
// fetched back by id (and by name with v9), an unknown id is UNKNOWN_TOPIC_ID.
func TestOffsetsByTopicID(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "ids", 2, nil)
	tp, _ := tb.broker().topics.Get("ids")
	id := [16]byte(tp.ID)
	unknownID := [16]byte{9, 9, 9}

	c := kmsg.NewPtrOffsetCommitRequest()
	c.Version, c.Group, c.Generation = 10, "g-ids", -1
	for _, tid := range [][16]byte{id, unknownID} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 1, 42, -1
		rt.Partitions = append(rt.Partitions, rp)
		c.Topics = append(c.Topics, rt)
	}
	cr := tb.request(c).(*kmsg.OffsetCommitResponse)
	codes := map[[16]byte]int16{}
	for _, rt := range cr.Topics {
		codes[rt.TopicID] = rt.Partitions[0].ErrorCode
	}
	if len(cr.Topics) != 2 || codes[id] != 0 || codes[unknownID] != kerr.UnknownTopicID.Code {
		t.Fatalf("commit by id: %+v", cr.Topics)
	}

	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 10
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberEpoch = "g-ids", -1
	for _, tid := range [][16]byte{id, unknownID} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Partitions = tid, []int32{0, 1}
		g.Topics = append(g.Topics, rt)
	}
	f.Groups = append(f.Groups, g)
	fr := tb.request(f).(*kmsg.OffsetFetchResponse)
	if len(fr.Groups) != 1 || fr.Groups[0].ErrorCode != 0 || len(fr.Groups[0].Topics) != 2 {
		t.Fatalf("fetch by id: %+v", fr.Groups)
	}
	for _, rt := range fr.Groups[0].Topics {
		for _, rp := range rt.Partitions {
			want, code := int64(-1), int16(0)
			switch {
			case rt.TopicID == unknownID:
				code = kerr.UnknownTopicID.Code
			case rp.Partition == 1:
				want = 42
			}
			if rt.TopicID != id && rt.TopicID != unknownID || rp.Offset != want || rp.ErrorCode != code {
				t.Fatalf("fetch by id: topic %x partition %d offset %d error %d, want offset %d error %d", rt.TopicID, rp.Partition, rp.Offset, rp.ErrorCode, want, code)
			}
		}
	}
	// All the group's offsets (null topics), by id.
	f.Groups[0].Topics = nil
	fr = tb.request(f).(*kmsg.OffsetFetchResponse)
	if len(fr.Groups[0].Topics) != 1 || fr.Groups[0].Topics[0].TopicID != id || fr.Groups[0].Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("fetch all by id: %+v", fr.Groups[0].Topics)
	}
	// The same commit read by name (v9).
	f.Version = 9
	g9 := kmsg.NewOffsetFetchRequestGroup()
	g9.Group, g9.MemberEpoch = "g-ids", -1
	g9.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "ids", Partitions: []int32{1}}}
	f.Groups = []kmsg.OffsetFetchRequestGroup{g9}
	fr = tb.request(f).(*kmsg.OffsetFetchResponse)
	if fr.Groups[0].Topics[0].Topic != "ids" || fr.Groups[0].Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("fetch by name: %+v", fr.Groups[0].Topics)
	}
}

// topicID is topic's id on tb (zero if it does not exist).
func topicID(t *testing.T, tb *testBroker, topic string) [16]byte {
	t.Helper()
	tp, _ := tb.broker().topics.Get(topic)
	return [16]byte(tp.ID)
}

// TxnOffsetCommit v6 (KIP-1319) names topics by id, with v5's transaction
// version 2 rules; an unknown id is UNKNOWN_TOPIC_ID.
func TestTxnOffsetCommitByTopicID(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "in", 1, nil)
	x := &txnRaw{t: t, tb: tb, id: "tv2-ids", tv2: true}
	x.init()
	unknownID := [16]byte{7, 7, 7}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 6
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = x.id, x.pid, x.epoch, "g-ids"
	req.Generation = -1
	for _, tid := range [][16]byte{topicID(t, tb, "in"), unknownID} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 42, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := rawRoundTrip(t, tb.addr, req).(*kmsg.TxnOffsetCommitResponse)
	codes := map[[16]byte]int16{}
	for _, rt := range resp.Topics {
		codes[rt.TopicID] = rt.Partitions[0].ErrorCode
	}
	if len(resp.Topics) != 2 || codes[topicID(t, tb, "in")] != 0 || codes[unknownID] != kerr.UnknownTopicID.Code {
		t.Fatalf("TxnOffsetCommit v6: %+v", resp.Topics)
	}
	if code := x.end(true); code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g-ids", "in", 0, true); code != 0 || off != 42 {
		t.Fatalf("committed offset %d %v", off, kerr.ErrorForCode(code))
	}
}

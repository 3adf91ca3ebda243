package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// Produce v13 names topics by id (KIP-516): a known id appends to its topic
// and the answer names it by id; an unknown id, and the zero id, are
// UNKNOWN_TOPIC_ID for each of their partitions; a deleted topic's id stays
// unknown after the topic is re-created under its name.
func TestProduceByTopicID(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "pids", 2, nil)
	tp, _ := tb.broker().topics.Get("pids")
	id := [16]byte(tp.ID)
	unknownID := [16]byte{7, 7, 7}

	produce := func(ids ...[16]byte) *kmsg.ProduceResponse {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 13, -1, 10000
		for _, tid := range ids {
			rt := kmsg.NewProduceRequestTopic()
			rt.TopicID = tid
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = 1
			rp.Records = batch.NewBatch(0, time.Now().UnixMilli(), batch.KV{Value: []byte("v")})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		rc := tb.raw()
		defer rc.nc.Close()
		rc.send(req, 1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.Version = req.Version
		rc.recv(resp)
		return resp
	}

	resp := produce(id, unknownID, [16]byte{})
	if len(resp.Topics) != 3 {
		t.Fatalf("got %d topics, want 3: %+v", len(resp.Topics), resp.Topics)
	}
	want := []struct {
		id   [16]byte
		code int16
	}{{id, 0}, {unknownID, kerr.UnknownTopicID.Code}, {[16]byte{}, kerr.UnknownTopicID.Code}}
	for i, w := range want {
		rt := resp.Topics[i]
		if rt.TopicID != w.id || len(rt.Partitions) != 1 || rt.Partitions[0].Partition != 1 || rt.Partitions[0].ErrorCode != w.code {
			t.Fatalf("topic %d: %+v, want id %x error %d", i, rt, w.id, w.code)
		}
	}
	if resp.Topics[0].Partitions[0].BaseOffset != 0 {
		t.Fatalf("base offset %d, want 0", resp.Topics[0].Partitions[0].BaseOffset)
	}
	// The record is there, read by name.
	cl := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"pids": {1: kgo.NewOffset().AtStart()}}))
	fs := cl.PollRecords(dpCtx(t, 30*time.Second), 1)
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("consumed %v (errors %v), want the one record", recs, fs.Errors())
	}

	// Deleted and re-created: the old id is unknown, the new one works.
	if _, err := tb.admin().DeleteTopics(dpCtx(t, 30*time.Second), "pids"); err != nil {
		t.Fatal(err)
	}
	dpTopic(t, tb, "pids", 2, nil)
	tp2, _ := tb.broker().topics.Get("pids")
	resp = produce(id, [16]byte(tp2.ID))
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicID.Code {
		t.Fatalf("old id: error %d, want UNKNOWN_TOPIC_ID", c)
	}
	if rp := resp.Topics[1].Partitions[0]; rp.ErrorCode != 0 || rp.BaseOffset != 0 || resp.Topics[1].TopicID != [16]byte(tp2.ID) {
		t.Fatalf("new id: %+v", resp.Topics[1])
	}
}

// The partition check after the id is resolved: a topic re-created under the
// same name between resolution and append is UNKNOWN_TOPIC_ID, not the new
// topic's.
func TestProduceByTopicIDRecreated(t *testing.T) {
	tb := startTestBroker(t, testOptions{Quiet: true})
	dpTopic(t, tb, "rec", 1, nil)
	tp, _ := tb.broker().topics.Get("rec")
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 13, 1
	sp := kmsg.NewProduceResponseTopicPartition()
	it := produceItem{sp: &sp, topic: "rec", topicID: [16]byte{1, 2, 3}, rp: kmsg.ProduceRequestTopicPartition{
		Records: batch.NewBatch(0, time.Now().UnixMilli(), batch.KV{Value: []byte("v")})}}
	if err := tb.broker().appendPartition(&it, req); errorCode(err) != kerr.UnknownTopicID.Code {
		t.Fatalf("stale id: %v, want UNKNOWN_TOPIC_ID", err)
	}
	it.topicID = [16]byte(tp.ID)
	if err := tb.broker().appendPartition(&it, req); err != nil {
		t.Fatalf("current id: %v", err)
	}
}

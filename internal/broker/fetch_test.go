package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// dpFetchReq fetches the given partitions of topic at offsets (v12: names).
func dpFetchReq(topic string, offsets map[int32]int64, maxWaitMs, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWaitMs, minBytes, 50<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < int32(len(offsets)); p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], 1<<20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// dpFetchRaw sends req on rc and returns the response.
func dpFetchRaw(t *testing.T, rc *rawConn, req *kmsg.FetchRequest, corr int32) *kmsg.FetchResponse {
	t.Helper()
	rc.send(req, corr)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.Version)
	if got := rc.recv(resp); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	return resp
}

func batchesIn(t *testing.T, b []byte) []batch.Header {
	t.Helper()
	var out []batch.Header
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil || h.TotalSize() > len(b) {
			t.Fatalf("fetched bytes are not whole batches: %v", err)
		}
		if err := batch.Validate(b[:h.TotalSize()], batch.ValidateOptions{CheckRecords: true}); err != nil {
			t.Fatalf("fetched batch invalid: %v", err)
		}
		out = append(out, h)
		b = b[h.TotalSize():]
	}
	return out
}

// A long poll at the log end is woken by an append (not by its timeout:
// the wait is far longer than the test allows).
func TestFetchLongPollWakesOnAppend(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "lp", 2, nil)
	rc := tb.raw()
	type result struct {
		resp *kmsg.FetchResponse
	}
	done := make(chan result, 1)
	go func() {
		req := dpFetchReq("lp", map[int32]int64{0: 0, 1: 0}, 60000, 1)
		rc.send(req, 1)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(12)
		frame, err := rc.readFrame()
		if err == nil && len(frame) > 5 {
			err = resp.ReadFrom(frame[5:]) // correlation id + empty tagged fields (header v1)
		}
		if err != nil {
			resp = nil
		}
		done <- result{resp}
	}()
	// Wait until the fetch is parked (the broker logged nothing to poll on:
	// so just make sure the request reached it by waiting for an empty
	// response not to have come), then append to partition 1.
	select {
	case r := <-done:
		t.Fatalf("fetch answered before any append: %+v", r.resp)
	case <-time.After(100 * time.Millisecond):
	}
	if p := dpProduce(t, tb, dpProduceReq("lp", 1, dpBatch(t, -1, -1, -1, 2))); p.ErrorCode != 0 {
		t.Fatal(p.ErrorCode)
	}
	select {
	case r := <-done:
		if r.resp == nil {
			t.Fatal("bad fetch response")
		}
		var got int
		for _, tp := range r.resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("partition %d error %d", p.Partition, p.ErrorCode)
				}
				if p.Partition == 1 && p.HighWatermark != 2 {
					t.Fatalf("high watermark %d", p.HighWatermark)
				}
				got += len(batchesIn(t, p.RecordBatches))
			}
		}
		if got != 1 {
			t.Fatalf("woken fetch returned %d batches, want 1", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("long poll not woken by the append")
	}
}

func TestFetchWaitExpiresEmpty(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "empty", 1, nil)
	rc := tb.raw()
	resp := dpFetchRaw(t, rc, dpFetchReq("empty", map[int32]int64{0: 0}, 50, 1), 1)
	p := resp.Topics[0].Partitions[0]
	if resp.ErrorCode != 0 || p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 || p.LogStartOffset != 0 {
		t.Fatalf("empty fetch: %+v", resp)
	}
}

// An empty partition result carries an empty record set, never a null one:
// librdkafka refuses a null set ("invalid MessageSetSize -1") and drops the
// whole response. Checked at a non-flexible version (v11, what kcat sends)
// and a flexible one.
func TestFetchEmptyRecordsAreNotNull(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "empty-set", 1, nil)
	rc := tb.raw()
	for i, v := range []int16{11, 12} {
		req := dpFetchReq("empty-set", map[int32]int64{0: 0}, 0, 0)
		req.SetVersion(v)
		p := dpFetchRaw(t, rc, req, int32(i+1)).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.RecordBatches == nil {
			t.Fatalf("fetch v%d of an empty partition: error %d, records nil=%v", v, p.ErrorCode, p.RecordBatches == nil)
		}
	}
}

func TestFetchErrorsAndLimits(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "f", 2, nil)
	for i := 0; i < 3; i++ {
		for p := int32(0); p < 2; p++ {
			if r := dpProduce(t, tb, dpProduceReq("f", p, dpBatch(t, -1, -1, -1, 10))); r.ErrorCode != 0 {
				t.Fatal(r.ErrorCode)
			}
		}
	}
	rc := tb.raw()
	corr := int32(0)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		corr++
		return dpFetchRaw(t, rc, req, corr)
	}

	// Out of range (past the end) and below the start after DeleteRecords.
	resp := fetch(dpFetchReq("f", map[int32]int64{0: 31, 1: 30}, 0, 1))
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("offset 31 of 30: error %d", p.ErrorCode)
	}
	if p := resp.Topics[0].Partitions[1]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("offset at the end: %+v", p)
	}

	// Unknown topic and partition.
	resp = fetch(dpFetchReq("nope", map[int32]int64{0: 0}, 0, 1))
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", p.ErrorCode)
	}

	// A leader epoch from the future.
	req := dpFetchReq("f", map[int32]int64{0: 0}, 0, 1)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
	if p := fetch(req).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("future leader epoch: %d", p.ErrorCode)
	}

	// Tiny limits: the first partition still returns one whole batch, the
	// second nothing (the response budget is spent).
	req = dpFetchReq("f", map[int32]int64{0: 5, 1: 0}, 0, 1)
	req.MaxBytes = 10
	req.Topics[0].Partitions[0].PartitionMaxBytes = 10
	resp = fetch(req)
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	hs := batchesIn(t, p0.RecordBatches)
	if len(hs) != 1 || hs[0].BaseOffset != 0 || len(p1.RecordBatches) != 0 {
		t.Fatalf("limits: partition 0 %d batches (base %v), partition 1 %d bytes", len(hs), hs, len(p1.RecordBatches))
	}
	// An answer budget of 0 is the first batch only, as in Kafka (not "no
	// limit").
	req = dpFetchReq("f", map[int32]int64{0: 0, 1: 0}, 0, 1)
	req.MaxBytes = 0
	resp = fetch(req)
	p0, p1 = resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if n := len(batchesIn(t, p0.RecordBatches)); n != 1 || len(p1.RecordBatches) != 0 {
		t.Fatalf("max_bytes 0: partition 0 %d batches, partition 1 %d bytes; want 1 batch and nothing", n, len(p1.RecordBatches))
	}
	// Enough room for all: everything from the batch holding the offset on.
	resp = fetch(dpFetchReq("f", map[int32]int64{0: 15, 1: 0}, 0, 1))
	if n := len(batchesIn(t, resp.Topics[0].Partitions[0].RecordBatches)); n != 2 {
		t.Fatalf("from offset 15: %d batches, want 2", n)
	}
	if n := len(batchesIn(t, resp.Topics[0].Partitions[1].RecordBatches)); n != 3 {
		t.Fatalf("partition 1: %d batches, want 3", n)
	}
}

// KIP-227 sessions, driven by hand: create, incremental with nothing new,
// incremental after an append, forget, and the session errors.
func TestFetchSessions(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "s", 2, nil)
	rc := tb.raw()
	corr := int32(0)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		corr++
		return dpFetchRaw(t, rc, req, corr)
	}
	count := func(resp *kmsg.FetchResponse) int {
		n := 0
		for _, tp := range resp.Topics {
			n += len(tp.Partitions)
		}
		return n
	}

	req := dpFetchReq("s", map[int32]int64{0: 0, 1: 0}, 0, 0)
	req.SessionEpoch = 0
	resp := fetch(req)
	id := resp.SessionID
	if resp.ErrorCode != 0 || id <= 0 || count(resp) != 2 {
		t.Fatalf("session create: %+v", resp)
	}

	inc := func(epoch int32) *kmsg.FetchRequest {
		r := kmsg.NewPtrFetchRequest()
		r.SetVersion(12)
		r.ReplicaID, r.MaxBytes, r.SessionID, r.SessionEpoch = -1, 1<<20, id, epoch
		return r
	}
	if resp = fetch(inc(1)); resp.ErrorCode != 0 || resp.SessionID != id || count(resp) != 0 {
		t.Fatalf("incremental, nothing new: %+v", resp)
	}
	if p := dpProduce(t, tb, dpProduceReq("s", 1, dpBatch(t, -1, -1, -1, 3))); p.ErrorCode != 0 {
		t.Fatal(p.ErrorCode)
	}
	resp = fetch(inc(2))
	if count(resp) != 1 || resp.Topics[0].Partitions[0].Partition != 1 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("incremental after append: %+v", resp)
	}
	// The client moves its offset for partition 1; nothing new after that.
	r := inc(3)
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "s"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1, 3, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	if resp = fetch(r); count(resp) != 0 {
		t.Fatalf("after moving the offset: %+v", resp)
	}
	// Forget partition 0; appends there are then not reported.
	r = inc(4)
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "s", []int32{0}
	r.ForgottenTopics = append(r.ForgottenTopics, ft)
	fetch(r)
	dpProduce(t, tb, dpProduceReq("s", 0, dpBatch(t, -1, -1, -1, 1)))
	if resp = fetch(inc(5)); count(resp) != 0 {
		t.Fatalf("forgotten partition reported: %+v", resp)
	}
	// Errors.
	if resp = fetch(inc(5)); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("reused epoch: %d", resp.ErrorCode)
	}
	r = inc(1)
	r.SessionID = id + 1
	if resp = fetch(r); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: %d", resp.ErrorCode)
	}
}

// Fetch v13+ names topics by id.
func TestFetchByTopicID(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "ids", 1, nil)
	dpProduce(t, tb, dpProduceReq("ids", 0, dpBatch(t, -1, -1, -1, 2)))
	top, _ := tb.broker().topics.Get("ids")
	rc := tb.raw()
	req := dpFetchReq("", map[int32]int64{0: 0}, 0, 1)
	req.SetVersion(16)
	req.Topics[0].TopicID = [16]byte(top.ID)
	resp := dpFetchRaw(t, rc, req, 1)
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != [16]byte(top.ID) || len(batchesIn(t, resp.Topics[0].Partitions[0].RecordBatches)) != 1 {
		t.Fatalf("fetch by id: %+v", resp)
	}
	req.Topics[0].TopicID = [16]byte{1, 2, 3}
	resp = dpFetchRaw(t, rc, req, 2)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %d", p.ErrorCode)
	}
}

// Fetch v4–v9 cannot carry zstd: on a topic whose compression.type is zstd
// they get UNSUPPORTED_COMPRESSION_TYPE, as from Kafka; v10 reads it.
func TestFetchOldVersionOnZstdTopic(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "zstd-topic", 1, map[string]*string{"compression.type": strp("zstd")})
	if p := dpProduce(t, tb, dpProduceReq("zstd-topic", 0, dpBatch(t, -1, -1, -1, 3))); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	rc := tb.raw()
	for i, c := range []struct {
		version int16
		code    int16
	}{{9, kerr.UnsupportedCompressionType.Code}, {10, 0}} {
		req := dpFetchReq("zstd-topic", map[int32]int64{0: 0}, 0, 0)
		req.SetVersion(c.version)
		p := dpFetchRaw(t, rc, req, int32(i+1)).Topics[0].Partitions[0]
		if p.ErrorCode != c.code {
			t.Fatalf("fetch v%d: error %d, want %d", c.version, p.ErrorCode, c.code)
		}
		if c.code == 0 && len(p.RecordBatches) == 0 {
			t.Fatalf("fetch v%d returned no records", c.version)
		}
	}
}

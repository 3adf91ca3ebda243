package broker

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// storedCodecs returns the codec of every batch stored in topic's
// partition p, read straight from the log.
func storedCodecs(t *testing.T, tb *testBroker, topic string, p int32) []batch.Compression {
	t.Helper()
	l, _, code := tb.broker().partitionLog(topic, p)
	if code != 0 {
		t.Fatalf("partition %s/%d: error %d", topic, p, code)
	}
	raw, err := l.ReadBytes(0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var out []batch.Compression
	for len(raw) > 0 {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Validate(raw[:h.TotalSize()], batch.ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
			t.Fatalf("stored batch at %d: %v", h.BaseOffset, err)
		}
		out = append(out, h.Compression())
		raw = raw[h.TotalSize():]
	}
	return out
}

// compression.type=zstd: kgo's gzip batches are stored as zstd, consumers
// get the records unchanged, a raw Fetch returns zstd batches, and an
// idempotent retry of a re-encoded batch is answered as a duplicate.
func TestTopicCompressionTypeRecompresses(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	const topic = "to-zstd"
	dpTopic(t, tb, topic, 1, map[string]*string{"compression.type": strp("zstd"), "compression.zstd.level": strp("9")})

	cl := tb.client(kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerLinger(5*time.Millisecond))
	const n = 200
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		r := &kgo.Record{
			Topic:     topic,
			Key:       []byte(fmt.Sprintf("key-%d", i)),
			Value:     bytes.Repeat([]byte{byte('a' + i%26)}, 100+i),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}, {Key: "nil"}},
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i*37%101)),
		}
		if i%10 == 3 {
			r.Value = nil // tombstone
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(dpCtx(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	codecs := storedCodecs(t, tb, topic, 0)
	if len(codecs) == 0 {
		t.Fatal("nothing stored")
	}
	for i, c := range codecs {
		if c != batch.Zstd {
			t.Fatalf("stored batch %d is %s, want zstd", i, c)
		}
	}

	got := dpConsume(t, tb, topic, n)
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	for i, r := range got {
		want := recs[i]
		if r.Offset != int64(i) || !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) ||
			(r.Value == nil) != (want.Value == nil) || !r.Timestamp.Equal(want.Timestamp) ||
			len(r.Headers) != 2 || string(r.Headers[0].Value) != fmt.Sprint(i) || r.Headers[1].Key != "nil" || r.Headers[1].Value != nil {
			t.Fatalf("record %d: got offset %d key %q ts %v headers %v; sent key %q ts %v",
				i, r.Offset, r.Key, r.Timestamp, r.Headers, want.Key, want.Timestamp)
		}
	}

	// A raw Fetch shows the codec in the batch attributes.
	fr := dpRaw(t, tb, dpFetchReq(topic, map[int32]int64{0: 0}, 0, 1), 12).(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch response %+v", fr)
	}
	for _, h := range batchesIn(t, fr.Topics[0].Partitions[0].RecordBatches) {
		if h.Compression() != batch.Zstd {
			t.Fatalf("fetched batch at %d is %s", h.BaseOffset, h.Compression())
		}
	}

	// An idempotent batch sent twice (a retry): the second answer is the
	// first one's offset, and nothing more is stored.
	pid, epoch := dpInitProducerID(t, tb)
	b := batch.NewBuilder()
	b.Compression = batch.Gzip
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, 0
	b.BaseTimestamp = time.Now().UnixMilli()
	for i := 0; i < 5; i++ {
		b.AddAt(b.BaseTimestamp, []byte(fmt.Sprint("idem-", i)), []byte("v"))
	}
	raw, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	first := dpProduce(t, tb, dpProduceReq(topic, 0, append([]byte(nil), raw...)))
	retry := dpProduce(t, tb, dpProduceReq(topic, 0, append([]byte(nil), raw...)))
	if first.ErrorCode != 0 || retry.ErrorCode != 0 || first.BaseOffset != n || retry.BaseOffset != first.BaseOffset {
		t.Fatalf("first %+v, retry %+v", first, retry)
	}
	after := storedCodecs(t, tb, topic, 0)
	if len(after) != len(codecs)+1 || after[len(after)-1] != batch.Zstd {
		t.Fatalf("after the retry the log holds %v (before %v)", after, codecs)
	}
}

// Switching compression.type at runtime applies to the next produce; with
// "producer" the batch is stored as sent.
func TestTopicCompressionTypeAltered(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	const topic = "altered"
	dpTopic(t, tb, topic, 1, map[string]*string{"compression.type": strp("uncompressed")})
	produce := func(i int) {
		b := batch.NewBuilder()
		b.Compression = batch.LZ4
		b.BaseTimestamp = time.Now().UnixMilli()
		b.AddAt(b.BaseTimestamp, []byte(fmt.Sprint("k", i)), bytes.Repeat([]byte("v"), 500))
		raw, _ := b.Build()
		if p := dpProduce(t, tb, dpProduceReq(topic, 0, raw)); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	produce(0)
	res, err := tb.admin().AlterTopicConfigs(dpCtx(t, 10*time.Second),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "compression.type", Value: strp("producer")}}, topic)
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res[0].Err)
	}
	produce(1)
	got := storedCodecs(t, tb, topic, 0)
	if len(got) != 2 || got[0] != batch.None || got[1] != batch.LZ4 {
		t.Fatalf("stored codecs %v, want [none lz4]", got)
	}
}

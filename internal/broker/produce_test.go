package broker

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Every codec: an idempotent kgo producer (the default) writes, a kgo
// consumer (fetch sessions, the default) reads the same records back.
func TestProduceConsumeEveryCodec(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			dpTopic(t, tb, topic, 2, nil)
			cl := tb.client(kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(5*time.Millisecond))
			const n = 300
			var recs []*kgo.Record
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{
					Topic: topic, Partition: int32(i % 2),
					Key:     []byte(fmt.Sprintf("key-%d", i)),
					Value:   bytes.Repeat([]byte{byte(i)}, 50+i%100),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(name)}},
				})
			}
			if err := cl.ProduceSync(dpCtx(t, 20*time.Second), recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			got := dpConsume(t, tb, topic, n)
			if len(got) != n {
				t.Fatalf("consumed %d records, want %d", len(got), n)
			}
			seen := map[string]bool{}
			for _, r := range got {
				var i int
				fmt.Sscanf(string(r.Key), "key-%d", &i)
				want := recs[i]
				if r.Partition != want.Partition || !bytes.Equal(r.Value, want.Value) ||
					len(r.Headers) != 1 || string(r.Headers[0].Value) != name || seen[string(r.Key)] {
					t.Fatalf("record %s: partition %d, %d value bytes, headers %v (dup=%v)", r.Key, r.Partition, len(r.Value), r.Headers, seen[string(r.Key)])
				}
				seen[string(r.Key)] = true
			}
		})
	}
}

func TestProduceErrors(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "plain", 1, map[string]*string{"max.message.bytes": strp("2000")})
	dpTopic(t, tb, "compacted", 1, map[string]*string{"cleanup.policy": strp("compact")})

	good := dpBatch(t, -1, -1, -1, 3)
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff

	big := batch.NewBuilder()
	big.AddAt(time.Now().UnixMilli(), []byte("k"), bytes.Repeat([]byte("x"), 5000))
	bigBatch, _ := big.Build()

	keyless := batch.NewBuilder()
	now := time.Now().UnixMilli()
	keyless.AddAt(now, []byte("a"), []byte("1"))
	keyless.AddAt(now, nil, []byte("2"))
	keylessBatch, _ := keyless.Build()

	badTs := batch.NewBuilder()
	badTs.AddAt(now+7*24*3600*1000, []byte("k"), []byte("v"))
	badTsBatch, _ := badTs.Build()

	cases := []struct {
		name      string
		topic     string
		partition int32
		records   []byte
		code      int16
		check     func(t *testing.T, p kmsg.ProduceResponseTopicPartition)
	}{
		{name: "unknown topic", topic: "nope", records: good, code: kerr.UnknownTopicOrPartition.Code},
		{name: "unknown partition", topic: "plain", partition: 3, records: good, code: kerr.UnknownTopicOrPartition.Code},
		{name: "bad crc", topic: "plain", records: corrupt, code: kerr.CorruptMessage.Code},
		{name: "truncated", topic: "plain", records: good[:len(good)-3], code: kerr.CorruptMessage.Code},
		{name: "two batches", topic: "plain", records: append(append([]byte(nil), good...), good...), code: kerr.InvalidRecord.Code},
		{name: "empty", topic: "plain", records: nil, code: kerr.InvalidRecord.Code},
		{name: "too large", topic: "plain", records: bigBatch, code: kerr.MessageTooLarge.Code},
		{name: "internal topic", topic: "__consumer_offsets", records: good, code: kerr.InvalidTopicException.Code},
		// Kafka 4's message.timestamp.after.max.ms default is one hour.
		{name: "future timestamp", topic: "plain", records: badTsBatch, code: kerr.InvalidTimestamp.Code},
		{name: "keyless on compacted", topic: "compacted", records: keylessBatch, code: kerr.InvalidRecord.Code,
			check: func(t *testing.T, p kmsg.ProduceResponseTopicPartition) {
				if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 || p.ErrorMessage == nil {
					t.Fatalf("record errors %+v, message %v", p.ErrorRecords, p.ErrorMessage)
				}
				// The message says why, where and which record, once.
				if want := "compacted topic cannot accept records without a key in topic partition compacted-0 (record 1 of the batch)"; *p.ErrorMessage != want {
					t.Fatalf("message %q, want %q", *p.ErrorMessage, want)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := dpProduce(t, tb, dpProduceReq(c.topic, c.partition, c.records))
			want := c.code
			if p.ErrorCode != want {
				msg := ""
				if p.ErrorMessage != nil {
					msg = *p.ErrorMessage
				}
				t.Fatalf("error code %d (%s), want %d", p.ErrorCode, msg, want)
			}
			if want != 0 && p.BaseOffset != -1 {
				t.Fatalf("failed produce reported base offset %d", p.BaseOffset)
			}
			if c.check != nil {
				c.check(t, p)
			}
		})
	}
	// acks outside -1/0/1 (sent raw: clients do not let one through).
	rc := tb.raw()
	bad := dpProduceReq("plain", 0, good)
	bad.Acks = 2
	bad.SetVersion(9)
	rc.send(bad, 7)
	resp := bad.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(9)
	rc.recv(resp)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: error %d", c)
	}
	// Nothing of the failed appends reached the logs.
	if leo := tb.broker().logs.Get("plain", 0).LogEndOffset(); leo != 0 {
		t.Fatalf("plain log end offset %d after only failed appends", leo)
	}
	if leo := tb.broker().logs.Get("compacted", 0).LogEndOffset(); leo != 0 {
		t.Fatalf("compacted log end offset %d, want 0", leo)
	}
}

// A timestamp outside message.timestamp.after.max.ms is INVALID_TIMESTAMP.
func TestProduceTimestampBounds(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "ts", 1, map[string]*string{"message.timestamp.after.max.ms": strp("60000")})
	b := batch.NewBuilder()
	b.AddAt(time.Now().Add(time.Hour).UnixMilli(), []byte("k"), []byte("v"))
	raw, _ := b.Build()
	if p := dpProduce(t, tb, dpProduceReq("ts", 0, raw)); p.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Fatalf("error %d, want INVALID_TIMESTAMP", p.ErrorCode)
	}
	dpTopic(t, tb, "lat", 1, map[string]*string{"message.timestamp.type": strp("LogAppendTime")})
	before := time.Now().UnixMilli()
	p := dpProduce(t, tb, dpProduceReq("lat", 0, dpBatch(t, -1, -1, -1, 2)))
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("LogAppendTime produce: error %d, append time %d (before %d)", p.ErrorCode, p.LogAppendTime, before)
	}
}

// Produce v0–v2 is advertised but refused; acks=0 gets no response at all.
func TestProduceOldVersionsAndAcksZero(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "a0", 1, nil)
	rc := tb.raw()

	old := dpProduceReq("a0", 0, dpBatch(t, -1, -1, -1, 1))
	old.SetVersion(2)
	rc.send(old, 1)
	resp := old.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(2)
	if corr := rc.recv(resp); corr != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("v2 produce: corr %d, %+v", corr, resp.Topics)
	}

	fire := dpProduceReq("a0", 0, dpBatch(t, -1, -1, -1, 4))
	fire.Acks = 0
	fire.SetVersion(9)
	rc.send(fire, 2)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	rc.send(md, 3)
	mresp := md.ResponseKind()
	mresp.SetVersion(9)
	if corr := rc.recv(mresp); corr != 3 {
		t.Fatalf("first response after an acks=0 produce has correlation id %d, want 3", corr)
	}
	if leo := tb.broker().logs.Get("a0", 0).LogEndOffset(); leo != 4 {
		t.Fatalf("acks=0 records not appended: log end %d", leo)
	}
	// A failing acks=0 produce closes the connection.
	bad := dpProduceReq("nope", 0, dpBatch(t, -1, -1, -1, 1))
	bad.Acks = 0
	bad.SetVersion(9)
	rc.send(bad, 4)
	rc.expectClosed()
}

// Idempotence over the wire: the same request twice gets the same offsets
// and is stored once; a gap and a stale epoch are refused.
func TestProduceIdempotentRetry(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "idem", 1, nil)
	pid, epoch := dpInitProducerID(t, tb)

	// Something before, so offsets are not trivially 0.
	if p := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, -1, -1, -1, 2))); p.ErrorCode != 0 {
		t.Fatal(p.ErrorCode)
	}
	first := dpProduceReq("idem", 0, dpBatch(t, pid, epoch, 0, 3))
	p1 := dpProduce(t, tb, first)
	p2 := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, pid, epoch, 0, 3)))
	if p1.ErrorCode != 0 || p2.ErrorCode != 0 || p1.BaseOffset != 2 || p2.BaseOffset != 2 {
		t.Fatalf("first %+v, retry %+v", p1, p2)
	}
	l := tb.broker().logs.Get("idem", 0)
	if l.LogEndOffset() != 5 {
		t.Fatalf("retry appended again: log end %d", l.LogEndOffset())
	}
	if p := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, pid, epoch, 5, 1))); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: error %d", p.ErrorCode)
	}
	if p := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, pid, epoch+1, 0, 1))); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("new epoch: %+v", p)
	}
	if p := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, pid, epoch, 3, 1))); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch: error %d", p.ErrorCode)
	}

	// After a restart the producer state is back: the retry is still
	// recognised, and a gap still refused.
	tb.restart()
	if p := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, pid, epoch+1, 0, 1))); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("retry after restart: %+v", p)
	}
	if p := dpProduce(t, tb, dpProduceReq("idem", 0, dpBatch(t, pid, epoch+1, 2, 1))); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: error %d", p.ErrorCode)
	}
	if leo := tb.broker().logs.Get("idem", 0).LogEndOffset(); leo != 6 {
		t.Fatalf("log end after restart %d, want 6", leo)
	}
}

// Every acknowledged record comes back after a restart, and producer ids
// are never handed out twice.
func TestProduceRestartKeepsRecordsAndIDs(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "durable", 3, nil)
	cl := tb.client(kgo.DefaultProduceTopic("durable"))
	const n = 500
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint("value-", i))})
	}
	if err := cl.ProduceSync(dpCtx(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id1, _ := dpInitProducerID(t, tb)
	cl.Close()
	tb.restart()
	id2, _ := dpInitProducerID(t, tb)
	if id2 <= id1 {
		t.Fatalf("producer id %d after restart, %d before: ids must never repeat", id2, id1)
	}
	got := dpConsume(t, tb, "durable", n)
	keys := map[string]bool{}
	for _, r := range got {
		if string(r.Value) != "value-"+string(r.Key) {
			t.Fatalf("record %s has value %s", r.Key, r.Value)
		}
		keys[string(r.Key)] = true
	}
	if len(keys) != n {
		t.Fatalf("%d distinct records after restart, want %d", len(keys), n)
	}
}

func TestInitProducerIDTransactional(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = strp("txn-1")
	req.TransactionTimeoutMillis = 60000
	resp := tb.request(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("transactional InitProducerId: %+v", resp)
	}
	again := tb.request(req).(*kmsg.InitProducerIDResponse)
	if again.ErrorCode != 0 || again.ProducerID != resp.ProducerID || again.ProducerEpoch != 1 {
		t.Fatalf("transactional InitProducerId again: %+v", again)
	}
	// Idempotent producers get fresh ids, never the transactional one.
	a, _ := dpInitProducerID(t, tb)
	b, _ := dpInitProducerID(t, tb)
	if a == b || a < 0 || b < 0 || a == resp.ProducerID || b == resp.ProducerID {
		t.Fatalf("ids %d and %d (transactional %d)", a, b, resp.ProducerID)
	}
}

// kill -9: the process dies (written data survives in the page cache, no
// clean shutdown, no producer snapshot). Every acknowledged record is back
// after the restart, and the producer state is rebuilt from the log.
func TestProduceCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewMemFS()
	s := dpStartServer(t, dir, fsys)
	tb := s.tb(t)
	dpTopic(t, tb, "crash", 2, nil)
	pid, epoch := dpInitProducerID(t, tb)
	for seq := int32(0); seq < 10; seq += 2 {
		if p := dpProduce(t, tb, dpProduceReq("crash", 0, dpBatch(t, pid, epoch, seq, 2))); p.ErrorCode != 0 || p.BaseOffset != int64(seq) {
			t.Fatalf("idempotent batch %d: %+v", seq, p)
		}
	}
	cl := tb.client(kgo.DefaultProduceTopic("crash"))
	const n = 300
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Partition: 1, Key: []byte(fmt.Sprint(i)), Value: []byte("x")})
	}
	if err := cl.ProduceSync(dpCtx(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	dpCrash(s, fsys)

	s2 := dpStartServer(t, dir, fsys)
	defer s2.srv.Close()
	tb2 := s2.tb(t)
	// The retried last batch is recognised (state rebuilt by scanning the log).
	if p := dpProduce(t, tb2, dpProduceReq("crash", 0, dpBatch(t, pid, epoch, 8, 2))); p.ErrorCode != 0 || p.BaseOffset != 8 {
		t.Fatalf("retry after crash: %+v", p)
	}
	if p := dpProduce(t, tb2, dpProduceReq("crash", 0, dpBatch(t, pid, epoch, 11, 1))); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after crash: error %d", p.ErrorCode)
	}
	got := dpConsume(t, tb2, "crash", n+10)
	if len(got) != n+10 {
		t.Fatalf("%d records after the crash, want %d", len(got), n+10)
	}
}

// An I/O failure under an append is KAFKA_STORAGE_ERROR, and nothing is
// half-appended.
func TestProduceStorageError(t *testing.T) {
	fsys := vfs.NewMemFS()
	s := dpStartServer(t, t.TempDir(), fsys)
	defer s.srv.Close()
	tb := s.tb(t)
	dpTopic(t, tb, "io", 1, nil)
	if p := dpProduce(t, tb, dpProduceReq("io", 0, dpBatch(t, -1, -1, -1, 3))); p.ErrorCode != 0 {
		t.Fatal(p.ErrorCode)
	}
	fsys.SetFault(func(op, name string) error {
		if op == "write" {
			return syscall.ENOSPC
		}
		return nil
	})
	p := dpProduce(t, tb, dpProduceReq("io", 0, dpBatch(t, -1, -1, -1, 3)))
	fsys.SetFault(nil)
	if p.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("error %d, want KAFKA_STORAGE_ERROR", p.ErrorCode)
	}
	if leo := s.srv.Broker().logs.Get("io", 0).LogEndOffset(); leo != 3 {
		t.Fatalf("log end %d after a failed append, want 3", leo)
	}
}

// min.insync.replicas above 1 can never be met by one node: acks=-1 gets
// NOT_ENOUGH_REPLICAS (nothing appended) while acks=1 is still accepted.
func TestProduceMinInsyncReplicas(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	dpTopic(t, tb, "misr", 1, map[string]*string{"min.insync.replicas": strp("2")})
	req := dpProduceReq("misr", 0, dpBatch(t, -1, -1, -1, 1))
	if p := dpProduce(t, tb, req); p.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1 with min.insync.replicas=2: error %d, want NOT_ENOUGH_REPLICAS", p.ErrorCode)
	}
	req = dpProduceReq("misr", 0, dpBatch(t, -1, -1, -1, 1))
	req.Acks = 1
	// Raw: kgo.Client.Request would send its own acks setting.
	resp := dpRaw(t, tb, req, 9).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=1: error %d at offset %d, want offset 0", p.ErrorCode, p.BaseOffset)
	}
}

// dpCrash simulates kill -9 of s: handles die, and nothing the dying process
// would still do (flushes, snapshots, the clean-shutdown marker) reaches the
// disk.
func dpCrash(s *dpServer, fsys *vfs.MemFS) {
	fsys.ProcessCrash()
	fsys.SetFault(func(op, name string) error { return errors.New("process is dead") })
	_ = s.srv.Close()
	fsys.SetFault(nil)
}

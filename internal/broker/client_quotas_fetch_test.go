package broker

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// As in Kafka, a consumer fetch that earns a throttle is answered without
// its records (the offsets are still sent), and its bytes do not count, so
// a throttled consumer stays below its quota but for the first window's
// burst.
func TestQuotaFetchThrottledWithoutRecords(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 60*time.Second)
	adm := tb.admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "qf"); err != nil {
		t.Fatal(err)
	}
	// 4 KiB/s: a fetch may bring 40 KiB (quota × 10 windows); 20 records of
	// 4 KiB are 80 KiB, in batches of one record.
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("qf-slow")}}, "consumer_byte_rate", 4096)
	p := tb.client(kgo.DefaultProduceTopic("qf"), kgo.MaxBufferedRecords(1))
	for i := 0; i < 20; i++ {
		v := make([]byte, 4096)
		rand.Read(v)
		if err := p.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	md, err := adm.Metadata(ctx, "qf")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["qf"].ID
	cl := tb.client(kgo.ClientID("qf-slow"))
	fetch := func(offset int64) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "qf", id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = offset, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return send[*kmsg.FetchResponse](t, cl, req)
	}
	first := fetch(0)
	fp := first.Topics[0].Partitions[0]
	if len(fp.RecordBatches) == 0 || len(fp.RecordBatches) > 40<<10+4096 {
		t.Fatalf("first fetch: %d bytes of records (want some, at most the 40 KiB bound), throttle %d ms",
			len(fp.RecordBatches), first.ThrottleMillis)
	}
	// The next fetch, from where the first ended, puts the consumer over
	// its quota: throttled, no records, the high watermark still sent.
	next := fetch(10)
	np := next.Topics[0].Partitions[0]
	if next.ThrottleMillis <= 0 || len(np.RecordBatches) != 0 || np.HighWatermark != 20 {
		t.Fatalf("second fetch: throttle %d ms, %d bytes of records, high watermark %d; want a throttle, no records, 20",
			next.ThrottleMillis, len(np.RecordBatches), np.HighWatermark)
	}
	// Another client id is not throttled.
	other := send[*kmsg.FetchResponse](t, tb.client(kgo.ClientID("qf-other")), func() kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "qf", id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = 10, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return req
	}())
	if other.ThrottleMillis != 0 || len(other.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("unthrottled client: throttle %d ms, %d bytes", other.ThrottleMillis, len(other.Topics[0].Partitions[0].RecordBatches))
	}
}

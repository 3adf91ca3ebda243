package broker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Helpers shared by the data-path tests (produce, fetch, list offsets, ...).

func dpCtx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// dpTopic creates a topic with optional config overrides.
func dpTopic(t *testing.T, tb *testBroker, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := tb.admin().CreateTopic(dpCtx(t, 10*time.Second), partitions, 1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

func strp(s string) *string { return &s }

// dpBatch builds a batch of n records ("k<i>"/"v<i>") with the given
// producer fields (pid -1 for none).
func dpBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := batch.NewBuilder()
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	now := time.Now().UnixMilli()
	b.BaseTimestamp = now
	for i := 0; i < n; i++ {
		b.AddAt(now, []byte{'k', byte('0' + i%10)}, []byte{'v', byte('0' + i%10)})
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dpProduceReq is a one-partition produce request with acks=-1.
func dpProduceReq(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// dpProduce sends req and returns its only partition response.
func dpProduce(t *testing.T, tb *testBroker, req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := tb.request(req).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response shape: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// dpConsume reads partition 0.. of topic from the start until n records
// arrived (or fails after a deadline).
func dpConsume(t *testing.T, tb *testBroker, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := tb.client(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	ctx := dpCtx(t, 20*time.Second)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s before the deadline", len(out), n, topic)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// dpInitProducerID asks for an idempotent producer id.
func dpInitProducerID(t *testing.T, tb *testBroker) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp := tb.request(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: error %d", resp.ErrorCode)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// dpRaw sends req at version on a fresh raw connection (no client-side
// routing: unknown topics reach the broker) and returns the response.
func dpRaw(t *testing.T, tb *testBroker, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	rc := tb.raw()
	req.SetVersion(version)
	rc.send(req, 1)
	resp := req.ResponseKind()
	resp.SetVersion(version)
	rc.recv(resp)
	return resp
}

// dpServer is a broker whose logs live on a vfs.MemFS (crash and fault
// injection); topic metadata stays in the real dataDir.
type dpServer struct {
	srv  *Server
	addr string
}

func dpStartServer(t *testing.T, dataDir string, fsys vfs.FS) *dpServer {
	t.Helper()
	w := &testLogWriter{t: t}
	t.Cleanup(w.done)
	srv := NewServer(Options{
		Listen: "127.0.0.1:0", DataDir: dataDir, FS: fsys, Version: "test",
		Logger:          slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})),
		ShutdownTimeout: 10 * time.Second,
		// A simulated crash (fault-injecting FS) fails the metadata log of a
		// one-voter quorum node too: that node stops, the test goes on.
		Halt: func(err error) { t.Logf("halt: %v", err) },
	})
	if err := srv.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	return &dpServer{srv: srv, addr: srv.Addr().String()}
}

// tb wraps the server in a testBroker for the request helpers (the caller
// closes the server itself).
func (s *dpServer) tb(t *testing.T) *testBroker {
	return &testBroker{t: t, srv: s.srv, addr: s.addr, logs: &testLogWriter{t: t}}
}

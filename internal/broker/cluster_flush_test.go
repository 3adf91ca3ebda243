package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// nodeFS gives a test cluster node's filesystem by node id
// (startTestClusterFS).
type nodeFS func(id int) vfs.FS

// With flush.messages=1 an acks=all write survives a simultaneous power
// loss of every in-sync replica: the leader fsyncs before it answers, and a
// follower fsyncs what it appended before its next Fetch reports the new
// position (which is what moves the high watermark). Three nodes on
// MemFS; right after the last acknowledgement each node's filesystem is
// imaged as a power loss would leave it, and every acknowledged record is
// read back from each image at its offset.
func TestClusterFlushMessagesSurvivesPowerLoss(t *testing.T) {
	fss := map[int]*vfs.MemFS{1: vfs.NewMemFS(), 2: vfs.NewMemFS(), 3: vfs.NewMemFS()}
	tc := startTestClusterFS(t, 3, func(int, []int) map[string]string { return nil },
		func(id int) vfs.FS { return fss[id] })
	adm := tc.admin()
	const topic = "durable"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	one, three := "1", "3"
	createTopicEventually(t, ctx, adm, topic, 1, 3, map[string]*string{"flush.messages": &one, "min.insync.replicas": &three})
	waitTopicISR(t, adm, topic, 3)

	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	acked := map[int64]string{}
	for i := range 20 {
		v := fmt.Sprintf("durable-%02d", i)
		r := &kgo.Record{Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
		acked[r.Offset] = v
	}
	// Power loss of all three, now.
	images := map[int]*vfs.MemFS{}
	for id, fs := range fss {
		images[id] = fs.CrashImage()
	}
	for id, img := range images {
		dir := tc.nodes[id-1].broker().Logs().Dir()
		got := readImageLog(t, img, dir, topic)
		for off, v := range acked {
			if got[off] != v {
				t.Errorf("node %d after a power loss: offset %d holds %q, want the acknowledged %q", id, off, got[off], v)
			}
		}
	}
}

// readImageLog opens topic's partition 0 in dir on fsys as a restarted
// broker would and returns its records' values by offset.
func readImageLog(t *testing.T, fsys vfs.FS, dir, topic string) map[int64]string {
	t.Helper()
	m, err := log.OpenManager(fsys, dir, log.ManagerOptions{HousekeepingInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("open the crashed data directory: %v", err)
	}
	defer m.Close()
	l, err := m.Open(topic, 0, log.DefaultConfig())
	if err != nil {
		t.Fatalf("open the crashed log: %v", err)
	}
	rr, err := l.ReadToEnd(l.LogStartOffset(), 16<<20, true)
	if err != nil {
		t.Fatalf("read the crashed log: %v", err)
	}
	data, err := rr.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	if len(data) == 0 {
		return out
	}
	bs, err := batch.Split(data)
	if err != nil {
		t.Fatalf("split the crashed log's batches: %v", err)
	}
	for _, b := range bs {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := batch.Records(b, 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			out[h.Offset(&recs[i])] = string(recs[i].Value)
		}
	}
	return out
}

// createTopicEventually creates a topic through adm, retrying while the
// cluster is not ready for it (brokers not yet registered, no controller).
func createTopicEventually(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := adm.CreateTopic(cctx, partitions, rf, configs, topic)
		cancel()
		if err == nil && res.Err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("create topic %s: %v %v", topic, err, res.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitTopicISR polls (60 s) until every partition of topic has a leader and
// n in-sync replicas.
func waitTopicISR(t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := adm.Metadata(ctx, topic)
		cancel()
		ok := err == nil
		if td, found := md.Topics[topic]; !found || td.Err != nil || len(td.Partitions) == 0 {
			ok = false
		} else {
			for _, p := range td.Partitions {
				if p.Leader < 1 || len(p.ISR) != n {
					ok = false
				}
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: no leader with %d in-sync replicas after 60 s (err %v, metadata %+v)", topic, n, err, md.Topics[topic])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

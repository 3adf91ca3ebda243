package broker

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

func TestCleanedFrom(t *testing.T) {
	kv := func(k, v string) batch.KV { return batch.KV{Key: []byte(k), Value: []byte(v)} }
	b := func(base int64, n int) []byte {
		var recs []batch.KV
		for i := 0; i < n; i++ {
			recs = append(recs, kv("k", "v"))
		}
		return batch.NewBatch(base, 1000, recs...)
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, x := range bs {
			out = append(out, x...)
		}
		return out
	}
	withCount := func(x []byte, n uint32) []byte {
		binary.BigEndian.PutUint32(x[batch.OffRecordCount:], n)
		return x
	}
	withAttrs := func(x []byte, a uint16) []byte {
		binary.BigEndian.PutUint16(x[batch.OffAttributes:], a)
		return x
	}
	full := cat(b(10, 2), b(12, 1), b(13, 3))
	for _, c := range []struct {
		name string
		recs []byte
		pos  int64
		want bool
	}{
		{"empty answer", nil, 10, false},
		{"contiguous producer batches", full, 10, false},
		{"partial batch at the end", full[:len(full)-5], 10, false},
		{"starts after the position", cat(b(11, 1), b(12, 1)), 10, true},
		{"starts before the position", cat(b(9, 2), b(11, 1)), 10, true},
		{"gap between batches", cat(b(10, 2), b(13, 1)), 10, true},
		{"records removed inside a batch", cat(b(10, 1), withCount(b(11, 3), 2)), 10, true},
		{"emptied batch", cat(b(10, 1), withCount(b(11, 3), 0)), 10, true},
		{"delete horizon", withAttrs(b(10, 1), batch.AttrDeleteHorizon), 10, true},
	} {
		if got := cleanedFrom(c.recs, c.pos); got != c.want {
			t.Errorf("%s: cleanedFrom = %v, want %v", c.name, got, c.want)
		}
	}
}

// logRecords returns the keyed records of a log from its start as
// "key=value" ("key=<nil>" for a tombstone), with their offsets.
func logRecords(t *testing.T, l *log.Log) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		data, err := l.ReadBytes(off, 1<<20)
		if err != nil || len(data) == 0 {
			t.Fatalf("ReadBytes(%d): %v (%d bytes)", off, err, len(data))
		}
		bs, err := batch.Split(data)
		if err != nil {
			t.Fatalf("Split: %v", err)
		}
		for _, b := range bs {
			h, _ := batch.ParseHeader(b)
			rs, err := batch.Records(b, 0)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			for i := range rs {
				v := "<nil>"
				if rs[i].Value != nil {
					v = string(rs[i].Value)
				}
				out[h.Offset(&rs[i])] = string(rs[i].Key) + "=" + v
			}
			off = max(off, h.LastOffset()+1)
		}
	}
	return out
}

// Finding 17 of the fault checker: a follower away while a key was
// deleted and its tombstone removed by the leader's cleaner came back to
// fetch from offsets the leader had cleaned, and kept the deleted key's
// old value. It must end with the leader's records.
func TestClusterFollowerBehindCleanerRecopies(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"log.cleaner.enable": "false"})
	adm := tc.admin()
	const topic = "recopy"
	waitCluster(t, adm, "three brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
			"cleanup.policy": kadm.StringPtr("compact"), "delete.retention.ms": kadm.StringPtr("0"),
			"min.insync.replicas": kadm.StringPtr("1"),
		}, topic)
		if err == nil && resp.Err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create topic: %v %v", err, resp.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var leader int32 = -1
	waitCluster(t, adm, "a leader and three in-sync replicas", func(md kadm.Metadata) bool {
		p, ok := md.Topics[topic].Partitions[0]
		if !ok || p.Leader < 1 || len(p.ISR) != 3 {
			return false
		}
		leader = p.Leader
		return true
	})
	produce := func(key string, value []byte) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", key, err)
		}
	}
	logOf := func(n *testBroker) *log.Log { return n.broker().logs.Get(topic, 0) }
	produce("k", []byte("old"))
	// The follower that goes away, once it holds k=old.
	var away *testBroker
	for i, n := range tc.nodes {
		if int32(i+1) != leader {
			away = n
		}
	}
	waitFor(t, "the follower to hold k=old", func() bool {
		l := logOf(away)
		return l != nil && l.LogEndOffset() >= 1
	})
	away.stop()
	produce("k", nil) // the tombstone, then a record after it
	produce("x", []byte("1"))
	// The leader (whichever node leads now) and the other replica clean
	// until neither k=old nor its tombstone is left.
	waitFor(t, "the cleaner to remove k and its tombstone on the running replicas", func() bool {
		done := true
		for _, n := range tc.nodes {
			if n.srv == nil {
				continue
			}
			l := logOf(n)
			if l == nil || l.LogEndOffset() < 3 || l.HighWatermark() < 3 {
				return false
			}
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			if _, err := n.broker().cleaner.CleanNow(topic, 0); err != nil {
				t.Fatal(err)
			}
			for _, r := range logRecords(t, l) {
				if r == "k=old" || r == "k=<nil>" {
					done = false
				}
			}
		}
		return done
	})
	away.start()
	waitFor(t, "the restarted follower to catch up", func() bool {
		if away.srv == nil || away.broker() == nil {
			return false
		}
		l := logOf(away)
		return l != nil && l.LogEndOffset() >= 3 && l.HighWatermark() >= 3
	})
	for off, r := range logRecords(t, logOf(away)) {
		if r != "x=1" {
			t.Fatalf("restarted follower holds %s at offset %d: the leader deleted it", r, off)
		}
	}
}

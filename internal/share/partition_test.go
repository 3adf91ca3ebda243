package share

import (
	"reflect"
	"testing"
	"time"
)

func testPartition() (*Partition, *Config) {
	cfg := Config{}.withDefaults()
	cfg.DeliveryCountLimit = 2
	return newPartition(Key{Group: "g", Partition: 3}, 0, &cfg), &cfg
}

func TestAcquireSkipsGapsAndControlBatches(t *testing.T) {
	p, _ := testPartition()
	now := time.Unix(1000, 0)
	// offsets 0-1 data, 2 compacted away, 3 a commit marker, 4-6 data
	batches := []Batch{{First: 0, Last: 1}, {First: 3, Last: 3, Control: true}, {First: 4, Last: 6}}
	got := p.Acquire("m", 100, batches, 0, now)
	want := []Acquired{{0, 1, 1}, {4, 6, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if err := p.Acknowledge("m", []AckBatch{{0, 1, []int8{AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	// 0-1 accepted and 2-3 archived: the start moves to 4
	if s, e := p.Offsets(); s != 4 || e != 7 {
		t.Fatalf("offsets %d-%d, want 4-7", s, e)
	}
	// a record limit stops inside a batch; the next acquisition continues there
	p2, _ := testPartition()
	if got := p2.Acquire("m", 2, []Batch{{First: 0, Last: 4}}, 0, now); !reflect.DeepEqual(got, []Acquired{{0, 1, 1}}) {
		t.Fatalf("limited acquire %v", got)
	}
	if got := p2.Acquire("m", 10, []Batch{{First: 0, Last: 4}}, 0, now); !reflect.DeepEqual(got, []Acquired{{2, 4, 1}}) {
		t.Fatalf("second acquire %v", got)
	}
}

func TestLockExpiryAndDeliveryLimit(t *testing.T) {
	p, cfg := testPartition()
	now := time.Unix(1000, 0)
	p.Acquire("a", 10, []Batch{{First: 0, Last: 0}}, 0, now)
	if got := p.Acquire("b", 10, nil, 0, now.Add(cfg.RecordLockDuration-time.Millisecond)); len(got) != 0 {
		t.Fatalf("acquired a locked record: %v", got)
	}
	got := p.Acquire("b", 10, nil, 0, now.Add(cfg.RecordLockDuration))
	if !reflect.DeepEqual(got, []Acquired{{0, 0, 2}}) {
		t.Fatalf("after expiry %v", got)
	}
	// the second delivery's lock expires too: the limit (2) archives it
	p.Expire(now.Add(3 * cfg.RecordLockDuration))
	if s, _ := p.Offsets(); s != 1 {
		t.Fatalf("start %d, want 1 (offset 0 archived)", s)
	}
	// a stale acknowledgement of the expired lock is refused
	if err := p.Acknowledge("b", []AckBatch{{0, 0, []int8{AckAccept}}}, false, now); err == nil {
		t.Fatal("acknowledged an archived record")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	p, cfg := testPartition()
	now := time.Unix(1000, 0)
	p.Acquire("m", 10, []Batch{{First: 5, Last: 9}}, 5, now)
	if err := p.Acknowledge("m", []AckBatch{{6, 6, []int8{AckAccept}}, {8, 9, []int8{AckRelease, AckReject}}}, false, now); err != nil {
		t.Fatal(err)
	}
	s := p.Snapshot()
	s.SnapshotEpoch = 7
	dec, err := DecodeSnapshotValue(EncodeSnapshotValue(s))
	if err != nil || !reflect.DeepEqual(dec, Snapshot{SnapshotEpoch: 7, LeaderEpoch: -1, StartOffset: 5, DeliveryCompleteCount: 2, Batches: dec.Batches}) {
		t.Fatalf("decode: %+v %v", dec, err)
	}
	want := []StateBatch{{5, 5, StateAvailable, 1}, {6, 6, StateAcknowledged, 1}, {7, 8, StateAvailable, 1}, {9, 9, StateArchived, 1}}
	if !reflect.DeepEqual(dec.Batches, want) {
		t.Fatalf("batches %+v, want %+v", dec.Batches, want)
	}
	q := newPartition(p.Key, 0, cfg)
	dec.Key = p.Key
	q.restore(dec)
	// after a restore, every record not acknowledged or archived is available
	if got := q.Acquire("n", 10, nil, 0, now); !reflect.DeepEqual(got, []Acquired{{5, 5, 2}, {7, 8, 2}}) {
		t.Fatalf("after restore acquired %v", got)
	}
	k, ok, err := DecodeKey(EncodeKey(p.Key))
	if err != nil || !ok || k != p.Key {
		t.Fatalf("key round trip %v %v %v", k, ok, err)
	}
}

func TestStatePartition(t *testing.T) {
	// Kafka: Utils.abs("group:topicId:partition".hashCode()) % 50, values from a JVM
	id := [16]byte{164, 50, 50, 136, 1, 194, 67, 222, 142, 206, 142, 167, 51, 217, 148, 212} // pDIyiAHCQ96Ozo6nM9mU1A
	for _, c := range []struct {
		k    Key
		want int32
	}{
		{Key{Group: "g", Partition: 0}, 49},
		{Key{Group: "orders-workers", TopicID: id, Partition: 7}, 43},
		{Key{Group: "grüße", Partition: 1}, 6},
	} {
		if got := c.k.StatePartition(50); got != c.want {
			t.Errorf("%s: partition %d, want %d", c.k.CoordinatorKey(), got, c.want)
		}
	}
}

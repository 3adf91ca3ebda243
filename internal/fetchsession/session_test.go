package fetchsession

import (
	"testing"
	"time"
)

func key(topic string, p int32) Key { return Key{Topic: topic, Partition: p} }

func reqParts(offsets map[Key]int64, keys ...Key) []RequestPartition {
	out := make([]RequestPartition, len(keys))
	for i, k := range keys {
		out[i] = RequestPartition{Key: k, PartitionState: PartitionState{FetchOffset: offsets[k], MaxBytes: 1 << 20, LogStartOffset: -1}}
	}
	return out
}

// respondAll runs Include on every partition with the given high watermark
// and reports which were included.
func respondAll(ctx *Context, hw map[Key]int64, records map[Key]bool) []Key {
	var out []Key
	for i, p := range ctx.Partitions {
		if ctx.Include(i, Result{HighWatermark: hw[p.Key], LastStableOffset: hw[p.Key], HasRecords: records[p.Key]}) {
			out = append(out, p.Key)
		}
	}
	return out
}

func TestSessionLifecycle(t *testing.T) {
	c := NewCache(Options{})
	a, b, d := key("a", 0), key("a", 1), key("b", 0)
	hw := map[Key]int64{a: 10, b: 20}
	off := map[Key]int64{}

	// Sessionless full fetch: no session.
	ctx := c.NewContext(Request{SessionID: 0, SessionEpoch: -1, Partitions: reqParts(off, a, b)})
	if got := respondAll(ctx, hw, nil); len(got) != 2 {
		t.Fatalf("sessionless fetch included %v", got)
	}
	if id := ctx.Finish(); id != 0 || c.Len() != 0 {
		t.Fatalf("sessionless fetch made session %d", id)
	}

	// Initial fetch opens a session.
	ctx = c.NewContext(Request{SessionID: 0, SessionEpoch: 0, Partitions: reqParts(off, a, b)})
	respondAll(ctx, hw, nil)
	id := ctx.Finish()
	if id <= 0 || c.Len() != 1 {
		t.Fatalf("initial fetch: session %d, %d cached", id, c.Len())
	}

	// Incremental with nothing changed: empty response.
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 1})
	if ctx.ErrorCode != 0 || !ctx.Incremental || len(ctx.Partitions) != 2 {
		t.Fatalf("incremental: %+v", ctx)
	}
	if got := respondAll(ctx, hw, nil); len(got) != 0 {
		t.Fatalf("unchanged partitions included: %v", got)
	}
	if ctx.Finish() != id {
		t.Fatal("session id changed")
	}

	// A changed high watermark or records bring a partition back.
	hw[b] = 21
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 2})
	if got := respondAll(ctx, hw, map[Key]bool{a: true}); len(got) != 2 {
		t.Fatalf("changed partitions: %v", got)
	}
	ctx.Finish()

	// Add d, update a's offset, forget b.
	off[a] = 10
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 3, Partitions: reqParts(off, a, d), Forgotten: []Key{b}})
	if len(ctx.Partitions) != 2 {
		t.Fatalf("after add/forget: %+v", ctx.Partitions)
	}
	for _, p := range ctx.Partitions {
		if p.Key == b {
			t.Fatal("forgotten partition still fetched")
		}
		if p.Key == a && p.FetchOffset != 10 {
			t.Fatalf("offset of a not updated: %d", p.FetchOffset)
		}
	}
	// d is new (never responded): included; a unchanged: not.
	if got := respondAll(ctx, hw, nil); len(got) != 1 || got[0] != d {
		t.Fatalf("included %v", got)
	}
	ctx.Finish()

	// Wrong epoch, unknown id.
	if ctx := c.NewContext(Request{SessionID: id, SessionEpoch: 3}); ctx.ErrorCode != ErrInvalidFetchSessionEpoch {
		t.Fatalf("stale epoch: %d", ctx.ErrorCode)
	}
	if ctx := c.NewContext(Request{SessionID: id + 1, SessionEpoch: 4}); ctx.ErrorCode != ErrFetchSessionIDNotFound {
		t.Fatalf("unknown id: %d", ctx.ErrorCode)
	}
	if ctx := c.NewContext(Request{SessionID: id, SessionEpoch: 4, UsesTopicIDs: true}); ctx.ErrorCode != ErrFetchSessionTopicIDError {
		t.Fatalf("topic id switch: %d", ctx.ErrorCode)
	}
	// The id switch closed the session.
	if c.Len() != 0 {
		t.Fatal("session kept after topic-id error")
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	c := NewCache(Options{})
	a := key("a", 0)
	ctx := c.NewContext(Request{SessionEpoch: 0, Partitions: reqParts(nil, a)})
	ctx.Include(0, Result{ErrorCode: 1, HighWatermark: -1})
	id := ctx.Finish()
	for epoch := int32(1); epoch <= 2; epoch++ {
		ctx = c.NewContext(Request{SessionID: id, SessionEpoch: epoch})
		if !ctx.Include(0, Result{ErrorCode: 1, HighWatermark: -1}) {
			t.Fatalf("epoch %d: erroring partition left out", epoch)
		}
		ctx.Finish()
	}
}

func TestFinalEpochClosesSession(t *testing.T) {
	c := NewCache(Options{})
	ctx := c.NewContext(Request{SessionEpoch: 0, Partitions: reqParts(nil, key("a", 0))})
	id := ctx.Finish()
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: -1, Partitions: reqParts(nil, key("a", 0))})
	if ctx.Incremental || ctx.Finish() != 0 || c.Len() != 0 {
		t.Fatal("final epoch did not close the session")
	}
	// Epoch 0 with an old id replaces it.
	ctx = c.NewContext(Request{SessionEpoch: 0, Partitions: reqParts(nil, key("a", 0))})
	id = ctx.Finish()
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 0, Partitions: reqParts(nil, key("a", 0))})
	id2 := ctx.Finish()
	if c.Len() != 1 || id2 == id {
		t.Fatalf("re-initialised session: %d sessions, ids %d %d", c.Len(), id, id2)
	}
}

func TestRotationAfterResponse(t *testing.T) {
	c := NewCache(Options{})
	a, b, d := key("t", 0), key("t", 1), key("t", 2)
	ctx := c.NewContext(Request{SessionEpoch: 0, Partitions: reqParts(nil, a, b, d)})
	respondAll(ctx, nil, nil)
	id := ctx.Finish()
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 1})
	respondAll(ctx, nil, map[Key]bool{a: true})
	ctx.Finish()
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 2})
	order := []Key{ctx.Partitions[0].Key, ctx.Partitions[1].Key, ctx.Partitions[2].Key}
	if order[0] != b || order[1] != d || order[2] != a {
		t.Fatalf("order after a returned data: %v", order)
	}
}

func TestEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCache(Options{Slots: 2, EvictionMs: 1000, Now: func() time.Time { return now }})
	open := func(n int) int32 {
		keys := make([]Key, n)
		for i := range keys {
			keys[i] = key("t", int32(i))
		}
		ctx := c.NewContext(Request{SessionEpoch: 0, Partitions: reqParts(nil, keys...)})
		return ctx.Finish()
	}
	s1 := open(3)
	now = now.Add(10 * time.Millisecond)
	s2 := open(3)
	// Full, nothing stale, new session not larger: refused.
	if id := open(3); id != 0 || c.Len() != 2 {
		t.Fatalf("session created past the limit: %d", id)
	}
	// A larger session evicts a smaller one (the least recently used of equals).
	s3 := open(5)
	if s3 == 0 || c.get(s1) != nil || c.get(s2) == nil {
		t.Fatalf("size eviction: s3=%d s1 kept=%v", s3, c.get(s1) != nil)
	}
	// Once idle long enough any new session may evict.
	now = now.Add(2 * time.Second)
	c.get(s3) // s3 used just now
	if s4 := open(1); s4 == 0 || c.get(s2) != nil || c.get(s3) == nil {
		t.Fatalf("stale eviction failed: s4=%d", s4)
	}
	// Disabled cache.
	off := NewCache(Options{Slots: -1})
	if id := off.NewContext(Request{SessionEpoch: 0, Partitions: reqParts(nil, key("a", 0))}).Finish(); id != 0 {
		t.Fatal("disabled cache created a session")
	}
}

// Many clients at once on a small cache: no deadlock, no race, sessions
// never exceed the slots, and every context answers.
func TestConcurrentSessions(t *testing.T) {
	c := NewCache(Options{Slots: 4, EvictionMs: 1})
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			var id, epoch int32
			for i := 0; i < 300; i++ {
				r := Request{SessionID: id, SessionEpoch: epoch, Partitions: reqParts(nil, key("t", int32(g)), key("u", int32(i%3)))}
				if i%2 == 1 {
					r.UsesTopicIDs = true // mismatches close sessions now and then
				}
				ctx := c.NewContext(r)
				if ctx.ErrorCode != 0 {
					id, epoch = 0, 0
					continue
				}
				for j := range ctx.Partitions {
					ctx.Include(j, Result{HighWatermark: int64(i)})
				}
				id = ctx.Finish()
				epoch = 0
				if id != 0 {
					if ctx.Incremental {
						epoch = r.SessionEpoch + 1
					} else {
						epoch = 1
					}
				}
			}
		}(g)
	}
	deadline := time.After(20 * time.Second)
	for g := 0; g < 8; g++ {
		select {
		case <-done:
		case <-deadline:
			t.Fatal("session cache deadlocked")
		}
	}
	if n := c.Len(); n > 4 {
		t.Fatalf("%d sessions in 4 slots", n)
	}
}

// A change of the last stable offset alone (a transaction ended, the high
// watermark did not move) puts the partition in an incremental response.
func TestIncrementalReportsLastStableOffsetChange(t *testing.T) {
	c := NewCache(Options{})
	a := key("a", 0)
	ctx := c.NewContext(Request{SessionID: 0, SessionEpoch: 0, Partitions: reqParts(map[Key]int64{}, a)})
	ctx.Include(0, Result{HighWatermark: 10, LastStableOffset: 4})
	id := ctx.Finish()
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 1})
	if ctx.Include(0, Result{HighWatermark: 10, LastStableOffset: 4}) {
		t.Fatal("unchanged partition included")
	}
	ctx.Finish()
	ctx = c.NewContext(Request{SessionID: id, SessionEpoch: 2})
	if !ctx.Include(0, Result{HighWatermark: 10, LastStableOffset: 10}) {
		t.Fatal("LSO change not reported")
	}
	ctx.Finish()
}

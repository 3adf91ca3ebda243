package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
)

func mustInit(t *testing.T, c *Coordinator, id string) (int64, int16) {
	t.Helper()
	pid, epoch, code := c.InitProducerID(id, 10000, -1, -1)
	if code != 0 {
		t.Fatalf("InitProducerID(%s): %v", id, kerr.ErrorForCode(code))
	}
	return pid, epoch
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestInitProducerIDValidation(t *testing.T) {
	e := newEnv(t)
	_, _, code := e.c.InitProducerID("", 1000, -1, -1)
	wantCode(t, "empty id", code, kerr.InvalidRequest)
	_, _, code = e.c.InitProducerID("a", 60001, -1, -1)
	wantCode(t, "too long", code, kerr.InvalidTransactionTimeout)
	_, _, code = e.c.InitProducerID("a", 0, -1, -1)
	wantCode(t, "zero", code, kerr.InvalidTransactionTimeout)
	_, _, code = e.c.InitProducerID("a", 1000, 5, -1)
	wantCode(t, "half expected", code, kerr.InvalidRequest)

	pid, epoch := mustInit(t, e.c, "a")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("first init: %d/%d", pid, epoch)
	}
	pid2, epoch2 := mustInit(t, e.c, "a")
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init: %d/%d", pid2, epoch2)
	}
	// The old producer is fenced everywhere.
	wantCode(t, "add with old epoch", e.c.AddPartitions("a", pid, 0, []TopicPartition{{"t", 0}}), kerr.ProducerFenced)
	wantCode(t, "end with old epoch", e.c.EndTxn("a", pid, 0, true), kerr.ProducerFenced)
	wantCode(t, "end with other pid", e.c.EndTxn("a", 77, 1, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "unknown id", e.c.EndTxn("nope", 77, 1, true), kerr.InvalidProducerIDMapping)
}

func TestCommitAndAbortWriteMarkers(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	wantCode(t, "end empty", e.c.EndTxn("tx", pid, epoch, true), kerr.InvalidTxnState)
	parts := []TopicPartition{{"b", 1}, {"a", 0}}
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, parts), nil)
	wantCode(t, "add again", e.c.AddPartitions("tx", pid, epoch, parts[:1]), nil)
	wantCode(t, "add more", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"__consumer_offsets", 3}}), nil)
	wantCode(t, "verify", e.c.Verify("tx", pid, epoch, TopicPartition{"__consumer_offsets", 3}), nil)
	wantCode(t, "verify not added", e.c.Verify("tx", pid, epoch, TopicPartition{"__consumer_offsets", 4}), kerr.InvalidTxnState)
	d, code := e.c.Describe("tx")
	if code != 0 || d.State != Ongoing || len(d.Partitions) != 3 || d.StartMs != e.clock.Now().UnixMilli() {
		t.Fatalf("describe ongoing: %+v %d", d, code)
	}
	wantCode(t, "commit", e.c.EndTxn("tx", pid, epoch, true), nil)
	ms := e.parts.take()
	if len(ms) != 3 {
		t.Fatalf("markers: %+v", ms)
	}
	for _, m := range ms {
		if m.m.Type != batch.ControlCommit || m.m.ProducerID != pid || m.m.ProducerEpoch != epoch {
			t.Fatalf("marker %+v", m)
		}
	}
	if d, _ := e.c.Describe("tx"); d.State != CompleteCommit || len(d.Partitions) != 0 {
		t.Fatalf("after commit: %+v", d)
	}
	wantCode(t, "commit retry", e.c.EndTxn("tx", pid, epoch, true), nil)
	wantCode(t, "abort after commit", e.c.EndTxn("tx", pid, epoch, false), kerr.InvalidTxnState)
	wantCode(t, "verify after commit", e.c.Verify("tx", pid, epoch, TopicPartition{"__consumer_offsets", 3}), kerr.InvalidTxnState)

	// Next transaction, aborted.
	wantCode(t, "add 2", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), nil)
	wantCode(t, "abort", e.c.EndTxn("tx", pid, epoch, false), nil)
	ms = e.parts.take()
	if len(ms) != 1 || ms[0].m.Type != batch.ControlAbort || ms[0].tp != (TopicPartition{"a", 0}) {
		t.Fatalf("abort markers: %+v", ms)
	}
	wantCode(t, "abort retry", e.c.EndTxn("tx", pid, epoch, false), nil)
	wantCode(t, "commit after abort", e.c.EndTxn("tx", pid, epoch, true), kerr.InvalidTxnState)
}

func TestInitFencesOngoingTransaction(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), nil)

	_, _, code := e.c.InitProducerID("tx", 10000, -1, -1)
	wantCode(t, "init while ongoing", code, kerr.ConcurrentTransactions)
	ms := e.parts.take()
	if len(ms) != 1 || ms[0].m.Type != batch.ControlAbort || ms[0].m.ProducerEpoch != epoch+1 {
		t.Fatalf("fence markers: %+v", ms)
	}
	if d, _ := e.c.Describe("tx"); d.State != CompleteAbort || d.ProducerEpoch != epoch+1 {
		t.Fatalf("after fence: %+v", d)
	}
	// The zombie cannot end its transaction.
	wantCode(t, "zombie commit", e.c.EndTxn("tx", pid, epoch, true), kerr.ProducerFenced)
	pid2, epoch2 := mustInit(t, e.c, "tx")
	if pid2 != pid || epoch2 != epoch+2 {
		t.Fatalf("retry: %d/%d", pid2, epoch2)
	}
}

func TestKIP360Recovery(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	// Resume with the current id and epoch: bumped.
	p, ep, code := e.c.InitProducerID("tx", 10000, pid, epoch)
	if code != 0 || p != pid || ep != epoch+1 {
		t.Fatalf("resume: %d/%d %v", p, ep, kerr.ErrorForCode(code))
	}
	// A retry of the same request (answer lost): same epoch again.
	p, ep, code = e.c.InitProducerID("tx", 10000, pid, epoch)
	if code != 0 || p != pid || ep != epoch+1 {
		t.Fatalf("retry: %d/%d %v", p, ep, kerr.ErrorForCode(code))
	}
	// A stale epoch is fenced, and so is another producer id.
	_, _, code = e.c.InitProducerID("tx", 10000, pid, epoch+5)
	wantCode(t, "stale", code, kerr.ProducerFenced)
	_, _, code = e.c.InitProducerID("tx", 10000, pid+100, 3)
	wantCode(t, "other pid", code, kerr.ProducerFenced)
	// A new id given an expected pair just starts at epoch 0.
	p, ep, code = e.c.InitProducerID("new", 10000, 42, 7)
	if code != 0 || ep != 0 || p == 42 {
		t.Fatalf("new: %d/%d %v", p, ep, kerr.ErrorForCode(code))
	}
}

func TestEpochExhaustionRotatesProducerID(t *testing.T) {
	e := newEnv(t)
	pid, _ := mustInit(t, e.c, "tx")
	m, _ := e.c.lookup("tx")
	m.mu.Lock()
	m.producerEpoch = 32766
	m.mu.Unlock()
	p, ep, code := e.c.InitProducerID("tx", 10000, pid, 32766)
	if code != 0 || p == pid || ep != 0 {
		t.Fatalf("rotation: %d/%d %v", p, ep, kerr.ErrorForCode(code))
	}
	// The producer's retry (answer lost) gets the same answer.
	p2, ep2, code := e.c.InitProducerID("tx", 10000, pid, 32766)
	if code != 0 || p2 != p || ep2 != 0 {
		t.Fatalf("retry after rotation: %d/%d %v", p2, ep2, kerr.ErrorForCode(code))
	}
	// A plain init bumps the new id.
	if p3, ep3 := mustInit(t, e.c, "tx"); p3 != p || ep3 != 1 {
		t.Fatalf("after rotation: %d/%d", p3, ep3)
	}
}

func TestRestartCompletesPreparedTransactions(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "commit-me")
	pid2, epoch2 := mustInit(t, e.c, "keep-ongoing")
	tp := TopicPartition{"a", 0}
	wantCode(t, "add", e.c.AddPartitions("commit-me", pid, epoch, []TopicPartition{tp}), nil)
	wantCode(t, "add 2", e.c.AddPartitions("keep-ongoing", pid2, epoch2, []TopicPartition{{"b", 2}}), nil)
	e.parts.setFail(tp, errTest)
	wantCode(t, "commit (markers fail)", e.c.EndTxn("commit-me", pid, epoch, true), nil)
	if d, _ := e.c.Describe("commit-me"); d.State != PrepareCommit {
		t.Fatalf("before restart: %+v", d)
	}
	wantCode(t, "commit while completing", e.c.EndTxn("commit-me", pid, epoch, true), kerr.ConcurrentTransactions)
	_, _, code := e.c.InitProducerID("commit-me", 1000, -1, -1)
	wantCode(t, "init while completing", code, kerr.ConcurrentTransactions)
	e.c.Close()

	e.parts.setFail(tp, nil)
	c := e.start(t)
	ms := e.parts.take()
	if len(ms) != 1 || ms[0].tp != tp || ms[0].m.Type != batch.ControlCommit || ms[0].m.ProducerID != pid {
		t.Fatalf("markers after restart: %+v", ms)
	}
	if d, _ := c.Describe("commit-me"); d.State != CompleteCommit || d.ProducerID != pid || d.ProducerEpoch != epoch {
		t.Fatalf("after restart: %+v", d)
	}
	d, _ := c.Describe("keep-ongoing")
	if d.State != Ongoing || len(d.Partitions) != 1 || d.Partitions[0] != (TopicPartition{"b", 2}) || d.TimeoutMs != 10000 {
		t.Fatalf("ongoing after restart: %+v", d)
	}
	// The loaded producer carries on.
	wantCode(t, "commit after restart", c.EndTxn("keep-ongoing", pid2, epoch2, true), nil)
	// New producer ids never collide with loaded ones (the allocator is durable).
	if p, _ := mustInit(t, c, "fresh"); p == pid || p == pid2 {
		t.Fatal("producer id reused")
	}
}

func TestSweepRetriesFailedMarkers(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	a, b := TopicPartition{"a", 0}, TopicPartition{"b", 0}
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{a, b}), nil)
	e.parts.setFail(b, errTest)
	wantCode(t, "abort", e.c.EndTxn("tx", pid, epoch, false), nil)
	if ms := e.parts.take(); len(ms) != 1 || ms[0].tp != a {
		t.Fatalf("first try: %+v", ms)
	}
	e.c.AbortTimedOut()
	if ms := e.parts.take(); len(ms) != 0 {
		t.Fatalf("still failing: %+v", ms)
	}
	e.parts.setFail(b, nil)
	e.c.AbortTimedOut()
	if ms := e.parts.take(); len(ms) != 1 || ms[0].tp != b {
		t.Fatalf("retry: %+v", ms)
	}
	if d, _ := e.c.Describe("tx"); d.State != CompleteAbort {
		t.Fatalf("state %v", d.State)
	}
	// A partition that is gone does not block completion.
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{a}), nil)
	e.parts.setFail(a, ErrPartitionGone)
	wantCode(t, "commit", e.c.EndTxn("tx", pid, epoch, true), nil)
	if d, _ := e.c.Describe("tx"); d.State != CompleteCommit {
		t.Fatalf("state %v", d.State)
	}
}

func TestTimeoutAbortsAndFences(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), nil)
	e.clock.Advance(10 * time.Second) // exactly the timeout: not yet
	e.c.AbortTimedOut()
	if d, _ := e.c.Describe("tx"); d.State != Ongoing {
		t.Fatalf("aborted too early: %v", d.State)
	}
	e.clock.Advance(time.Millisecond)
	e.c.AbortTimedOut()
	d, _ := e.c.Describe("tx")
	if d.State != CompleteAbort || d.ProducerEpoch != epoch+1 {
		t.Fatalf("after timeout: %+v", d)
	}
	if ms := e.parts.take(); len(ms) != 1 || ms[0].m.ProducerEpoch != epoch+1 || ms[0].m.Type != batch.ControlAbort {
		t.Fatalf("markers: %+v", ms)
	}
	wantCode(t, "zombie add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), kerr.ProducerFenced)
	// Resuming with the aborted epoch (KIP-588) is fenced, as in Kafka:
	// the fence forgot the previous epoch.
	_, _, code := e.c.InitProducerID("tx", 10000, pid, epoch)
	wantCode(t, "resume fenced", code, kerr.ProducerFenced)
}

func TestExpireIDs(t *testing.T) {
	e := newEnv(t)
	mustInit(t, e.c, "idle")
	pid, epoch := mustInit(t, e.c, "busy")
	wantCode(t, "add", e.c.AddPartitions("busy", pid, epoch, []TopicPartition{{"a", 0}}), nil)
	e.clock.Advance(time.Hour)
	e.c.ExpireIDs()
	if _, code := e.c.Describe("idle"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("idle not expired: %v", kerr.ErrorForCode(code))
	}
	if d, code := e.c.Describe("busy"); code != 0 || d.State != Ongoing {
		t.Fatalf("ongoing expired: %+v", d)
	}
	// The tombstone survives a restart.
	e.c.Close()
	c := e.start(t)
	if _, code := c.Describe("idle"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("idle back after restart: %v", kerr.ErrorForCode(code))
	}
	if l, _ := c.List(Filter{MinDurationMs: -1}); len(l) != 1 || l[0].TransactionalID != "busy" {
		t.Fatalf("list: %+v", l)
	}
}

func TestListFilters(t *testing.T) {
	e := newEnv(t)
	pa, ea := mustInit(t, e.c, "a")
	pb, _ := mustInit(t, e.c, "b")
	wantCode(t, "add", e.c.AddPartitions("a", pa, ea, []TopicPartition{{"x", 0}}), nil)
	e.clock.Advance(5 * time.Second)
	all, _ := e.c.List(Filter{MinDurationMs: -1})
	if len(all) != 2 || all[0].TransactionalID != "a" || all[0].State != Ongoing || all[1].State != Empty {
		t.Fatalf("all: %+v", all)
	}
	if l, _ := e.c.List(Filter{States: []State{Ongoing}, MinDurationMs: -1}); len(l) != 1 || l[0].ProducerID != pa {
		t.Fatalf("ongoing: %+v", l)
	}
	if l, _ := e.c.List(Filter{ProducerIDs: []int64{pb}, MinDurationMs: -1}); len(l) != 1 || l[0].TransactionalID != "b" {
		t.Fatalf("by pid: %+v", l)
	}
	if l, _ := e.c.List(Filter{States: []State{Ongoing}, MinDurationMs: 5000}); len(l) != 0 {
		t.Fatalf("duration 5000: %+v", l)
	}
	if l, _ := e.c.List(Filter{States: []State{Ongoing}, MinDurationMs: 4999}); len(l) != 1 {
		t.Fatalf("duration 4999: %+v", l)
	}
}

func TestStorageFailureChangesNothing(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	e.store.failing = true
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), kerr.CoordinatorNotAvailable)
	_, _, code := e.c.InitProducerID("tx", 1000, -1, -1)
	wantCode(t, "init", code, kerr.CoordinatorNotAvailable)
	if d, _ := e.c.Describe("tx"); d.State != Empty || d.ProducerEpoch != epoch {
		t.Fatalf("changed: %+v", d)
	}
	e.store.failing = false
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"a", 0}}), nil)
}

func TestLoadingAndClosed(t *testing.T) {
	c := New(Options{IDs: &counterIDs{}, NoBackground: true})
	if _, _, code := c.InitProducerID("x", 1000, -1, -1); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("loading: %v", kerr.ErrorForCode(code))
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	loadAll(t, c)
	c.Close()
	if _, _, code := c.InitProducerID("x", 1000, -1, -1); code != kerr.NotCoordinator.Code {
		t.Fatalf("closed: %v", kerr.ErrorForCode(code))
	}
}

func TestRecordFormat(t *testing.T) {
	s := snapshot{producerID: 7, producerEpoch: 3, timeoutMs: 60000, state: Ongoing, startMs: 10, updateMs: 20,
		partitions: map[TopicPartition]struct{}{{"b", 1}: {}, {"a", 2}: {}, {"a", 0}: {}}}
	key, value := encodeKey("my-id"), encodeValue(s, 0)
	// Kafka's layout: key = version 0, string; value = version 0, fields.
	if key[0] != 0 || key[1] != 0 || string(key[4:]) != "my-id" {
		t.Fatalf("key %x", key)
	}
	id, got, del, ok, err := decodeRecord(key, value)
	if err != nil || !ok || del || id != "my-id" || got.producerID != 7 || got.producerEpoch != 3 ||
		got.state != Ongoing || len(got.partitions) != 3 || got.startMs != 10 || got.updateMs != 20 {
		t.Fatalf("round trip: %q %+v %v %v %v", id, got, del, ok, err)
	}
	// Empty carries a null partition list.
	e := encodeValue(snapshot{producerID: 1, state: Empty}, 0)
	// version(2) pid(8) epoch(2) timeout(4) status(1) then array length -1
	if n := int32(uint32(e[17])<<24 | uint32(e[18])<<16 | uint32(e[19])<<8 | uint32(e[20])); n != -1 {
		t.Fatalf("empty partitions encoded as %d", n)
	}
	if _, _, _, _, err := decodeRecord(key, []byte{0, 0, 1}); err == nil {
		t.Fatal("truncated value accepted")
	}
	if PartitionFor("my-id", 50) != PartitionFor("my-id", 50) || PartitionFor("", 50) != 0 {
		t.Fatal("partition")
	}
}

// verifyProduce is BeginProduce for a check alone: an admitted append is
// released at once.
func verifyProduce(c *Coordinator, pid int64, epoch int16, tp TopicPartition) int16 {
	release, code := c.BeginProduce(pid, epoch, tp)
	if release != nil {
		release()
	}
	return code
}

func TestVerifyProduce(t *testing.T) {
	e := newEnv(t)
	pid, epoch := mustInit(t, e.c, "tx")
	tp := TopicPartition{"a", 0}
	wantCode(t, "no transaction", verifyProduce(e.c, pid, epoch, tp), kerr.InvalidTxnState)
	wantCode(t, "unknown pid", verifyProduce(e.c, pid+1, 0, tp), kerr.InvalidProducerIDMapping)
	wantCode(t, "add", e.c.AddPartitions("tx", pid, epoch, []TopicPartition{tp}), nil)
	wantCode(t, "added", verifyProduce(e.c, pid, epoch, tp), nil)
	wantCode(t, "not added", verifyProduce(e.c, pid, epoch, TopicPartition{"a", 1}), kerr.InvalidTxnState)
	wantCode(t, "stale epoch", verifyProduce(e.c, pid, epoch-1, tp), kerr.InvalidProducerEpoch)
	// After a restart the producer id is known again.
	e.c.Close()
	c := e.start(t)
	wantCode(t, "after restart", verifyProduce(c, pid, epoch, tp), nil)
	// A rotated producer id maps to the transactional id; the old one no longer does.
	wantCode(t, "commit", c.EndTxn("tx", pid, epoch, true), nil)
	m, _ := c.lookup("tx")
	m.mu.Lock()
	m.producerEpoch = 32766
	m.mu.Unlock()
	p2, e2 := mustInit(t, c, "tx")
	wantCode(t, "add new", c.AddPartitions("tx", p2, e2, []TopicPartition{tp}), nil)
	wantCode(t, "new pid", verifyProduce(c, p2, e2, tp), nil)
	wantCode(t, "old pid", verifyProduce(c, pid, 32766, tp), kerr.InvalidProducerIDMapping)
}

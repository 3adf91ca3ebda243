package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
)

func TestTV2ImplicitAddAndEpochBump(t *testing.T) {
	e := newEnv(t)
	e.c.tv = func() int16 { return 2 }
	pid, epoch, code := e.c.InitProducerID("tx", 60000, -1, -1)
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	tpA, tpB := TopicPartition{"a", 0}, TopicPartition{"b", 1}
	for _, tp := range []TopicPartition{tpA, tpB, tpA} {
		release, code := e.c.BeginProduceAdd(pid, epoch, tp)
		if code != 0 {
			t.Fatalf("implicit add of %v: %v", tp, kerr.ErrorForCode(code))
		}
		release()
	}
	// The classic check agrees that both partitions are in the transaction.
	if code := e.c.Verify("tx", pid, epoch, tpB); code != 0 {
		t.Fatalf("verify after implicit add: %v", kerr.ErrorForCode(code))
	}
	np, ne, code := e.c.EndTxnV2("tx", pid, epoch, true)
	if code != 0 || np != pid || ne != epoch+1 {
		t.Fatalf("EndTxnV2 = %d/%d %v, want %d/%d", np, ne, kerr.ErrorForCode(code), pid, epoch+1)
	}
	mk := e.parts.take()
	if len(mk) != 2 || mk[0].m.ProducerEpoch != epoch+1 || mk[0].m.Type != batch.ControlCommit {
		t.Fatalf("markers %+v", mk)
	}
	// A retry with the old epoch gets the same answer; an abort retry does not.
	if rp, re, code := e.c.EndTxnV2("tx", pid, epoch, true); code != 0 || rp != pid || re != epoch+1 {
		t.Fatalf("retry = %d/%d %v", rp, re, kerr.ErrorForCode(code))
	}
	if _, _, code := e.c.EndTxnV2("tx", pid, epoch, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("contradicting retry: %v", kerr.ErrorForCode(code))
	}
	// The old epoch is fenced for produce, and a commit with nothing added is refused.
	if _, code := e.c.BeginProduceAdd(pid, epoch, tpA); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("produce at the old epoch: %v", kerr.ErrorForCode(code))
	}
	if _, _, code := e.c.EndTxnV2("tx", pid, ne, true); code != kerr.InvalidTxnState.Code {
		t.Fatalf("empty commit: %v", kerr.ErrorForCode(code))
	}
	// An empty abort succeeds and bumps the epoch, writing no marker.
	ap, ae, code := e.c.EndTxnV2("tx", pid, ne, false)
	if code != 0 || ap != pid || ae != ne+1 || len(e.parts.take()) != 0 {
		t.Fatalf("empty abort = %d/%d %v", ap, ae, kerr.ErrorForCode(code))
	}
	if _, _, code := e.c.EndTxnV2("tx", pid, ne-1, false); code != kerr.ProducerFenced.Code {
		t.Fatalf("two epochs old: %v", kerr.ErrorForCode(code))
	}

	// The state (v1 records with ClientTransactionVersion 2) survives a restart.
	release, code := e.c.BeginProduceAdd(pid, ae, tpB)
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	release()
	c2 := e.start(t)
	release, code = c2.BeginProduceAdd(pid, ae, tpA)
	if code != 0 {
		t.Fatalf("after restart: %v", kerr.ErrorForCode(code))
	}
	release()
	if rp, re, code := c2.EndTxnV2("tx", pid, ae, false); code != 0 || rp != pid || re != ae+1 {
		t.Fatalf("abort after restart = %d/%d %v", rp, re, kerr.ErrorForCode(code))
	}
	if mk := e.parts.take(); len(mk) != 2 || mk[0].m.Type != batch.ControlAbort || mk[0].m.ProducerEpoch != ae+1 {
		t.Fatalf("abort markers after restart %+v", mk)
	}
}

func TestTV2EpochOverflow(t *testing.T) {
	e := newEnv(t)
	pid, epoch, code := e.c.InitProducerID("tx", 60000, -1, -1)
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	_ = epoch
	m, _ := e.c.lookup("tx")
	m.mu.Lock()
	m.producerEpoch = maxEpoch - 1
	m.mu.Unlock()
	release, code := e.c.BeginProduceAdd(pid, maxEpoch-1, TopicPartition{"a", 0})
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	release()
	np, ne, code := e.c.EndTxnV2("tx", pid, maxEpoch-1, true)
	if code != 0 || np == pid || ne != 0 {
		t.Fatalf("EndTxnV2 at the last epoch = %d/%d %v", np, ne, kerr.ErrorForCode(code))
	}
	if mk := e.parts.take(); len(mk) != 1 || mk[0].m.ProducerID != pid || mk[0].m.ProducerEpoch != maxEpoch {
		t.Fatalf("markers %+v", mk)
	}
	// The retry with the old id gets the new one; the new id works.
	if rp, re, code := e.c.EndTxnV2("tx", pid, maxEpoch-1, true); code != 0 || rp != np || re != 0 {
		t.Fatalf("overflow retry = %d/%d %v", rp, re, kerr.ErrorForCode(code))
	}
	release, code = e.c.BeginProduceAdd(np, 0, TopicPartition{"a", 0})
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	release()
	if _, code := e.c.BeginProduceAdd(pid, maxEpoch-1, TopicPartition{"a", 0}); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("old id: %v", kerr.ErrorForCode(code))
	}
}

// Concurrent implicit adds (a producer's produce requests to several
// partitions in flight at once) all join the transaction, and the end
// writes a marker to each.
func TestTV2ConcurrentImplicitAdds(t *testing.T) {
	e := newEnv(t)
	pid, epoch, code := e.c.InitProducerID("tx", 60000, -1, -1)
	if code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	const n = 8
	errs := make(chan int16, n)
	for i := 0; i < n; i++ {
		go func(p int32) {
			release, code := e.c.BeginProduceAdd(pid, epoch, TopicPartition{"t", p})
			if code == 0 {
				release()
			}
			errs <- code
		}(int32(i))
	}
	for i := 0; i < n; i++ {
		if code := <-errs; code != 0 {
			t.Fatalf("concurrent add: %v", kerr.ErrorForCode(code))
		}
	}
	if _, _, code := e.c.EndTxnV2("tx", pid, epoch, true); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if mk := e.parts.take(); len(mk) != n {
		t.Fatalf("%d markers, want %d", len(mk), n)
	}
}

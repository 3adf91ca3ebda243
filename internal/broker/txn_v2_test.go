package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transaction version 2 with raw requests: TxnOffsetCommit v5 adds the
// group's partition itself (no AddOffsetsToTxn), EndTxn v5 bumps the epoch
// and answers with it, a retry at the old epoch gets the same answer, the
// old epoch is fenced, and an abort with nothing added succeeds.
func TestTxnV2OffsetCommitAndEndTxn(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: txnProps()})
	dpTopic(t, tb, "in", 1, nil)
	x := &txnRaw{t: t, tb: tb, id: "tv2", tv2: true}
	x.init()
	pid, epoch := x.pid, x.epoch

	if code := x.commitOffset("g", "in", 0, 42); code != 0 {
		t.Fatalf("TxnOffsetCommit v5 without AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
	}
	if _, code := fetchOffset(t, tb, "g", "in", 0, true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("pending offset, require_stable: %v", kerr.ErrorForCode(code))
	}
	if code := x.end(true); code != 0 || x.pid != pid || x.epoch != epoch+1 {
		t.Fatalf("EndTxn v5 = %d/%d %v", x.pid, x.epoch, kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 0, true); code != 0 || off != 42 {
		t.Fatalf("committed offset %d %v", off, kerr.ErrorForCode(code))
	}

	// A retry at the old epoch (the answer was lost) gets the same answer.
	retry := &txnRaw{t: t, tb: tb, id: "tv2", tv2: true, pid: pid, epoch: epoch}
	if code := retry.end(true); code != 0 || retry.epoch != epoch+1 {
		t.Fatalf("EndTxn retry = %d %v", retry.epoch, kerr.ErrorForCode(code))
	}
	// The old epoch is fenced.
	stale := &txnRaw{t: t, tb: tb, id: "tv2", tv2: true, pid: pid, epoch: epoch}
	if code := stale.commitOffset("g", "in", 0, 50); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TxnOffsetCommit at the old epoch: %v", kerr.ErrorForCode(code))
	}
	// A commit with nothing in the transaction is refused; an abort bumps.
	if code := x.end(true); code != kerr.InvalidTxnState.Code {
		t.Fatalf("empty commit: %v", kerr.ErrorForCode(code))
	}
	if code := x.end(false); code != 0 || x.epoch != epoch+2 {
		t.Fatalf("empty abort = %d %v", x.epoch, kerr.ErrorForCode(code))
	}
	// An aborted offset commit is dropped.
	if code := x.commitOffset("g", "in", 0, 60); code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	if code := x.end(false); code != 0 || x.epoch != epoch+3 {
		t.Fatalf("abort = %d %v", x.epoch, kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(t, tb, "g", "in", 0, true); code != 0 || off != 42 {
		t.Fatalf("offset after abort %d %v", off, kerr.ErrorForCode(code))
	}
	d, err := tb.admin().DescribeTransactions(dpCtx(t, 10*time.Second), "tv2")
	if err != nil || d["tv2"].ProducerEpoch != epoch+3 || d["tv2"].State != "CompleteAbort" {
		t.Fatalf("describe: %v %+v", err, d)
	}
	// After a restart the transaction is still known as a version 2 one
	// (__transaction_state value v1, ClientTransactionVersion 2): a retry
	// of the last abort at its old epoch still gets the same answer.
	tb.restart()
	waitFor(t, "EndTxn retry after restart", func() bool {
		r := &txnRaw{t: t, tb: tb, id: "tv2", tv2: true, pid: pid, epoch: epoch + 2}
		switch code := r.end(false); {
		case code == kerr.CoordinatorLoadInProgress.Code || code == kerr.NotCoordinator.Code:
			return false
		case code != 0 || r.epoch != epoch+3:
			t.Fatalf("EndTxn retry after restart = %d %v", r.epoch, kerr.ErrorForCode(code))
		}
		return true
	})
}

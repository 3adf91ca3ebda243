package compact

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/producer"
)

// A marker that is its producer's last entry, after it moved the producer
// to a new epoch (a coordinator's abort on timeout, here of a transaction
// that wrote nothing to this partition, or whose data retention or
// compaction removed), is never removed: it is what fences the producer's
// old epoch, also after a rebuild of the producer state from the log
// (Kafka's cleaner keeps it: RETAIN_EMPTY).
func TestProducerLastMarkerKept(t *testing.T) {
	e := newEnv(t)
	e.close()
	e.guards = true
	e.open()
	e.tcfg.DeleteRetentionMs = 1000
	l := e.log("txn")
	const pid = 7
	e.append(l, txnRec(t, e, pid, 0, true, "k", "X")) // 0, epoch 0, committed
	e.marker(l, pid, batch.ControlCommit)             // 1
	e.append(l, txnRec(t, e, -1, 0, false, "k", "Y")) // 2 supersedes it
	m := batch.NewMarkerBatch(batch.Marker{ProducerID: pid, ProducerEpoch: 1, Type: batch.ControlAbort,
		Timestamp: e.clock.Now().UnixMilli()})
	if _, err := l.Append(m, log.AppendOptions{AllowControl: true, Now: e.clock.Now()}); err != nil { // 3
		t.Fatal(err)
	}
	e.append(l, txnRec(t, e, -1, 0, false, "k", "v")) // 4
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := e.c.CleanNow("txn", 0); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(1100 * time.Millisecond)
	}
	data, markers := txnView(t, l)
	if !eqStrings(data, []string{"k=v@4"}) {
		t.Fatalf("data %v", data)
	}
	if _, ok := markers[3]; !ok {
		t.Fatalf("the producer's last marker (its only record of epoch 1) was removed: markers %v", markers)
	}
	s := producer.NewState()
	if err := s.Rebuild(e.fs, l, e.clock.Now().UnixMilli(), 0); err != nil {
		t.Fatal(err)
	}
	h, _ := batch.ParseHeader(txnRec(t, e, pid, 1, true, "k", "zombie"))
	if _, err := s.Check(h); err == nil {
		t.Fatal("epoch 0 accepted after the cleaner ran: the bumped epoch was lost")
	}
	e.close()
}

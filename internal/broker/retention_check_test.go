package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// log.retention.check.interval.ms is honoured: records past retention.ms
// stay readable until the next retention check (Kafka's default: every 5
// minutes), and a short interval deletes them at its next check.
func TestRetentionCheckInterval(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	produceOld := func(tb *testBroker) {
		t.Helper()
		adm := tb.admin()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("60000")}, "expiring"); err != nil {
			t.Fatalf("create: %v", err)
		}
		cl := tb.client()
		for i := 0; i < 3; i++ {
			r := &kgo.Record{Topic: "expiring", Value: []byte("v"), Timestamp: old}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	consumeAll := func(tb *testBroker) int {
		t.Helper()
		cl := tb.client(kgo.ConsumeTopics("expiring"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n := 0
		for n < 3 {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				break
			}
			n += fs.NumRecords()
		}
		return n
	}

	// Default interval (5 min; the first check 30 s after start): the
	// expired records survive many housekeeping passes and stay readable.
	tb := startTestBroker(t, testOptions{DataDir: dir})
	produceOld(tb)
	logs := tb.broker().logs
	passes := logs.HousekeepingPasses()
	deadline := time.Now().Add(20 * time.Second)
	for logs.HousekeepingPasses() < passes+3 {
		if time.Now().After(deadline) {
			t.Fatal("housekeeping does not run")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := consumeAll(tb); n != 3 {
		t.Fatalf("read %d records past retention.ms before the retention check, want 3", n)
	}
	tb.stop()

	// A 100 ms interval: the next check deletes them (log start moves to 3).
	tb = startTestBroker(t, testOptions{DataDir: dir, Props: map[string]string{"log.retention.check.interval.ms": "100"}})
	adm := tb.admin()
	deadline = time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		starts, err := adm.ListStartOffsets(ctx, "expiring")
		cancel()
		if err == nil {
			if o, ok := starts.Lookup("expiring", 0); ok && o.Err == nil && o.Offset == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention never deleted the expired records: %+v %v", starts, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

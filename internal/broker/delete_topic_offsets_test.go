package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Deleting a topic removes every group's committed offsets for it (Kafka writes
// tombstones to __consumer_offsets): after delete and re-create with the same name,
// OffsetFetch answers -1, also after a restart (the tombstones replay). Offsets of
// other topics stay.
func TestDeleteTopicRemovesCommittedOffsets(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: groupProps()})
	createTestTopic(t, tb, "gone", 1)
	createTestTopic(t, tb, "kept", 1)
	prod := tb.client()
	produceN(t, prod, "gone", 0, 3)
	produceN(t, prod, "kept", 0, 3)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A real consumer group consumes both topics and commits 3 for each.
	cons := tb.client(kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("gone", "kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for n := 0; n < 6; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 6 records: %v", n, err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cons.Close()

	adm := tb.admin()
	fetched, err := adm.FetchOffsets(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("gone", 0); !ok || o.At != 3 {
		t.Fatalf("committed offset before delete: %+v %v", o, ok)
	}

	if r, err := adm.DeleteTopics(ctx, "gone"); err != nil || r.Error() != nil {
		t.Fatalf("delete: %v %v", err, r.Error())
	}
	createTestTopic(t, tb, "gone", 1)

	check := func(when string) {
		t.Helper()
		fetched, err := tb.admin().FetchOffsets(ctx, "grp")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if o, ok := fetched.Lookup("gone", 0); ok && o.At != -1 {
			t.Fatalf("%s: offset of the deleted topic still committed: %+v", when, o)
		}
		if o, ok := fetched.Lookup("kept", 0); !ok || o.At != 3 {
			t.Fatalf("%s: offset of the other topic: %+v %v, want 3", when, o, ok)
		}
	}
	check("after delete and re-create")
	tb.restart()
	check("after a restart")
}

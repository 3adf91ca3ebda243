package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readAll fetches partition 0 of topic from offset 0 and renders each record
// as "offset key=value" (value "<nil>" for a tombstone). It stops at the high
// watermark, or when a poll finds nothing more (compaction may have removed
// the records just below it).
func readAll(t *testing.T, tb *testBroker, topic string) []string {
	t.Helper()
	cl := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(0)},
	}), kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	end := listEnd(t, tb, topic)
	var out []string
	for next := int64(0); next < end; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("fetch: %v", err)
			}
		})
		if fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := "<nil>"
			if r.Value != nil {
				v = string(r.Value)
			}
			out = append(out, fmt.Sprintf("%d %s=%s", r.Offset, r.Key, v))
			next = r.Offset + 1
		})
	}
	return out
}

func listEnd(t *testing.T, tb *testBroker, topic string) int64 {
	t.Helper()
	ends, err := tb.admin().ListEndOffsets(dpCtx(t, 5*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, 0)
	return o.Offset
}

// The compacted-topic walkthrough end to end: two versions of user-42 and a
// tombstone for user-7, then nothing more is produced. Once segment.ms is
// lowered the idle active segment is rolled by the broker, the cleaner removes offset 0,
// keeps user-42=v2 at offset 1 and the tombstone at offset 2, and after the
// tombstone's horizon (delete.retention.ms) a further pass removes it.
func TestCompactionWalkthroughOnIdleTopic(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"log.cleaner.backoff.ms": "50"}})
	const topic = "user-profiles"
	dpTopic(t, tb, topic, 1, map[string]*string{
		"cleanup.policy":      strp("compact"),
		"delete.retention.ms": strp("1000"),
	})
	cl := tb.client(kgo.DefaultProduceTopic(topic))
	for _, kv := range []struct{ k, v string }{{"user-42", "v1"}, {"user-42", "v2"}, {"user-7", ""}} {
		r := &kgo.Record{Key: []byte(kv.k)}
		if kv.v != "" {
			r.Value = []byte(kv.v)
		}
		if err := cl.ProduceSync(dpCtx(t, 10*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	want := []string{"0 user-42=v1", "1 user-42=v2", "2 user-7=<nil>"}
	if got := readAll(t, tb, topic); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("before compaction: got %v, want %v", got, want)
	}

	// Only now let the idle segment roll (a live config change): nothing is
	// produced after this point.
	alter, err := tb.admin().AlterTopicConfigs(dpCtx(t, 5*time.Second),
		[]kadm.AlterConfig{{Name: "segment.ms", Value: strp("300")}}, topic)
	if err == nil {
		_, err = alter.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("alter segment.ms: %v", err)
	}

	poll := func(what string, want []string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var got []string
		for time.Now().Before(deadline) {
			got = readAll(t, tb, topic)
			if strings.Join(got, ",") == strings.Join(want, ",") {
				return
			}
			tb.broker().cleaner.Wake()
			time.Sleep(50 * time.Millisecond) // poll interval; the deadline bounds the wait
		}
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	poll("after compaction", []string{"1 user-42=v2", "2 user-7=<nil>"})
	if end := listEnd(t, tb, topic); end != 3 {
		t.Fatalf("end offset %d after compaction, want 3 (offsets are never renumbered)", end)
	}
	poll("after the tombstone horizon", []string{"1 user-42=v2"})
	if start, err := tb.admin().ListStartOffsets(dpCtx(t, 5*time.Second), topic); err != nil {
		t.Fatal(err)
	} else if o, _ := start.Lookup(topic, 0); o.Offset != 0 {
		t.Fatalf("log start offset %d, want 0 (compaction does not move it)", o.Offset)
	}
}

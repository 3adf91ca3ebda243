package broker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/compact"
)

// After a restart the compaction status still shows the pass made before it
// (not "never"), and says when the active segment rolls.
func TestCompactionStatusAfterRestart(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"log.cleaner.backoff.ms": "50"}})
	const topic = "profiles"
	dpTopic(t, tb, topic, 1, map[string]*string{"cleanup.policy": strp("compact"), "segment.ms": strp("200")})
	cl := tb.client(kgo.DefaultProduceTopic(topic))
	for _, v := range []string{"v1", "v2", "v3"} {
		if err := cl.ProduceSync(dpCtx(t, 10*time.Second), &kgo.Record{Key: []byte("k"), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	status := func() compact.PartitionStatus {
		rep := tb.broker().cleaner.Status(topic)
		if len(rep.Partitions) != 1 {
			t.Fatalf("status: %+v", rep)
		}
		return rep.Partitions[0]
	}
	waitFor(t, "a cleaning pass", func() bool {
		tb.broker().cleaner.Wake()
		return status().LastPassMs > 0
	})
	before := status()

	tb.restart()
	after := status()
	if after.LastPassMs != before.LastPassMs || after.Passes < 1 || after.LastPassBytesRead != before.LastPassBytesRead ||
		after.Checkpoint != before.Checkpoint {
		t.Fatalf("after restart:\n%+v\nbefore:\n%+v", after, before)
	}
	var out bytes.Buffer
	compact.WriteStatus(&out, tb.broker().cleaner.Status(topic))
	if s := out.String(); strings.Contains(s, "never") || !strings.Contains(s, "active segment") || !strings.Contains(s, "last pass ") {
		t.Fatalf("status after restart:\n%s", s)
	}
}

package replica

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// crashedLog returns partition t-0 with 5 records, reopened after a crash:
// deferred, its offsets unknown until it is recovered.
func crashedLog(t *testing.T) *log.Log {
	t.Helper()
	fs := vfs.NewMemFS()
	m, err := log.OpenManager(fs, "/data", log.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Create("t", 0, log.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := l.Append(oneRecord(t), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{})
	m2, err := log.OpenManager(fs, "/data", log.ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close() })
	l2 := m2.Get("t", 0)
	if l2 == nil || l2.Loaded() || l2.OffsetsKnown() {
		t.Fatalf("after the crash: log %v, want it deferred with unknown offsets", l2)
	}
	return l2
}

// A restarted broker fenced and unfenced (leader of its partitions again)
// does not recover a partition left by a crash, nor does the high-watermark
// checkpoint; its first reader does, and sees the recovered end.
func TestLeadershipDoesNotRecoverDeferredLog(t *testing.T) {
	l := crashedLog(t)
	m := NewManager(1)
	m.SetCheckpoint(log.OffsetsOf(map[log.TopicPartition]int64{{Topic: "t", Partition: 0}: 2}))
	for i, st := range []State{
		{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}},
		{Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}},
		{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: []int32{1}, ISR: []int32{1}},
	} {
		if _, err := m.Apply(l, st); err != nil {
			t.Fatal(err)
		}
		if l.Loaded() {
			t.Fatalf("state %d (%+v) loaded the log", i, st)
		}
	}
	if got := m.HighWatermarks().Map()[log.TopicPartition{Topic: "t", Partition: 0}]; got != 2 || l.Loaded() {
		t.Fatalf("HighWatermarks: %d (loaded %v), want the checkpointed 2 without loading", got, l.Loaded())
	}
	if hw := l.HighWatermark(); hw != 5 || !l.Loaded() {
		t.Fatalf("high watermark %d (loaded %v), want 5, the recovered end", hw, l.Loaded())
	}
	if got := m.HighWatermarks().Map()[log.TopicPartition{Topic: "t", Partition: 0}]; got != 5 {
		t.Fatalf("HighWatermarks after the load: %d, want 5", got)
	}
}

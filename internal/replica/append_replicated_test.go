package replica

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/log"
)

// An append whose leadership moves right after it is not acknowledged:
// the next leader may not have it (finding 15 of docs/reliability.md: a
// transaction marker so acknowledged was truncated, and its transaction
// ended the other way).
func TestAppendReplicatedLeadershipMovedAfterAppend(t *testing.T) {
	m := NewManager(1)
	l := newLog(t)
	p, err := m.Apply(l, State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { testHookAppended = nil }()
	testHookAppended = func() {
		if _, err := m.Apply(l, State{Leader: 2, LeaderEpoch: 4, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2}}); err != nil {
			t.Error(err)
		}
	}
	_, err = p.AppendReplicated(oneRecord(t), log.AppendOptions{}, 5*time.Second)
	if code := codeOf(err); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("append whose leadership moved: %v (code %d), want NOT_LEADER_OR_FOLLOWER", err, code)
	}
}

package checker

import (
	"testing"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

func (b *builder) groupPoll(proc int, key string, recs ...[2]int64) {
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: history.FGroupPoll})
	b.rec(history.Op{Process: proc, Type: history.OK, F: history.FGroupPoll, Value: []history.Mop{{F: history.FPoll, Key: key, Records: recs}}})
}

func (b *builder) groupCommit(proc int, f, typ, key string, off int64) {
	m := []history.Mop{{F: history.MCommit, Key: key, Offset: history.I64(off)}}
	b.rec(history.Op{Process: proc, Type: history.Invoke, F: f, Value: m})
	b.rec(history.Op{Process: proc, Type: typ, F: f, Value: m})
}

// withGroup is clean() plus a consumer group that consumed A's offsets 0 to
// 3 and committed 2, then 4 (final committed offset 4).
func withGroup() *builder {
	b := clean()
	b.groupPoll(20, A, r(0, 1), r(1, 3))
	b.groupCommit(20, history.FCommit, history.OK, A, 2)
	b.groupCommit(22, history.FCommitted, history.OK, A, 2)
	b.groupPoll(21, A, r(2, 5), r(3, 6))
	b.groupCommit(21, history.FCommit, history.Info, A, 4) // died committing
	b.groupCommit(22, history.FCommitted, history.OK, A, 4)
	b.groupCommit(23, history.FFinalCommitted, history.OK, A, 4)
	return b
}

func TestGroupClean(t *testing.T) {
	res := Check(withGroup().ops)
	if len(res.Anomalies) != 0 {
		t.Fatalf("clean group history: %v", res.Anomalies)
	}
	if res.GroupPolls != 2 || res.GroupCommits[history.OK] != 1 || res.GroupCommits[history.Info] != 1 {
		t.Fatalf("group counts: %d polls, commits %v", res.GroupPolls, res.GroupCommits)
	}
}

func TestGroupOffsetBackwards(t *testing.T) {
	b := withGroup()
	b.groupCommit(22, history.FCommitted, history.OK, A, 3) // after 4 was observed
	res := Check(b.ops)
	if res.Counts[GroupOffsetBackwards] != 1 || len(res.Anomalies) != 1 {
		t.Fatalf("a committed offset going from 4 to 3 (and only that) should be named: %v", res.Anomalies)
	}
}

func TestGroupMissed(t *testing.T) {
	b := clean()
	b.groupPoll(20, A, r(0, 1), r(1, 3)) // offset 2 (value 5) never consumed
	b.groupCommit(20, history.FCommit, history.OK, A, 2)
	b.groupPoll(21, A, r(3, 6))
	b.groupCommit(21, history.FCommit, history.OK, A, 4)
	b.groupCommit(23, history.FFinalCommitted, history.OK, A, 4)
	res := Check(b.ops)
	if res.Counts[GroupMissed] != 1 || len(res.Anomalies) != 1 {
		t.Fatalf("value 5 at offset 2, below the final committed 4, never consumed: %v", res.Anomalies)
	}
}

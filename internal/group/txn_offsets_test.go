package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	kbatch "github.com/sluice-broker/sluice/internal/batch"
)

func txnCommitReq(group string, pid int64, topic string, partition int32, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, 0
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func plainCommitReq(group, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = group
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// offsetOf fetches group's offset for topic-0 (require_stable as given).
func (e *env) offsetOf(group, topic string, stable bool) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.RequireStable = stable
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	p := e.c.OffsetFetch(req).Groups[0].Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func (e *env) marker(group string, pid int64, commit bool) {
	e.t.Helper()
	m := kbatch.Marker{ProducerID: pid, Type: kbatch.ControlAbort}
	if commit {
		m.Type = kbatch.ControlCommit
	}
	if err := e.c.WriteTxnMarker(PartitionFor(group, e.c.Partitions()), m); err != nil {
		e.t.Fatal(err)
	}
}

func TestTxnOffsetCommitPendingCommitAbort(t *testing.T) {
	e := newEnv(t, Config{NumPartitions: 3})
	e.topics.add("in", 1)
	ok := func() int16 { return 0 }

	r := e.c.TxnOffsetCommit(txnCommitReq("g", 7, "in", 0, 10), ok)
	mustCode(t, "txn commit", r.Topics[0].Partitions[0].ErrorCode, 0)
	if off, code := e.offsetOf("g", "in", true); code != kerr.UnstableOffsetCommit.Code || off != -1 {
		t.Fatalf("stable fetch while pending: %d %d", off, code)
	}
	if off, code := e.offsetOf("g", "in", false); code != 0 || off != -1 {
		t.Fatalf("fetch while pending: %d %d", off, code)
	}
	e.marker("g", 7, true)
	if off, code := e.offsetOf("g", "in", true); code != 0 || off != 10 {
		t.Fatalf("after commit marker: %d %d", off, code)
	}
	// Another producer's abort marker on the same partition changes nothing.
	e.c.TxnOffsetCommit(txnCommitReq("g", 8, "in", 0, 20), ok)
	e.marker("g", 9, false)
	if _, code := e.offsetOf("g", "in", true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatal("other producer's marker decided the commit")
	}
	e.marker("g", 8, false)
	if off, code := e.offsetOf("g", "in", true); code != 0 || off != 10 {
		t.Fatalf("after abort: %d %d", off, code)
	}

	// A regular commit written after a transactional one wins over it.
	e.c.TxnOffsetCommit(txnCommitReq("g", 9, "in", 0, 30), ok)
	mustCode(t, "plain commit", e.c.OffsetCommit(plainCommitReq("g", "in", 0, 40)).Topics[0].Partitions[0].ErrorCode, 0)
	e.marker("g", 9, true)
	if off, _ := e.offsetOf("g", "in", true); off != 40 {
		t.Fatalf("older transactional commit won: %d", off)
	}

	// A pending commit survives a restart and the replay applies markers in
	// log order, to the same result.
	e.c.TxnOffsetCommit(txnCommitReq("g", 11, "in", 0, 50), ok)
	e.restart(Config{NumPartitions: 3})
	if off, code := e.offsetOf("g", "in", true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("after restart: %d %d", off, code)
	}
	if off, _ := e.offsetOf("g", "in", false); off != 40 {
		t.Fatalf("replayed offset: %d", off)
	}
	e.marker("g", 11, true)
	if off, code := e.offsetOf("g", "in", true); code != 0 || off != 50 {
		t.Fatalf("commit after restart: %d %d", off, code)
	}
	e.restart(Config{NumPartitions: 3})
	if off, code := e.offsetOf("g", "in", true); code != 0 || off != 50 {
		t.Fatalf("second restart: %d %d", off, code)
	}
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	e := newEnv(t, Config{NumPartitions: 1})
	e.topics.add("in", 1)
	fenced := func() int16 { return kerr.InvalidProducerEpoch.Code }
	r := e.c.TxnOffsetCommit(txnCommitReq("g", 7, "in", 0, 10), fenced)
	mustCode(t, "verify failure", r.Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch.Code)
	if _, ok := e.c.groups["g"]; ok {
		t.Fatal("a refused commit created the group")
	}
	r = e.c.TxnOffsetCommit(txnCommitReq("", 7, "in", 0, 10), nil)
	mustCode(t, "empty group", r.Topics[0].Partitions[0].ErrorCode, kerr.InvalidGroupID.Code)
	r = e.c.TxnOffsetCommit(txnCommitReq("g", 7, "other", 0, 10), nil)
	mustCode(t, "unknown topic", r.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
	// A member of a stable classic group commits with its generation; a
	// wrong generation is refused; v0-v2 requests (no member) are accepted.
	p := e.joinNew("cg", nil, "range")
	if !p.done() {
		t.Fatal("join pending")
	}
	req := txnCommitReq("cg", 7, "in", 0, 1)
	req.MemberID, req.Generation = p.resp.MemberID, p.resp.Generation+1
	mustCode(t, "wrong generation", e.c.TxnOffsetCommit(req, nil).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration.Code)
	req.Generation = p.resp.Generation
	mustCode(t, "member commit", e.c.TxnOffsetCommit(req, nil).Topics[0].Partitions[0].ErrorCode, 0)
	req = txnCommitReq("cg", 8, "in", 0, 1)
	req.Version = 2
	mustCode(t, "v2 without member", e.c.TxnOffsetCommit(req, nil).Topics[0].Partitions[0].ErrorCode, 0)
	e.store.fail = true
	mustCode(t, "write failure", e.c.TxnOffsetCommit(txnCommitReq("g", 9, "in", 0, 1), nil).Topics[0].Partitions[0].ErrorCode,
		kerr.CoordinatorNotAvailable.Code)
	if e.c.hasPendingTxnOffset("g", topicPartition{"in", 0}) {
		t.Fatal("failed write left a pending commit")
	}
}

// Deleting a group (or its offset) drops its undecided transactional commits, as
// Kafka's tombstones do: the commit marker that follows does not bring the group or
// the offset back, live or after a restart.
func TestTxnOffsetsDeletedWithTheGroup(t *testing.T) {
	e := newEnv(t, Config{NumPartitions: 3})
	e.topics.add("in", 1)
	ok := func() int16 { return 0 }
	mustCode(t, "plain commit", e.c.OffsetCommit(plainCommitReq("g", "in", 0, 5)).Topics[0].Partitions[0].ErrorCode, 0)
	mustCode(t, "txn commit", e.c.TxnOffsetCommit(txnCommitReq("g", 7, "in", 0, 10), ok).Topics[0].Partitions[0].ErrorCode, 0)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	mustCode(t, "delete", e.c.DeleteGroups(del).Groups[0].ErrorCode, 0)
	if _, code := e.offsetOf("g", "in", true); code != 0 {
		t.Fatalf("stable fetch after delete: %d", code)
	}
	e.marker("g", 7, true)
	if off, _ := e.offsetOf("g", "in", false); off != -1 {
		t.Fatalf("deleted group's transactional offset came back: %d", off)
	}
	if _, ok := e.c.groups["g"]; ok {
		t.Fatal("deleted group came back with the commit marker")
	}
	e.restart(Config{NumPartitions: 3})
	if off, _ := e.offsetOf("g", "in", false); off != -1 {
		t.Fatalf("after restart: %d", off)
	}

	// OffsetDelete of a partition with only a pending commit tombstones it too.
	mustCode(t, "plain commit h", e.c.OffsetCommit(plainCommitReq("h", "in", 0, 5)).Topics[0].Partitions[0].ErrorCode, 0)
	e.topics.add("other", 1)
	rq := txnCommitReq("h", 8, "other", 0, 3)
	mustCode(t, "txn commit h", e.c.TxnOffsetCommit(rq, ok).Topics[0].Partitions[0].ErrorCode, 0)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "h"
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "other"
	op := kmsg.NewOffsetDeleteRequestTopicPartition()
	ot.Partitions = append(ot.Partitions, op)
	od.Topics = append(od.Topics, ot)
	mustCode(t, "offset delete", e.c.OffsetDelete(od).ErrorCode, 0)
	e.marker("h", 8, true)
	if off, _ := e.offsetOf("h", "other", false); off != -1 {
		t.Fatalf("deleted pending offset came back: %d", off)
	}
	e.restart(Config{NumPartitions: 3})
	if off, _ := e.offsetOf("h", "other", false); off != -1 {
		t.Fatalf("deleted pending offset came back after restart: %d", off)
	}
}

// Offset expiry keeps a partition with an undecided transactional commit, and its
// group, as Kafka does.
func TestTxnOffsetsKeepGroupFromExpiring(t *testing.T) {
	cfg := Config{NumPartitions: 3, OffsetsRetention: time.Hour, OffsetsRetentionCheckInterval: time.Minute}
	e := newEnv(t, cfg)
	e.topics.add("in", 1)
	mustCode(t, "plain commit", e.c.OffsetCommit(plainCommitReq("g", "in", 0, 5)).Topics[0].Partitions[0].ErrorCode, 0)
	mustCode(t, "txn commit", e.c.TxnOffsetCommit(txnCommitReq("g", 7, "in", 0, 10), func() int16 { return 0 }).Topics[0].Partitions[0].ErrorCode, 0)
	e.clock.Advance(2 * time.Hour)
	if off, _ := e.offsetOf("g", "in", false); off != 5 {
		t.Fatalf("offset with a pending transactional commit expired: %d", off)
	}
	if _, ok := e.c.groups["g"]; !ok {
		t.Fatal("group with a pending transactional commit deleted")
	}
	e.marker("g", 7, true)
	if off, _ := e.offsetOf("g", "in", true); off != 10 {
		t.Fatalf("after commit: %d", off)
	}
}

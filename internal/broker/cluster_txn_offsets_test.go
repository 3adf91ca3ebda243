package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A transactional producer commits offsets for groups whose coordinator is
// not its transactional id's coordinator: the group coordinator asks the
// transaction coordinator to admit the commit (found by franz-go's
// TestTxnEtl on a three-node cluster, issue #16, where such commits were
// answered NOT_COORDINATOR and retried forever).
func TestClusterTxnOffsetCommitAcrossCoordinators(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, 1, 1, nil, "src")
	if err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	srcID := [16]byte(res.ID) // TxnOffsetCommit v6 names topics by id
	const tid = "tx-offsets"
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.TransactionalID(tid), kgo.DefaultProduceTopic("src"))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := pr.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	pid, epoch, err := pr.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// coordinator polls until key has one (__consumer_offsets is created
	// through the controller on the first lookup).
	coordinator := func(find func(context.Context, ...string) kadm.FindCoordinatorResponses, key string) int32 {
		for {
			r := find(ctx, key)[key]
			if r.Err == nil {
				return r.NodeID
			}
			if ctx.Err() != nil {
				t.Fatalf("coordinator of %s: %v", key, r.Err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	txnCoord := coordinator(adm.FindTxnCoordinators, tid)
	var groups []string
	remote := 0
	for i := range 9 {
		g := fmt.Sprintf("g-%d", i)
		groups = append(groups, g)
		if coordinator(adm.FindGroupCoordinators, g) != txnCoord {
			remote++
		}
	}
	if remote == 0 {
		t.Fatalf("every group is coordinated by the transaction coordinator %d: nothing tested", txnCoord)
	}
	for _, g := range groups {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = tid, pid, epoch, g
		ar, err := add.RequestWith(ctx, pr)
		if err != nil || ar.ErrorCode != 0 {
			t.Fatalf("AddOffsetsToTxn %s: %v %v", g, err, kerr.ErrorForCode(ar.ErrorCode))
		}
		commit := kmsg.NewPtrTxnOffsetCommitRequest()
		commit.TransactionalID, commit.ProducerID, commit.ProducerEpoch, commit.Group = tid, pid, epoch, g
		commit.Generation = -1
		ct := kmsg.NewTxnOffsetCommitRequestTopic()
		ct.Topic, ct.TopicID = "src", srcID
		cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 1, -1
		ct.Partitions = append(ct.Partitions, cp)
		commit.Topics = append(commit.Topics, ct)
		cr, err := commit.RequestWith(ctx, pr)
		if err != nil {
			t.Fatalf("TxnOffsetCommit %s: %v", g, err)
		}
		if code := cr.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("TxnOffsetCommit %s: %v", g, kerr.ErrorForCode(code))
		}
	}
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, g := range groups {
		for {
			fetched, err := adm.FetchOffsets(ctx, g)
			if err == nil {
				if o, ok := fetched.Lookup("src", 0); ok && o.At == 1 {
					break
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("group %s: committed offset never became 1 (%v)", g, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

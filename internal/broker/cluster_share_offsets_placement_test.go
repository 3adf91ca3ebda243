package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/share"
)

// AlterShareGroupOffsets (kafka-share-groups --reset-offsets) sent to any broker of
// a cluster, for a topic partition with one replica on any broker and a share
// coordinator on any broker: the receiving broker resolves -1 (latest) and -2
// (earliest) with the partition's leader and writes the state through the share
// coordinator, never answering NOT_LEADER_OR_FOLLOWER because it holds no replica.
// DescribeShareGroupOffsets through every broker then sees the start offset.
func TestClusterShareOffsetsEveryPlacement(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"share.coordinator.state.topic.num.partitions": "3"})
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	cl := tc.client()

	// One topic per broker, its single replica there, with three records.
	topics := make([]string, 3)
	for i := range 3 {
		topics[i] = fmt.Sprintf("share-place-%d", i+1)
		createOnReplicaWithRecords(t, cl, topics[i], int32(i+1), 3)
	}

	// Every broker must know the topics and their leaders.
	pollUntil(t, "every broker to see every topic's leader", func() bool {
		for _, n := range tc.nodes {
			im := n.broker().image()
			if im == nil {
				return false
			}
			for i, topic := range topics {
				ip, ok := im.Partition(topic, 0)
				if !ok || ip.Leader != int32(i+1) {
					return false
				}
			}
		}
		return true
	})

	alter := func(addr, group, topic string, start int64) int16 {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		at.Topic = topic
		ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		ap.Partition, ap.StartOffset = 0, start
		at.Partitions = append(at.Partitions, ap)
		req.Topics = append(req.Topics, at)
		resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
		rawRequest(t, addr, req, resp)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("AlterShareGroupOffsets %s %s via %s: error %d, topics %+v", group, topic, addr, resp.ErrorCode, resp.Topics)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	describe := func(addr, group, topic string) (start, lag int64) {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group
		gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
		resp.Version = req.Version
		rawRequest(t, addr, req, resp)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 ||
			len(resp.Groups[0].Topics[0].Partitions) != 1 || resp.Groups[0].Topics[0].Partitions[0].ErrorCode != 0 {
			return -100, -100
		}
		rp := resp.Groups[0].Topics[0].Partitions[0]
		return rp.StartOffset, rp.Lag
	}

	// The first request creates __share_group_state; wait for it and its leaders.
	pollUntil(t, "the first AlterShareGroupOffsets", func() bool {
		code := alter(tc.nodes[0].addr, "share-place-first", topics[0], 1)
		if code != 0 && code != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("first AlterShareGroupOffsets: %v", kerr.ErrorForCode(code))
		}
		return code == 0
	})
	stateLeader := func(group, topic string) int32 {
		im := tc.nodes[0].broker().image()
		top, ok := im.Topics[topic]
		st, ok2 := im.Topics[ShareStateTopic]
		if !ok || !ok2 {
			return metadata.NoLeader
		}
		k := share.Key{Group: group, TopicID: [16]byte(top.ID), Partition: 0}
		ip, _ := im.Partition(ShareStateTopic, k.StatePartition(int32(len(st.Partitions))))
		return ip.Leader
	}
	pollUntil(t, "the state topic's leaders", func() bool {
		im := tc.nodes[0].broker().image()
		st, ok := im.Topics[ShareStateTopic]
		if !ok {
			return false
		}
		for p := range int32(len(st.Partitions)) {
			if ip, _ := im.Partition(ShareStateTopic, p); ip.Leader == metadata.NoLeader {
				return false
			}
		}
		return true
	})

	covered := map[[3]int32]bool{}
	for ti, topic := range topics {
		// A group whose share coordinator is on each broker, where the
		// state topic's leaders allow it.
		groups := map[int32]string{}
		for j := 0; j < 200 && len(groups) < 3; j++ {
			g := fmt.Sprintf("sg-%d-%d", ti, j)
			if l := stateLeader(g, topic); l != metadata.NoLeader && groups[l] == "" {
				groups[l] = g
			}
		}
		for coord, group := range groups {
			for ri, n := range tc.nodes {
				// -2: the log start offset (0); -1: the high watermark (3).
				// The leader holds a copy of the share partition (as after a
				// fetch); a reset through another broker must make it drop it.
				leaderB := tc.nodes[ti].broker()
				top, _ := leaderB.topics.Get(topic)
				k := share.Key{Group: group, TopicID: [16]byte(top.ID), Partition: 0}
				stale := leaderB.shares.Partition(k, func(string) int64 { return 1 })
				for _, c := range []struct{ start, want int64 }{{-2, 0}, {-1, 3}, {2, 2}} {
					pollUntil(t, fmt.Sprintf("AlterShareGroupOffsets %d of %s (leader %d, coordinator %d) via node %d", c.start, topic, ti+1, coord, ri+1), func() bool {
						switch code := alter(n.addr, group, topic, c.start); code {
						case 0:
							return true
						case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code,
							kerr.LeaderNotAvailable.Code, kerr.NotLeaderForPartition.Code:
							return false // retriable while the cluster settles
						default:
							t.Fatalf("AlterShareGroupOffsets %d of %s (leader %d, coordinator %d) via node %d: %v",
								c.start, topic, ti+1, coord, ri+1, kerr.ErrorForCode(code))
							return false
						}
					})
					// The leader's ExpireAll writes, every second, the copies
					// it listed before writing each: one that listed the
					// copy before the reset dropped or replaced it writes it
					// now. It must find nothing to write (the reset flushed
					// the copy first), or be fenced (FENCED_STATE_EPOCH: the
					// reset initialized the state with a higher state epoch
					// than the copy's, which was made here without reading
					// the state), not write the old start offset over the new.
					if err := leaderB.shares.Persist(stale); err != nil && !errors.Is(err, kerr.FencedStateEpoch) {
						t.Fatalf("writing the leader's old copy of %v as ExpireAll would: %v", k, err)
					}
					if ri != ti {
						if sp := leaderB.shares.Lookup(k); sp != nil {
							if got, _ := sp.Offsets(); got != c.want {
								t.Fatalf("leader %d kept its copy of %v (start %d) after the reset to %d via node %d", ti+1, k, got, c.want, ri+1)
							}
						}
						if n.broker().shares.Lookup(k) != nil {
							t.Fatalf("node %d, not the leader, kept a copy of %v after the reset", ri+1, k)
						}
					}
					for di, d := range tc.nodes {
						// The lag is counted to the leader's high watermark, 3.
						if got, lag := describe(d.addr, group, topic); got != c.want || lag != 3-c.want {
							t.Fatalf("DescribeShareGroupOffsets of %s via node %d after altering to %d via node %d (leader %d, coordinator %d): start offset %d, lag %d, want %d, %d",
								topic, di+1, c.start, ri+1, ti+1, coord, got, lag, c.want, 3-c.want)
						}
					}
				}
				covered[[3]int32{int32(ti + 1), coord, int32(ri + 1)}] = true
			}
		}
	}
	// A broker whose metadata shows no leader for the partition (a topic it has not
	// published yet, a leader just lost) cannot tell the broker that holds a copy:
	// the reset is refused before it is written, or, if the leader went away after
	// that, answered with an error rather than reported done.
	k := share.Key{Group: "share-place-noleader", Partition: 0}
	if code, _ := tc.nodes[1].broker().flushSharePartitionCopies(context.Background(), k, "share-place-unpublished"); code == 0 {
		t.Fatal("flushing the copies of a partition without a leader in this broker's metadata: no error")
	}
	if err := tc.nodes[1].broker().forgetSharePartitionCopies(k, "share-place-unpublished"); err == nil {
		t.Fatal("dropping the copies of a partition without a leader in this broker's metadata: no error")
	}
	t.Logf("covered %d of 27 (topic leader, share coordinator, receiving broker) placements", len(covered))
	if len(covered) < 9 {
		t.Fatalf("only %d placements covered: %v", len(covered), covered)
	}
}

// share.Manager.ExpireAll lists the in-memory share partitions, then writes each
// that changed: a copy it listed before AlterShareGroupOffsets replaced it is written
// after the reset. The reset writes the copy first, so that this later write finds
// nothing to write instead of putting the old start offset back over the new one.
func TestShareOffsetsAlterOldCopyNotWrittenBack(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 3)
	b := tb.broker()
	k := share.Key{Group: "sg", TopicID: id, Partition: 0}
	old := b.shares.Partition(k, func(string) int64 { return 1 }) // as after a fetch, never written
	for _, start := range []int64{2, 0} {
		r := tb.request(alterShareOffsetsReq("sg", "q", 0, start)).(*kmsg.AlterShareGroupOffsetsResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("alter %d: %+v", start, r)
		}
		if err := b.shares.Persist(old); err != nil { // the ExpireAll that listed it
			t.Fatalf("writing the old copy as ExpireAll would: %v", err)
		}
		s, found, err := b.readShareState(k)
		if err != nil || !found || s.StartOffset != start {
			t.Fatalf("after the reset to %d and a write of the old copy: stored start offset %d (found %v, err %v), want %d", start, s.StartOffset, found, err, start)
		}
		if sp := b.shares.Lookup(k); sp == nil {
			t.Fatalf("after the reset to %d: no share partition in memory", start)
		} else if got, _ := sp.Offsets(); got != start {
			t.Fatalf("after the reset to %d: start offset %d in memory", start, got)
		}
	}
}

// On a single node AlterShareGroupOffsets resolves -1 and -2 with the local
// partition and refuses other negative offsets.
func TestShareGroupOffsetsLatestEarliest(t *testing.T) {
	tb := shareTestBroker(t, nil)
	shareProduceN(t, tb, "q", 1, 5)
	alter := func(offset int64) kmsg.AlterShareGroupOffsetsResponseTopicPartition {
		r := tb.request(alterShareOffsetsReq("sg", "q", 0, offset)).(*kmsg.AlterShareGroupOffsetsResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("alter %d: %+v", offset, r)
		}
		return r.Topics[0].Partitions[0]
	}
	start := func() int64 {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = "sg"
		gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		gt.Topic, gt.Partitions = "q", []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := tb.request(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		return resp.Groups[0].Topics[0].Partitions[0].StartOffset
	}
	for _, c := range []struct{ offset, want int64 }{{-1, 5}, {-2, 0}, {3, 3}} {
		if p := alter(c.offset); p.ErrorCode != 0 {
			t.Fatalf("alter %d: %v", c.offset, kerr.ErrorForCode(p.ErrorCode))
		}
		if got := start(); got != c.want {
			t.Fatalf("after alter %d: start offset %d, want %d", c.offset, got, c.want)
		}
	}
	if p := alter(-3); p.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("alter -3: %v, want INVALID_REQUEST", kerr.ErrorForCode(p.ErrorCode))
	}
}

// createOnReplicaWithRecords creates topic with one partition whose single
// replica is on broker node, and produces n records to it.
func createOnReplicaWithRecords(t *testing.T, cl *kgo.Client, topic string, node int32, n int) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{node}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	pollUntil(t, "topic "+topic+" to be created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			return false
		}
		code := resp.Topics[0].ErrorCode
		return code == 0 || code == kerr.TopicAlreadyExists.Code
	})
	pollUntil(t, fmt.Sprintf("%d records in %s", n, topic), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var recs []*kgo.Record
		for j := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(j))})
		}
		return cl.ProduceSync(ctx, recs...).FirstErr() == nil
	})
}

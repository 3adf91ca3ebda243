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

	"github.com/sluice-broker/sluice/internal/share"
)

var (
	ackAccept  = []int8{share.AckAccept}
	ackRelease = []int8{share.AckRelease}
	ackReject  = []int8{share.AckReject}
)

// A restart in the middle of consumption, with ShareUpdate records between
// the snapshots: nothing acknowledged comes back, everything else does, with
// its delivery count.
func TestShareStateRestartMidConsumption(t *testing.T) {
	tb := shareTestBroker(t, map[string]string{"share.coordinator.snapshot.update.records.per.snapshot": "3"})
	id := shareProduceN(t, tb, "q", 1, 10)
	if got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 0, id, 4, 100)); len(got) != 4 {
		t.Fatalf("acquired %v", got)
	}
	// accept 0-1, release 2, keep 3
	if top, part := shareAcknowledge(t, tb, "sg", "A", 1, id,
		shareAck{0, 1, ackAccept}, shareAck{2, 2, ackRelease}); top != 0 || part != 0 {
		t.Fatalf("acks: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	got := shareAcquired(t, shareFetch(t, tb, "sg", "A", 2, id, 4, 100))
	if len(got) != 4 || got[2] != 2 || got[4] != 1 || got[6] != 1 {
		t.Fatalf("second fetch acquired %v", got)
	}
	// accept 4, reject 5 (2 and 6 stay acquired)
	if top, part := shareAcknowledge(t, tb, "sg", "A", 3, id,
		shareAck{4, 4, ackAccept}, shareAck{5, 5, ackReject}); top != 0 || part != 0 {
		t.Fatalf("acks: %v %v", kerr.ErrorForCode(top), kerr.ErrorForCode(part))
	}
	updates := 0
	_ = replayLog(tb.broker().replicas.Get(ShareStateTopic, 0), func(buf []byte) error {
		return forEachRecord(buf, func(key, _ []byte) {
			if len(key) >= 2 && key[1] == 1 {
				updates++
			}
		})
	})
	if updates == 0 {
		t.Fatal("no ShareUpdate record was written")
	}
	tb.restart()
	got = shareAcquired(t, shareFetch(t, tb, "sg", "B", 0, id, 500, 500))
	want := map[int64]int16{2: 3, 3: 2, 6: 2, 7: 1, 8: 1, 9: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart acquired %v, want %v", got, want)
	}
}

// forEachRecord calls fn with the key and value of every record of the
// non-control batches in buf.
func forEachRecord(buf []byte, fn func(key, value []byte)) error {
	for len(buf) >= 61 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(buf); err != nil {
			return err
		}
		buf = buf[12+int(rb.Length):]
		if rb.Attributes&0x20 != 0 {
			continue
		}
		recs := readRawRecords(int(rb.NumRecords), rb.Records)
		for _, r := range recs {
			fn(r.Key, r.Value)
		}
	}
	return nil
}

func readRawRecords(n int, in []byte) []kmsg.Record {
	var out []kmsg.Record
	for i := 0; i < n; i++ {
		length, used := varint(in)
		total := used + int(length)
		if used == 0 || total > len(in) {
			return out
		}
		var r kmsg.Record
		if err := r.ReadFrom(in[:total]); err != nil {
			return out
		}
		out = append(out, r)
		in = in[total:]
	}
	return out
}

func varint(in []byte) (int64, int) {
	var x uint64
	var s uint
	for i, b := range in {
		if i == 10 {
			return 0, 0
		}
		if b < 0x80 {
			x |= uint64(b) << s
			return int64(x>>1) ^ -int64(x&1), i + 1
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, 0
}

// The share coordinator's RPCs and FindCoordinator's share key type.
func TestShareCoordinatorRPCs(t *testing.T) {
	tb := shareTestBroker(t, nil)
	id := shareProduceN(t, tb, "q", 1, 3)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType = 6, 2
	fc.CoordinatorKeys = []string{share.Key{Group: "sg", TopicID: id}.CoordinatorKey(), "bad-key"}
	resp := tb.request(fc).(*kmsg.FindCoordinatorResponse)
	// (franz-go sends one request per key and merges the answers in the
	// order they arrive, so they are matched by key.)
	byKey := map[string]kmsg.FindCoordinatorResponseCoordinator{}
	for _, c := range resp.Coordinators {
		byKey[c.Key] = c
	}
	if good, bad := byKey[fc.CoordinatorKeys[0]], byKey["bad-key"]; len(resp.Coordinators) != 2 || good.ErrorCode != 0 ||
		good.NodeID != tb.broker().self() || bad.Key != "bad-key" || bad.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator: %+v", resp.Coordinators)
	}

	w := shareWriteStateReq("sg", id, 1, 1)
	if c := tb.request(w).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("WriteShareGroupState: %v", kerr.ErrorForCode(c))
	}
	r := shareReadStateReq("sg", id)
	rp := tb.request(r).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || rp.StartOffset != 1 || rp.StateEpoch != 1 || len(rp.StateBatches) != 1 || rp.StateBatches[0].DeliveryState != 2 {
		t.Fatalf("ReadShareGroupState: %+v", rp)
	}
	s := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	s.Version, s.GroupID = 1, "sg"
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = id
	st.Partitions = append(st.Partitions, kmsg.NewReadShareGroupStateSummaryRequestTopicPartition())
	s.Topics = append(s.Topics, st)
	sp := tb.request(s).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 || sp.StartOffset != 1 || sp.DeliveryCompleteCount != 1 {
		t.Fatalf("ReadShareGroupStateSummary: %+v", sp)
	}
	d := kmsg.NewPtrDeleteShareGroupStateRequest()
	d.GroupID = "sg"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = id
	dt.Partitions = append(dt.Partitions, kmsg.NewDeleteShareGroupStateRequestTopicPartition())
	d.Topics = append(d.Topics, dt)
	if c := tb.request(d).(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("DeleteShareGroupState: %v", kerr.ErrorForCode(c))
	}
	if c := tb.request(r).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("ReadShareGroupState after delete: %v", kerr.ErrorForCode(c))
	}
	r.GroupID = ""
	if c := tb.request(r).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRequest.Code {
		t.Fatalf("ReadShareGroupState without group: %v", kerr.ErrorForCode(c))
	}
}

// clusterShareFetch sends a ShareFetch for partition 0 of topic id to broker
// node and returns the acquired offsets (with delivery counts), or the
// partition's error.
func clusterShareFetch(t *testing.T, cl *kgo.Client, node int32, group, member string, epoch int32, id [16]byte) (map[int64]int16, error) {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &group, &member
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxRecords, req.MaxBytes = epoch, 200, 500, 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	out := map[int64]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				return nil, kerr.ErrorForCode(rp.ErrorCode)
			}
			for _, a := range rp.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					out[o] = a.DeliveryCount
				}
			}
		}
	}
	return out, nil
}

// A three-node cluster: the share-partition leader's node stops; the new
// leader reads the state from the share coordinator (wherever it moved to),
// redelivers what was not acknowledged and nothing that was.
func TestClusterShareStateFailover(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{
		"share.coordinator.state.topic.num.partitions": "2",
		"share.auto.offset.reset":                      "earliest",
		"replica.lag.time.max.ms":                      "3000",
	})
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mir := "2"
	if res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &mir}, "q"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	md := waitCluster(t, adm, "q led with three in-sync replicas", func(md kadm.Metadata) bool {
		p := md.Topics["q"].Partitions[0]
		return p.Leader > 0 && len(p.ISR) == 3
	})
	id := [16]byte(md.Topics["q"].ID)
	leader := md.Topics["q"].Partitions[0].Leader
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("q"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 6 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatal(err)
	}

	// The first fetches wait for __share_group_state to be created.
	var got map[int64]int16
	waitFor(t, "the first share fetch", func() bool {
		got, err = clusterShareFetch(t, cl, leader, "sg", "A", 0, id)
		return err == nil && len(got) == 6
	})
	if sm, err := adm.Metadata(ctx, ShareStateTopic); err != nil || len(sm.Topics[ShareStateTopic].Partitions) != 2 ||
		len(sm.Topics[ShareStateTopic].Partitions[0].Replicas) != 3 {
		t.Fatalf("%s: %v %+v", ShareStateTopic, err, sm.Topics[ShareStateTopic])
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	g, m := "sg", "A"
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &g, &m, 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range []shareAck{{0, 1, ackAccept}, {4, 5, []int8{share.AckAccept, share.AckReject}}} {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, b)
	}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	raw, err := cl.Broker(int(leader)).Request(ctx, ack)
	if err != nil {
		t.Fatal(err)
	}
	if r := raw.(*kmsg.ShareAcknowledgeResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %+v", r)
	}

	tc.nodes[leader-1].stop()
	adm = tc.admin()
	md = waitCluster(t, adm, "a new leader of q", func(md kadm.Metadata) bool {
		p := md.Topics["q"].Partitions[0]
		return p.Leader > 0 && p.Leader != leader
	})
	next := md.Topics["q"].Partitions[0].Leader
	cl2, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if _, err := cl2.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the share fetch on the new leader", func() bool {
		got, err = clusterShareFetch(t, cl2, next, "sg", "B", 0, id)
		return err == nil && len(got) > 0
	})
	if want := map[int64]int16{2: 2, 3: 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("new leader %d acquired %v, want %v", next, got, want)
	}
	// Every surviving broker reads the same state from the coordinator, locally
	// or over the peer transport: start offset 2, and 4 and 5 done, so a lag of 2
	// (against the leader's high watermark; a follower's may lag behind).
	for i, n := range tc.nodes {
		if n.srv == nil {
			continue
		}
		b := n.broker()
		var start, lag int64
		// The leader's high watermark may still be catching up with the
		// records the stopped leader had acknowledged: poll until it has.
		waitFor(t, fmt.Sprintf("node %d's share-state summary", i+1), func() bool {
			start, lag = b.shareStateSummary(share.Key{Group: "sg", TopicID: id}, tc.nodes[next-1].broker().replicas.Get("q", 0))
			return start == 2 && lag == 2
		})
	}
}

// The share-state RPCs and FindCoordinator's share key type need ClusterAction.
func TestAuthzShareStateRPCs(t *testing.T) {
	ab := startAuthzBroker(t, map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	ctx := dpCtx(t, 30*time.Second)
	adm := kadm.NewClient(ab.as("admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	events, _ := ab.broker().topics.Get("events")
	read := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = "sg"
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = [16]byte(events.ID)
		rt.Partitions = append(rt.Partitions, kmsg.NewReadShareGroupStateRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return send[*kmsg.ReadShareGroupStateResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
	}
	find := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType = 6, 2
		req.CoordinatorKeys = []string{share.Key{Group: "sg", TopicID: [16]byte(events.ID)}.CoordinatorKey()}
		return send[*kmsg.FindCoordinatorResponse](t, cl, req).Coordinators[0].ErrorCode
	}
	alice := ab.as("alice")
	wantCode(t, "ReadShareGroupState without ClusterAction", read(alice), kerr.ClusterAuthorizationFailed)
	wantCode(t, "FindCoordinator (share) without ClusterAction", find(alice), kerr.ClusterAuthorizationFailed)
	admin := ab.as("admin")
	// before the state topic exists there is no coordinator; FindCoordinator creates it
	wantCode(t, "ReadShareGroupState as admin, no state topic", read(admin), kerr.NotCoordinator)
	wantCode(t, "FindCoordinator (share) as admin", find(admin), nil)
	wantCode(t, "ReadShareGroupState as admin", read(admin), kerr.UnknownTopicOrPartition) // no state yet
}

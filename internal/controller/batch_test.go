package controller

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// countingQuorum counts the entries a controller proposes.
type countingQuorum struct {
	Quorum
	proposals atomic.Int64
}

func (q *countingQuorum) Propose(ctx context.Context, data []byte) error {
	q.proposals.Add(1)
	return q.Quorum.Propose(ctx, data)
}

// batchEnv is newEnv whose controllers count their proposals, with three
// live brokers registered.
func batchEnv(t *testing.T) (*member, *countingQuorum) {
	e := newEnv(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	counters := map[uint64]*countingQuorum{}
	for id, m := range e.m {
		counters[id] = &countingQuorum{Quorum: m.node}
		m.ctrl = New(Config{Quorum: counters[id], Store: m.store, Logger: logger, SessionTimeout: session, Now: e.clock.Now,
			MaxReplicationFactor: 3})
	}
	lid, l := e.active()
	ctx := context.Background()
	for b := int32(1); b <= 3; b++ {
		r, err := l.ctrl.Register(ctx, RegisterRequest{Broker: metadata.BrokerRegistration{ID: b, Incarnation: "i1"}})
		if err != nil {
			t.Fatalf("register %d: %v", b, err)
		}
		if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: b, Epoch: r.Epoch, MetadataOffset: r.Offset}); err != nil {
			t.Fatal(err)
		}
	}
	return l, counters[lid]
}

func resultCode(r TopicResult) int16 {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// TestCreateTopicsOneEntry: the topics of one request that pass their
// checks are committed in one entry; each topic keeps its own outcome.
func TestCreateTopicsOneEntry(t *testing.T) {
	l, q := batchEnv(t)
	ctx := context.Background()
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "old", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	req := CreateTopicsRequest{Topics: []CreateTopicRequest{
		{Name: "a", Partitions: 3, ReplicationFactor: 1},
		{Name: "old", Partitions: 1, ReplicationFactor: 1},
		{Name: "rf4", Partitions: 1, ReplicationFactor: 4},
		{Name: "a", Partitions: 1, ReplicationFactor: 1},
		{Name: "v", Partitions: 2, ReplicationFactor: 1, ValidateOnly: true},
		{Name: "x", Assignments: [][]int32{{3}, {2}}},
		{Name: "gone", Assignments: [][]int32{{9}}},
	}}
	for i := range 100 {
		req.Topics = append(req.Topics, CreateTopicRequest{Name: "many-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Partitions: 1, ReplicationFactor: 1})
	}
	before := q.proposals.Load()
	resp, err := l.ctrl.CreateTopics(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := q.proposals.Load() - before; n != 1 {
		t.Fatalf("%d entries proposed, want 1", n)
	}
	want := []int16{0, kerr.TopicAlreadyExists.Code, kerr.InvalidReplicationFactor.Code, kerr.TopicAlreadyExists.Code, 0, 0, kerr.BrokerNotAvailable.Code}
	for i, w := range want {
		if c := resultCode(resp.Results[i]); c != w {
			t.Fatalf("topic %d (%s): code %d, want %d (%+v)", i, req.Topics[i].Name, c, w, resp.Results[i].Error)
		}
	}
	im := l.store.Image()
	if im.Offset != resp.Offset {
		t.Fatalf("image at %d, answer at %d", im.Offset, resp.Offset)
	}
	if a := im.Topics["a"]; a == nil || len(a.Partitions) != 3 || a.ID != resp.Results[0].TopicID {
		t.Fatalf("topic a: %+v", a)
	}
	if _, ok := im.Topics["v"]; ok {
		t.Fatal("a validate-only topic was created")
	}
	if x := im.Topics["x"]; x == nil || x.Partitions[0].Leader != 3 || x.Partitions[1].Leader != 2 {
		t.Fatalf("explicit assignment: %+v", x)
	}
	for _, tr := range req.Topics[7:] {
		if _, ok := im.Topics[tr.Name]; !ok {
			t.Fatalf("topic %s missing", tr.Name)
		}
	}
	// Leaders spread over the brokers as one create after the other would.
	per := map[int32]int{}
	for _, tr := range req.Topics[7:] {
		per[im.Topics[tr.Name].Partitions[0].Leader]++
	}
	if per[1] < 30 || per[2] < 30 || per[3] < 30 {
		t.Fatalf("leaders of 100 one-partition topics: %v", per)
	}

	// Deleting: one entry, unknown and repeated names fail alone.
	before = q.proposals.Load()
	dresp, err := l.ctrl.DeleteTopics(ctx, DeleteTopicsRequest{Names: []string{"a", "nope", "x", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := q.proposals.Load() - before; n != 1 {
		t.Fatalf("delete: %d entries proposed, want 1", n)
	}
	for i, w := range []int16{0, kerr.UnknownTopicOrPartition.Code, 0, kerr.UnknownTopicOrPartition.Code} {
		if c := resultCode(dresp.Results[i]); c != w {
			t.Fatalf("delete %d: code %d, want %d", i, c, w)
		}
	}
	im = l.store.Image()
	if im.Topics["a"] != nil || im.Topics["x"] != nil || im.Topics["old"] == nil {
		t.Fatal("delete: wrong topics left")
	}

	// Growing: one entry; a smaller count and an inconsistent assignment
	// fail alone.
	before = q.proposals.Load()
	presp, err := l.ctrl.CreatePartitionsBatch(ctx, CreatePartitionsBatchRequest{Topics: []CreatePartitionsRequest{
		{Name: "old", Count: 3},
		{Name: "many-aa", Count: 1},
		{Name: "many-ba", Count: 2, Assignments: [][]int32{{1, 2}}},
		{Name: "many-ca", Count: 2, Assignments: [][]int32{{2}}},
		{Name: "nope", Count: 2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := q.proposals.Load() - before; n != 1 {
		t.Fatalf("create partitions: %d entries proposed, want 1", n)
	}
	for i, w := range []int16{0, kerr.InvalidPartitions.Code, kerr.InvalidReplicaAssignment.Code, 0, kerr.UnknownTopicOrPartition.Code} {
		if c := resultCode(presp.Results[i]); c != w {
			t.Fatalf("create partitions %d: code %d, want %d (%+v)", i, c, w, presp.Results[i].Error)
		}
	}
	im = l.store.Image()
	if len(im.Topics["old"].Partitions) != 3 || im.Topics["many-ca"].Partitions[1].Leader != 2 {
		t.Fatalf("create partitions: %+v %+v", im.Topics["old"], im.Topics["many-ca"])
	}
}

// TestCreateTopicsEntryBound: a request beyond MaxEntryBytes is committed
// in several entries of whole topics.
func TestCreateTopicsEntryBound(t *testing.T) {
	l, q := batchEnv(t)
	old := MaxEntryBytes
	MaxEntryBytes = 1000 // a few topics of 4 partitions per entry
	t.Cleanup(func() { MaxEntryBytes = old })
	var req CreateTopicsRequest
	for i := range 20 {
		req.Topics = append(req.Topics, CreateTopicRequest{Name: "t" + string(rune('a'+i)), Partitions: 4, ReplicationFactor: 1})
	}
	before := q.proposals.Load()
	resp, err := l.ctrl.CreateTopics(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	n := q.proposals.Load() - before
	if n < 2 || n >= 20 {
		t.Fatalf("%d entries for 20 topics of about 400 bytes each under a 1,000-byte bound", n)
	}
	im := l.store.Image()
	for i, tr := range req.Topics {
		if resultCode(resp.Results[i]) != 0 || im.Topics[tr.Name] == nil || len(im.Topics[tr.Name].Partitions) != 4 {
			t.Fatalf("topic %s: %+v", tr.Name, resp.Results[i])
		}
	}
}

// TestElectLeadersOneEntry: the elections of one ElectLeaders are
// committed in one entry; each partition keeps its own answer, a repeated
// one the first's.
func TestElectLeadersOneEntry(t *testing.T) {
	l, q := batchEnv(t)
	ctx := context.Background()
	if _, err := l.ctrl.CreateTopic(ctx, CreateTopicRequest{Name: "e", Assignments: [][]int32{{1, 2}, {1, 2}, {2, 1}}}); err != nil {
		t.Fatal(err)
	}
	// Broker 1 leaves (controlled shutdown) and comes back: partitions 0
	// and 1 are led by 2, and 1 rejoins their in-sync sets.
	b1, _ := l.store.Image().Broker(1)
	if _, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: b1.Epoch, WantFence: true}); err != nil {
		t.Fatal(err)
	}
	if hb, err := l.ctrl.Heartbeat(ctx, HeartbeatRequest{BrokerID: 1, Epoch: b1.Epoch, MetadataOffset: l.store.Image().Offset}); err != nil || hb.Fenced {
		t.Fatalf("unfence: %+v %v", hb, err)
	}
	b2, _ := l.store.Image().Broker(2)
	for p := int32(0); p < 2; p++ {
		pt, _ := l.store.Image().Partition("e", p)
		if pt.Leader != 2 {
			t.Fatalf("partition %d after broker 1 left: %+v", p, pt)
		}
		if _, err := l.ctrl.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 2, BrokerEpoch: b2.Epoch, Topic: "e",
			TopicID: l.store.Image().Topics["e"].ID, Partition: p, LeaderEpoch: pt.LeaderEpoch, PartitionEpoch: pt.PartitionEpoch,
			ISR: []int32{2, 1}}); err != nil {
			t.Fatal(err)
		}
	}
	before := q.proposals.Load()
	resp, err := l.ctrl.ElectLeaders(ctx, ElectLeadersRequest{Partitions: []ElectRequest{
		{Topic: "e", Partition: 0}, {Topic: "e", Partition: 1}, {Topic: "e", Partition: 2}, {Topic: "e", Partition: 0}, {Topic: "nope"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := q.proposals.Load() - before; n != 1 {
		t.Fatalf("%d entries proposed, want 1", n)
	}
	for i, w := range []int16{0, 0, kerr.ElectionNotNeeded.Code, 0, kerr.UnknownTopicOrPartition.Code} {
		if resp.Results[i].Code != w {
			t.Fatalf("partition %d: code %d, want %d (%s)", i, resp.Results[i].Code, w, resp.Results[i].Message)
		}
	}
	for p, want := range []int32{1, 1, 2} {
		if pt, _ := l.store.Image().Partition("e", int32(p)); pt.Leader != want {
			t.Fatalf("partition %d: leader %d, want %d", p, pt.Leader, want)
		}
	}
}

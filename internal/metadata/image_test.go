package metadata

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/quorum"
)

func reg(id int32, inc string) Record {
	return Record{Type: RegisterBroker, Broker: &BrokerRegistration{ID: id, Incarnation: inc,
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id, Protocol: "PLAINTEXT"}}}}
}

func topic(name string, id byte, leaders ...int32) Record {
	t := &Topic{Name: name, ID: ID{id}}
	for _, l := range leaders {
		t.Partitions = append(t.Partitions, Partition{Replicas: []int32{l}, ISR: []int32{l}, Leader: l})
	}
	return Record{Type: CreateTopic, Topic: t}
}

func apply(t *testing.T, im *Image, off uint64, recs ...Record) (*Image, []string) {
	t.Helper()
	return im.Apply(off, Batch{Records: recs})
}

// Applying is deterministic and total: records that do not fit are skipped
// (and said why), the rest applied in order, and the old image never
// changes.
func TestApplyRules(t *testing.T) {
	im0 := Empty()
	im1, skipped := apply(t, im0, 5, Record{Type: SetClusterID, ClusterID: "c1"}, reg(1, "a"), reg(2, "b"))
	if len(skipped) != 0 || im1.ClusterID != "c1" || len(im1.Brokers) != 2 {
		t.Fatalf("first batch: %+v skipped %v", im1, skipped)
	}
	if b := im1.Brokers[1]; b.Epoch != 5 || !b.Fenced {
		t.Fatalf("a registration's epoch is its offset and it starts fenced: %+v", b)
	}
	if len(im0.Brokers) != 0 || im0.ClusterID != "" || im0.Offset != 0 {
		t.Fatalf("the old image changed: %+v", im0)
	}

	cases := []struct {
		name string
		rec  Record
		skip bool
	}{
		{"second cluster id", Record{Type: SetClusterID, ClusterID: "c2"}, true},
		{"unfence with the wrong epoch", Record{Type: UnfenceBroker, BrokerID: 1, Epoch: 4}, true},
		{"unfence", Record{Type: UnfenceBroker, BrokerID: 1, Epoch: 5}, false},
		{"topic", topic("t", 1, 1, 2), false},
		{"same name again", topic("t", 2, 1), true},
		{"same id again", topic("u", 1, 1), true},
		{"empty topic", Record{Type: CreateTopic, Topic: &Topic{Name: "e", ID: ID{9}}}, true},
		{"stale partition change", Record{Type: ChangePartition, TopicName: "t", TopicID: ID{1}, Partition: 0,
			Change: &Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 1, PartitionEpoch: 0}}, true},
		{"partition change", Record{Type: ChangePartition, TopicName: "t", TopicID: ID{1}, Partition: 0,
			Change: &Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 1, PartitionEpoch: 1}}, false},
		{"change of a missing partition", Record{Type: ChangePartition, TopicName: "t", TopicID: ID{1}, Partition: 7,
			Change: &Partition{PartitionEpoch: 9}}, true},
		{"producer ids out of order", Record{Type: ProducerIDs, FirstProducerID: 1000, ProducerIDCount: 1000}, true},
		{"producer ids", Record{Type: ProducerIDs, FirstProducerID: 0, ProducerIDCount: 1000}, false},
		{"remove with another id", Record{Type: RemoveTopic, TopicName: "t", TopicID: ID{2}}, true},
		{"unknown", Record{Type: "bogus"}, true},
	}
	im := im1
	for i, c := range cases {
		next, skipped := apply(t, im, uint64(10+i), c.rec)
		if (len(skipped) > 0) != c.skip {
			t.Fatalf("%s: skipped %v, want skip %v", c.name, skipped, c.skip)
		}
		if next.Offset != uint64(10+i) {
			t.Fatalf("%s: offset %d", c.name, next.Offset)
		}
		im = next
	}
	if !im.IsLive(1) || im.IsLive(2) || len(im.LiveBrokers()) != 1 {
		t.Fatalf("live brokers: %+v", im.LiveBrokers())
	}
	if p, _ := im.Partition("t", 0); p.Leader != NoLeader || p.LeaderEpoch != 1 {
		t.Fatalf("partition 0: %+v", p)
	}
	if p, _ := im.Partition("t", 1); p.Leader != 2 {
		t.Fatalf("partition 1 untouched: %+v", p)
	}
	if im.NextProducerID != 1000 {
		t.Fatalf("next producer id %d", im.NextProducerID)
	}
	if t1, _ := im1.Topics["t"]; t1 != nil {
		t.Fatalf("an older image sees a later topic")
	}
	im, skipped = apply(t, im, 40, Record{Type: RemoveTopic, TopicName: "t", TopicID: ID{1}})
	if len(skipped) != 0 || len(im.Topics) != 0 || len(im.TopicsByID) != 0 {
		t.Fatalf("remove: %v %+v", skipped, im.Topics)
	}
}

// The store's snapshot restores an identical image, and WaitFor wakes on the
// offset.
func TestStoreSnapshotAndWait(t *testing.T) {
	s := NewStore()
	b := Batch{Records: []Record{{Type: SetClusterID, ClusterID: "c"}, reg(1, "a"), topic("t", 3, 1, 1, 1),
		{Type: SetTopicConfigs, TopicName: "t", TopicID: ID{3}, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Type: ProducerIDs, FirstProducerID: 0, ProducerIDCount: 10}}}
	if err := s.Apply([]quorum.Entry{{Index: 3, Data: b.Encode()}, {Index: 4, Data: []byte("not json")}}); err != nil {
		t.Fatal(err)
	}
	if s.Image().Offset != 4 {
		t.Fatalf("an undecodable entry still advances the offset: %d", s.Image().Offset)
	}
	data, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewStore()
	if err := r.Restore(data); err != nil {
		t.Fatal(err)
	}
	a, c := s.Image(), r.Image()
	if c.Offset != a.Offset || c.ClusterID != "c" || c.NextProducerID != 10 || len(c.Topics["t"].Partitions) != 3 ||
		c.Topics["t"].Configs["cleanup.policy"] != "compact" || c.TopicsByID[ID{3}] == nil || c.Brokers[1].Epoch != 3 {
		t.Fatalf("restored image differs: %+v", c)
	}
	done := make(chan *Image)
	go func() {
		im, _ := r.WaitFor(t.Context(), 9)
		done <- im
	}()
	r.Apply([]quorum.Entry{{Index: 9, Data: Batch{Records: []Record{{Type: Noop}}}.Encode()}})
	if im := <-done; im == nil || im.Offset != 9 {
		t.Fatalf("WaitFor: %+v", im)
	}
}

func TestApplyQuotasAndACLs(t *testing.T) {
	im := Empty()
	acl := func(name string) ACL {
		return ACL{ResourceType: 2, ResourceName: name, PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, Permission: 3}
	}
	im, skipped := im.Apply(1, Batch{Records: []Record{
		{Type: SetClientQuotas, QuotaEntity: "user/alice", Quotas: map[string]float64{"producer_byte_rate": 1024}},
		{Type: SetClientQuotas, QuotaEntity: "client-id/<default>", Quotas: map[string]float64{"consumer_byte_rate": 10}},
		{Type: AddACLs, ACLs: []ACL{acl("t2"), acl("t1"), acl("t2")}},
	}})
	if len(skipped) != 0 || len(im.ClientQuotas) != 2 || im.ClientQuotas["user/alice"]["producer_byte_rate"] != 1024 {
		t.Fatalf("quotas: %v %+v", skipped, im.ClientQuotas)
	}
	if len(im.ACLs) != 2 || im.ACLs[0].ResourceName != "t1" {
		t.Fatalf("acls: %+v", im.ACLs)
	}
	before := im
	im, _ = im.Apply(2, Batch{Records: []Record{
		{Type: SetClientQuotas, QuotaEntity: "user/alice"},
		{Type: RemoveACLs, ACLs: []ACL{acl("t1"), acl("absent")}},
	}})
	if len(im.ClientQuotas) != 1 || len(im.ACLs) != 1 || im.ACLs[0].ResourceName != "t2" {
		t.Fatalf("after removal: %+v %+v", im.ClientQuotas, im.ACLs)
	}
	if len(before.ClientQuotas) != 2 || len(before.ACLs) != 2 {
		t.Fatal("the previous image changed")
	}
	// Snapshots carry both.
	s := NewStore()
	s.publish(im)
	data, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	s2 := NewStore()
	if err := s2.Restore(data); err != nil {
		t.Fatal(err)
	}
	if got := s2.Image(); len(got.ClientQuotas) != 1 || len(got.ACLs) != 1 {
		t.Fatalf("restored: %+v %+v", got.ClientQuotas, got.ACLs)
	}
}

package metadata

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// recordFields are the fields of Record that plainChange knows about: a
// field added to Record must be added there (a ChangePartition record with
// it set is not plain) and here.
var recordFields = []string{"Type", "Features", "ClusterID", "Broker", "BrokerID", "Epoch", "Topic",
	"TopicName", "TopicID", "Partitions", "Partition", "Change", "Entity", "Configs", "FirstProducerID",
	"ProducerIDCount", "QuotaEntity", "Quotas", "ACLs", "User", "Mechanism", "Scram", "Address",
	"Controller", "Listeners", "KRaftVersions"}

func TestRecordFieldsKnownToEncode(t *testing.T) {
	var got []string
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		got = append(got, rt.Field(i).Name)
	}
	if !slices.Equal(got, recordFields) {
		t.Fatalf("Record's fields changed:\n got %v\nwant %v\nupdate plainChange (records_encode.go) and recordFields", got, recordFields)
	}
	// Partition's fields are written by appendChange.
	var pf []string
	pt := reflect.TypeFor[Partition]()
	for i := range pt.NumField() {
		pf = append(pf, pt.Field(i).Name)
	}
	want := []string{"Replicas", "ISR", "Leader", "LeaderEpoch", "PartitionEpoch", "AddingReplicas",
		"RemovingReplicas", "ELR", "LastKnownELR"}
	if !slices.Equal(pf, want) {
		t.Fatalf("Partition's fields changed: got %v, want %v; update appendChange", pf, want)
	}
}

func randInts(r *rand.Rand) []int32 {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []int32{}
	}
	v := make([]int32, 1+r.IntN(4))
	for i := range v {
		v[i] = r.Int32N(2000) - 1
	}
	return v
}

// Batch.Encode writes what encoding/json writes, byte for byte, for
// partition changes of every shape and for the records it hands to
// encoding/json.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"orders", "", "a.b_c-D9", "with space", "<html>&", "ünï", "quote\"d", "__consumer_offsets"}
	var recs []Record
	for range 3000 {
		rec := Record{Type: ChangePartition, TopicName: names[r.IntN(len(names))], Partition: r.Int32N(3) * r.Int32N(70000)}
		for i := range rec.TopicID {
			rec.TopicID[i] = byte(r.IntN(256))
		}
		if r.IntN(10) > 0 {
			rec.Change = &Partition{Replicas: randInts(r), ISR: randInts(r), Leader: r.Int32N(5) - 1,
				LeaderEpoch: r.Int32N(1 << 30), PartitionEpoch: r.Int32N(1 << 30), AddingReplicas: randInts(r),
				RemovingReplicas: randInts(r), ELR: randInts(r), LastKnownELR: randInts(r)}
		}
		switch r.IntN(12) { // not plain: encoded by encoding/json
		case 0:
			rec.BrokerID = 3
		case 1:
			rec.Configs = map[string]string{"k": "v"}
		case 2:
			rec.Type = CreateTopic
			rec.Topic = &Topic{Name: "t", Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1}}}}
		case 3:
			rec = Record{Type: SetQuorumNode, BrokerID: 2, Address: "h:1", Controller: true}
		case 4:
			rec = Record{Type: Noop}
		}
		recs = append(recs, rec)
	}
	for _, b := range []Batch{{}, {Records: []Record{}}, {Records: recs}, {Records: recs[:1]}} {
		want, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		got := b.Encode()
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			lo := max(0, i-80)
			t.Fatalf("Encode differs from encoding/json at byte %d:\n got …%s\nwant …%s", i, got[lo:min(len(got), i+80)], want[lo:min(len(want), i+80)])
		}
		back, err := DecodeBatch(got)
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Records) != len(b.Records) {
			t.Fatalf("decoded %d records, encoded %d", len(back.Records), len(b.Records))
		}
	}
}

func BenchmarkEncodeFencingBatch(b *testing.B) {
	recs := make([]Record, 100_000)
	for i := range recs {
		recs[i] = Record{Type: ChangePartition, TopicName: "mp-topic-042", TopicID: ID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Partition: int32(i % 1000),
			Change: &Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 7, PartitionEpoch: 9}}
	}
	recs[0] = Record{Type: FenceBroker, BrokerID: 1, Epoch: 5} // as a fencing batch starts
	bt := Batch{Records: recs}
	b.Run("Encode", func(b *testing.B) {
		for b.Loop() {
			bt.Encode()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(bt)
		}
	})
}

package metadata

import (
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/quorum"
)

// Store.Apply tells OnSkip of every skipped record and OnSkipped once, with
// the count, for the whole call (a replay of a batch of 100,000 stale
// changes logs one line, not 100,000).
func TestStoreSummarizesSkippedRecords(t *testing.T) {
	s := NewStore()
	var each int
	type summary struct {
		n           int
		first, last uint64
		why         string
	}
	var sums []summary
	s.OnSkip = func(uint64, string) { each++ }
	s.OnSkipped = func(n int, first, last uint64, why string) { sums = append(sums, summary{n, first, last, why}) }
	stale := func(p int32) Record {
		return Record{Type: ChangePartition, TopicName: "t", TopicID: ID{1}, Partition: p,
			Change: &Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, PartitionEpoch: 0}}
	}
	ents := []quorum.Entry{
		{Index: 1, Data: Batch{Records: []Record{topic("t", 1, 1, 1, 1)}}.Encode()},
		{Index: 2, Data: Batch{Records: []Record{stale(0), stale(1), stale(2)}}.Encode()},
		{Index: 3, Data: []byte("not a batch")},
		{Index: 4, Data: Batch{Records: []Record{stale(1)}}.Encode()},
	}
	if err := s.Apply(ents); err != nil {
		t.Fatal(err)
	}
	if each != 5 || len(sums) != 1 {
		t.Fatalf("OnSkip heard %d records (want 5), OnSkipped %d times (want 1): %+v", each, len(sums), sums)
	}
	if g := sums[0]; g.n != 5 || g.first != 2 || g.last != 4 || !strings.Contains(g.why, "stale change of t-0") {
		t.Fatalf("summary %+v, want 5 records at offsets 2..4, first a stale change of t-0", g)
	}
	if err := s.Apply([]quorum.Entry{{Index: 5, Data: Batch{Records: []Record{reg(1, "a")}}.Encode()}}); err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 {
		t.Fatalf("OnSkipped heard an Apply that skipped nothing: %+v", sums)
	}
}

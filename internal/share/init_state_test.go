package share

import "testing"

// ShareGroupStatePartitionMetadata (record 15) round-trips through the
// group's records: the initialized partitions come back by topic, with names.
func TestStatePartitionMetadataRecord(t *testing.T) {
	g := &Group{ID: "g", Epoch: 3, members: map[string]*member{}}
	a, b := [16]byte{1}, [16]byte{2}
	g.markInitializedLocked(a, "ta", 0)
	g.markInitializedLocked(a, "ta", 2)
	g.markInitializedLocked(b, "tb", 1)
	recs := membershipRecordsLocked(g)
	if _, ok := recs[shareRecKey(recStatePartMeta, "g", "")]; !ok {
		t.Fatal("no record 15")
	}
	back, err := groupFromRecords("g", recs)
	if err != nil || back == nil {
		t.Fatalf("groupFromRecords: %v", err)
	}
	for _, c := range []struct {
		id   [16]byte
		p    int32
		want bool
	}{{a, 0, true}, {a, 1, false}, {a, 2, true}, {b, 1, true}, {b, 0, false}} {
		if got := back.isInitializedLocked(c.id, c.p); got != c.want {
			t.Fatalf("topic %x partition %d initialized %v, want %v", c.id[0], c.p, got, c.want)
		}
	}
	if back.initialized[a].name != "ta" || back.initialized[b].name != "tb" {
		t.Fatalf("names %q %q", back.initialized[a].name, back.initialized[b].name)
	}
	// A group that initialized nothing writes no record 15.
	empty := &Group{ID: "e", members: map[string]*member{}}
	if _, ok := membershipRecordsLocked(empty)[shareRecKey(recStatePartMeta, "e", "")]; ok {
		t.Fatal("record 15 for a group that initialized nothing")
	}
}

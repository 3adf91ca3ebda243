package share

import (
	"errors"
	"testing"
)

// flakyStore fails its writes while fail is set and records the others.
type flakyStore struct {
	fail   bool
	writes map[Key][][]byte
}

func (s *flakyStore) Write(k Key, value []byte) error {
	if s.fail {
		return errors.New("coordinator not available")
	}
	s.writes[k] = append(s.writes[k], value)
	return nil
}

// A deletion whose tombstone cannot be written keeps the state, so that
// DeleteShareGroupOffsets can try again and then does write the tombstone.
func TestDeleteStateKeptWhenTombstoneFails(t *testing.T) {
	st := &flakyStore{writes: map[Key][][]byte{}}
	m := New(Options{Store: st})
	k := Key{Group: "g", TopicID: [16]byte{1}, Partition: 0}
	if err := m.ResetStart(k, 8); err != nil {
		t.Fatal(err)
	}
	if n := len(st.writes[k]); n != 1 || st.writes[k][0] == nil {
		t.Fatalf("writes after ResetStart: %v", st.writes[k])
	}

	st.fail = true
	if err := m.DeleteState(k); err == nil {
		t.Fatal("DeleteState succeeded while the store fails")
	}
	if p := m.Lookup(k); p == nil {
		t.Fatal("the state was dropped although its tombstone was not written")
	} else if s, _ := p.Offsets(); s != 8 {
		t.Fatalf("kept state starts at %d, want 8", s)
	}

	st.fail = false
	if err := m.DeleteState(k); err != nil {
		t.Fatal(err)
	}
	if m.Lookup(k) != nil {
		t.Fatal("state still there after the deletion")
	}
	if w := st.writes[k]; len(w) != 2 || w[1] != nil {
		t.Fatalf("writes: %d, last tombstone %v; want the snapshot then a tombstone", len(w), w[len(w)-1] == nil)
	}
}

package metadata

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/quorum"
)

// bigBatch is a batch setting cluster id id, padded with no-ops past
// minProposedBytes.
func bigBatch(id string) Batch {
	recs := []Record{{Type: SetClusterID, ClusterID: id}}
	for range minProposedBytes / 10 {
		recs = append(recs, Record{Type: Noop})
	}
	return Batch{Records: recs}
}

// A large batch this node proposed is applied as proposed, not decoded from
// the committed bytes again; once forgotten (the proposal returned), the
// same bytes are decoded.
func TestStoreAppliesProposedBatch(t *testing.T) {
	data := bigBatch("from-bytes").Encode()
	// A stand-in for the proposer's batch that differs from data only so
	// that the test can tell which one was applied.
	proposed := bigBatch("as-proposed")

	s := NewStore()
	forget := s.Proposed(data, proposed)
	if err := s.Apply([]quorum.Entry{{Index: 1, Data: data}}); err != nil {
		t.Fatal(err)
	}
	if got := s.Image().ClusterID; got != "as-proposed" {
		t.Fatalf("cluster id %q: the committed bytes were decoded instead of applying the proposed batch", got)
	}
	forget()

	s2 := NewStore()
	s2.Proposed(data, proposed)() // proposed, then forgotten
	if err := s2.Apply([]quorum.Entry{{Index: 1, Data: data}}); err != nil {
		t.Fatal(err)
	}
	if got := s2.Image().ClusterID; got != "from-bytes" {
		t.Fatalf("cluster id %q after the proposal was forgotten, want the decoded %q", got, "from-bytes")
	}

	// Other bytes of the same length are decoded.
	s3 := NewStore()
	other := bigBatch("from-bytez").Encode()
	defer s3.Proposed(data, proposed)()
	if err := s3.Apply([]quorum.Entry{{Index: 1, Data: other}}); err != nil {
		t.Fatal(err)
	}
	if got := s3.Image().ClusterID; got != "from-bytez" {
		t.Fatalf("cluster id %q, want the decoded %q", got, "from-bytez")
	}
}

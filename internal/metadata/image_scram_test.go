package metadata

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/quorum"
)

func TestScramCredentialRecords(t *testing.T) {
	c := &ScramCredential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}
	s := NewStore()
	batch := Batch{Records: []Record{
		{Type: SetScramCredential, User: "alice", Mechanism: "SCRAM-SHA-256", Scram: c},
		{Type: SetScramCredential, User: "alice", Mechanism: "SCRAM-SHA-512", Scram: c},
		{Type: SetScramCredential, User: "bob", Mechanism: "SCRAM-SHA-256", Scram: c},
		{Type: SetScramCredential, User: "bob", Mechanism: "SCRAM-SHA-256"}, // deleted: bob is gone
		{Type: SetScramCredential, Mechanism: "SCRAM-SHA-256", Scram: c},    // skipped: no user
	}}
	if err := s.Apply([]quorum.Entry{{Index: 1, Data: batch.Encode()}}); err != nil {
		t.Fatal(err)
	}
	im := s.Image()
	if len(im.Scram) != 1 || len(im.Scram["alice"]) != 2 || im.Scram["alice"]["SCRAM-SHA-512"].Iterations != 4096 {
		t.Fatalf("image credentials: %+v", im.Scram)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewStore()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := r.Image().Scram["alice"]["SCRAM-SHA-256"]; string(got.StoredKey) != "k" || got.Iterations != 4096 {
		t.Fatalf("after restore: %+v", r.Image().Scram)
	}
}

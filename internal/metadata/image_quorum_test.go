package metadata

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/quorum"
)

// Quorum members' addresses are metadata: applied in order, refused when
// malformed, and carried by snapshots.
func TestQuorumNodeRecords(t *testing.T) {
	im, skipped := apply(t, Empty(), 3,
		Record{Type: SetQuorumNode, BrokerID: 4, Address: "10.0.0.4:9093"},
		Record{Type: SetQuorumNode, BrokerID: 5, Address: "no port", Controller: true},
		Record{Type: SetQuorumNode, BrokerID: 0, Address: "h:1"})
	if len(skipped) != 2 {
		t.Fatalf("skipped %v, want the bad address and the bad id", skipped)
	}
	im, skipped = apply(t, im, 4, Record{Type: SetQuorumNode, BrokerID: 4, Address: "10.0.0.44:9093", Controller: true})
	if q, ok := im.QuorumNode(4); len(skipped) != 0 || !ok || q.Address != "10.0.0.44:9093" || !q.Controller {
		t.Fatalf("node 4: %+v %v (skipped %v)", q, ok, skipped)
	}
	s := NewStore()
	if err := s.Apply([]quorum.Entry{{Index: 1, Data: Batch{Records: []Record{{Type: SetQuorumNode, BrokerID: 7, Address: "h:7"}}}.Encode()}}); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewStore()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if q, ok := r.Image().QuorumNode(7); !ok || q.Address != "h:7" {
		t.Fatalf("after restore: %+v %v", q, ok)
	}
}

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

// A voter's endpoints and kraft.version range (UpdateRaftVoter) are kept
// with its address, checked, and carried by snapshots.
func TestQuorumNodeListeners(t *testing.T) {
	ls := []QuorumListener{{Name: "CONTROLLER", Host: "10.0.0.2", Port: 9093}, {Name: "CONTROLLER2", Host: "h2", Port: 9094}}
	im, skipped := apply(t, Empty(), 3,
		Record{Type: SetQuorumNode, BrokerID: 2, Address: "10.0.0.2:9093", Controller: true, Listeners: ls,
			KRaftVersions: &VersionRange{Min: 0, Max: 1}},
		Record{Type: SetQuorumNode, BrokerID: 3, Address: "h:3", Listeners: []QuorumListener{{Name: "C", Host: "h"}}},
		Record{Type: SetQuorumNode, BrokerID: 3, Address: "h:3", Listeners: []QuorumListener{{Name: "C", Host: "h", Port: 1}, {Name: "C", Host: "h", Port: 2}}},
		Record{Type: SetQuorumNode, BrokerID: 3, Address: "h:3", KRaftVersions: &VersionRange{Min: 1, Max: 0}})
	if len(skipped) != 3 {
		t.Fatalf("skipped %v, want the port-less listener, the duplicate name and the bad range", skipped)
	}
	want := QuorumNode{Address: "10.0.0.2:9093", Controller: true, Listeners: ls, KRaftVersions: &VersionRange{Min: 0, Max: 1}}
	if q, ok := im.QuorumNode(2); !ok || !q.Equal(want) {
		t.Fatalf("node 2: %+v %v", q, ok)
	}
	if _, ok := im.QuorumNode(3); ok {
		t.Fatal("a refused record was applied")
	}
	s := NewStore()
	rec := Record{Type: SetQuorumNode, BrokerID: 2, Address: want.Address, Controller: true, Listeners: ls, KRaftVersions: want.KRaftVersions}
	if err := s.Apply([]quorum.Entry{{Index: 1, Data: Batch{Records: []Record{rec}}.Encode()}}); err != nil {
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
	if q, ok := r.Image().QuorumNode(2); !ok || !q.Equal(want) {
		t.Fatalf("after restore: %+v %v", q, ok)
	}
	if want.Equal(QuorumNode{Address: want.Address, Controller: true, Listeners: ls}) {
		t.Fatal("Equal ignores the kraft.version range")
	}
}

// UnregisterController removes a controller's quorum-node record; a node
// without one, or registered without the controller role, is skipped.
func TestUnregisterControllerRecord(t *testing.T) {
	im, skipped := apply(t, Empty(), 3,
		Record{Type: SetQuorumNode, BrokerID: 2, Address: "h:2", Controller: true},
		Record{Type: SetQuorumNode, BrokerID: 4, Address: "h:4"})
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	im, skipped = apply(t, im, 4,
		Record{Type: UnregisterController, BrokerID: 4},
		Record{Type: UnregisterController, BrokerID: 9},
		Record{Type: UnregisterController, BrokerID: 2})
	if len(skipped) != 2 {
		t.Fatalf("skipped %v, want the broker-only node and the unknown id", skipped)
	}
	if _, ok := im.QuorumNode(2); ok {
		t.Fatal("controller 2 is still registered")
	}
	if _, ok := im.QuorumNode(4); !ok {
		t.Fatal("broker-only node 4 lost its quorum-node record")
	}
	if _, skipped = apply(t, im, 5, Record{Type: UnregisterController, BrokerID: 2}); len(skipped) != 1 {
		t.Fatalf("unregistering twice: skipped %v, want one", skipped)
	}
}

package metadata

import (
	"errors"
	"testing"

	"github.com/sluice-broker/sluice/internal/quorum"
)

// A prefetched snapshot is restored as decoded ahead when Restore is given
// the same bytes; other bytes, or a failed read, are decoded by Restore.
func TestStoreUsesPrefetchedSnapshot(t *testing.T) {
	snap := func(clusterID string) []byte {
		s := NewStore()
		b := Batch{Records: []Record{{Type: SetClusterID, ClusterID: clusterID}, reg(1, "a"), topic("t", 2, 1, 1)}}
		if err := s.Apply([]quorum.Entry{{Index: 3, Data: b.Encode()}}); err != nil {
			t.Fatal(err)
		}
		data, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b := snap("a"), snap("b")

	// Same bytes: the prefetched image itself is published.
	p := Prefetch(func() ([]byte, error) { return a, nil })
	s := NewStore()
	s.UsePrefetched(p)
	if err := s.Restore(a); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if s.Image() != p.im || s.Image().ClusterID != "a" || len(s.Image().Topics) != 1 {
		t.Fatalf("restored %+v; want the prefetched image", s.Image())
	}

	// Other bytes (the log moved on between the peek and the start).
	p = Prefetch(func() ([]byte, error) { return a, nil })
	s = NewStore()
	s.UsePrefetched(p)
	if err := s.Restore(b); err != nil {
		t.Fatal(err)
	}
	if s.Image() == p.im || s.Image().ClusterID != "b" {
		t.Fatalf("restored cluster %q; want b, decoded from Restore's bytes", s.Image().ClusterID)
	}

	// A failed read, and a prefetch used once only.
	p = Prefetch(func() ([]byte, error) { return nil, errors.New("disk") })
	s = NewStore()
	s.UsePrefetched(p)
	if err := s.Restore(a); err != nil || s.Image().ClusterID != "a" {
		t.Fatalf("after a failed prefetch: %v, cluster %q", err, s.Image().ClusterID)
	}
	if err := s.Restore(b); err != nil || s.Image().ClusterID != "b" {
		t.Fatalf("second restore: %v, cluster %q", err, s.Image().ClusterID)
	}
	if err := s.Restore([]byte("not json")); err == nil {
		t.Fatal("an undecodable snapshot restored")
	}
}

package log

import (
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
)

// orderGuard is a TxnGuard that records, for each call, the log end
// offset a reader could see at that moment.
type orderGuard struct {
	l          *Log
	fu         int64
	beginSeen  []int64 // log end seen when a transaction's first batch was applied
	markerSeen []int64 // log end seen when a marker was applied
}

func (g *orderGuard) Check(batch.Header) (bool, int64, int64, error) { return false, 0, 0, nil }
func (g *orderGuard) Appended(h batch.Header) {
	g.beginSeen = append(g.beginSeen, g.l.LogEndOffset())
	if h.IsTransactional() && g.fu < 0 {
		g.fu = h.BaseOffset
	}
}
func (g *orderGuard) CheckCoordinator(batch.Header) error { return nil }
func (g *orderGuard) CheckMarker(batch.Marker) error      { return nil }
func (g *orderGuard) PendingCompletion(batch.Marker, int64) (CompletedTxn, int64, bool) {
	return CompletedTxn{}, 0, false
}
func (g *orderGuard) MarkerAppended(_ batch.Marker, off int64) {
	g.markerSeen = append(g.markerSeen, g.l.LogEndOffset())
	g.fu = -1
}
func (g *orderGuard) FirstUnstableOffset() int64 { return g.fu }

// A transaction's first batch reaches the producer state before the new
// log end is published (it is never readable above the last stable
// offset), its marker after (a transaction is never stable before its
// marker is below the high watermark, as in Kafka).
func TestTxnGuardOrdering(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	l := e.log()
	g := &orderGuard{l: l, fu: -1}
	l.SetProducerGuard(g)
	b := batch.NewBuilder()
	b.Attributes = batch.AttrTransactional
	b.ProducerID, b.BaseSequence = 5, 0
	b.AddAt(1, []byte("k"), []byte("v"))
	data, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(data, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	m := batch.NewMarkerBatch(batch.Marker{ProducerID: 5, Type: batch.ControlCommit})
	if _, err := l.Append(m, AppendOptions{AllowControl: true}); err != nil {
		t.Fatal(err)
	}
	if len(g.beginSeen) != 1 || g.beginSeen[0] != 0 {
		t.Fatalf("first batch applied with the log end at %v, want 0 (before its publication)", g.beginSeen)
	}
	if len(g.markerSeen) != 1 || g.markerSeen[0] != 2 {
		t.Fatalf("marker applied with the log end at %v, want 2 (after its publication)", g.markerSeen)
	}
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d", lso)
	}
}

package batch

import "testing"

func TestMarkerRoundTrip(t *testing.T) {
	for _, typ := range []ControlType{ControlAbort, ControlCommit} {
		m := Marker{ProducerID: 4242, ProducerEpoch: 7, Type: typ, CoordinatorEpoch: 3, Timestamp: 1700000000123}
		b := NewMarkerBatch(m)
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.BaseSequence != -1 || h.LastOffsetDelta != 0 {
			t.Fatalf("%v: header %+v", typ, h)
		}
		if err := Validate(b, ValidateOptions{AllowControl: true, CheckRecords: true}); err != nil {
			t.Fatalf("%v: marker does not validate: %v", typ, err)
		}
		got, err := ParseMarker(b, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got != m {
			t.Fatalf("round trip: got %+v want %+v", got, m)
		}
	}
}

func TestParseMarkerRejects(t *testing.T) {
	data := NewBatch(0, 1, KV{Key: []byte("k"), Value: []byte("v")})
	if _, err := ParseMarker(data, 1<<20); err == nil {
		t.Fatal("a data batch parsed as a marker")
	}
	b := NewBuilder()
	b.Attributes = AttrTransactional | AttrControl
	b.AddAt(0, []byte{0, 0, 0, 9}, []byte{0, 0, 0, 0, 0, 0})
	bad, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMarker(bad, 1<<20); err == nil {
		t.Fatal("unknown control type accepted")
	}
	b.Reset()
	b.Attributes = AttrTransactional | AttrControl
	b.AddAt(0, []byte{0}, nil)
	short, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMarker(short, 1<<20); err == nil {
		t.Fatal("short control key accepted")
	}
}

package batch

import (
	"bytes"
	"errors"
	"testing"
)

func TestNewBatch(t *testing.T) {
	b := NewBatch(500, 1234, KV{Key: []byte("a"), Value: []byte("1")}, KV{Key: nil, Value: nil})
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 500 || h.BaseTimestamp != 1234 || h.MaxTimestamp != 1234 || h.RecordCount != 2 ||
		h.LastOffsetDelta != 1 || h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 ||
		h.PartitionLeaderEpoch != -1 || h.Attributes != 0 || h.LastOffset() != 501 {
		t.Fatalf("header %+v", h)
	}
	if err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, _ := Records(b, 0)
	sameRecords(t, recs, []Record{{Key: []byte("a"), Value: []byte("1")}, {OffsetDelta: 1}})
}

func TestBuilderOffsetsAndTimestamps(t *testing.T) {
	bd := NewBuilder()
	bd.BaseTimestamp = 1000
	bd.AddAt(1005, []byte("a"), nil)
	bd.AddAt(990, []byte("b"), nil)
	bd.Add(Record{OffsetDelta: 42, TimestampDelta: 2, Key: []byte("c")}) // OffsetDelta replaced by index
	b, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(b)
	if h.MaxTimestamp != 1005 || h.LastOffsetDelta != 2 {
		t.Fatalf("header %+v", h)
	}
	s, err := Inspect(b, ValidateOptions{})
	if err != nil || s.MinTimestamp != 990 || s.MaxTimestamp != 1005 {
		t.Fatalf("summary %+v %v", s, err)
	}
	recs, _ := Records(b, 0)
	for i, r := range recs {
		if r.OffsetDelta != int32(i) {
			t.Fatalf("record %d offset delta %d", i, r.OffsetDelta)
		}
	}

	// Reuse after Reset; LogAppendTime takes MaxTimestamp as given.
	bd.Reset()
	bd.Attributes = 0x08
	bd.MaxTimestamp = 77
	bd.Add(Record{Value: []byte("v"), TimestampDelta: 5})
	b, _ = bd.Build()
	h, _ = ParseHeader(b)
	if bd.Len() != 1 || h.MaxTimestamp != 77 || h.TimestampType() != LogAppendTime || h.RecordCount != 1 {
		t.Fatalf("header %+v", h)
	}
	if err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Explicit deltas must increase.
	bd = NewBuilder()
	bd.ExplicitOffsetDeltas = true
	bd.Add(Record{OffsetDelta: 3})
	bd.Add(Record{OffsetDelta: 3})
	if _, err := bd.Build(); err == nil {
		t.Fatal("repeated offset delta accepted")
	}
	bd.Reset()
	bd.Add(Record{OffsetDelta: -1})
	if _, err := bd.Build(); err == nil {
		t.Fatal("negative offset delta accepted")
	}

	bd = NewBuilder()
	bd.Compression = 5
	if _, err := bd.Build(); err == nil {
		t.Fatal("unknown codec accepted")
	}
	bd.Compression = None
	bd.BaseTimestamp = 1 << 62
	bd.Add(Record{TimestampDelta: 1 << 62})
	if _, err := bd.Build(); err == nil {
		t.Fatal("timestamp overflow accepted")
	}
}

func TestBuilderAttributesAndCodecBits(t *testing.T) {
	bd := NewBuilder()
	bd.Attributes = 0x07 | 0x40 // codec bits ignored, delete horizon kept
	bd.Compression = Snappy
	bd.Add(Record{Key: []byte("k")})
	b, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(b)
	if h.Compression() != Snappy || !h.HasDeleteHorizon() {
		t.Fatalf("attributes %#x", h.Attributes)
	}
	if err := Validate(b, ValidateOptions{CheckRecords: true}); err != nil {
		t.Fatal(err)
	}
}

func TestRecordsAliasingAndIteration(t *testing.T) {
	b := NewBatch(0, 1, KV{Key: []byte("key1"), Value: []byte("val1")}, KV{Key: []byte("key2"), Value: []byte("val2")})
	recs, err := Records(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Key aliases the batch, with capacity clipped so append cannot overwrite the value.
	if cap(recs[0].Key) != len(recs[0].Key) {
		t.Fatal("key capacity not clipped")
	}
	_ = append(recs[0].Key, 'X')
	if !bytes.Equal(recs[0].Value, []byte("val1")) {
		t.Fatal("append to key clobbered the batch")
	}
	stop := errors.New("stop")
	n := 0
	err = ForEachRecord(b, 0, func(r *Record) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("ForEachRecord: %v after %d", err, n)
	}
	// Records and ForEachRecord check the batch envelope too.
	_, err = Records(b[:len(b)-1], 0)
	wantCode(t, err, CorruptMessage)
	_, err = Records(append(append([]byte(nil), b...), 0), 0)
	wantCode(t, err, CorruptMessage)
	err = ForEachRecord(b[:30], 0, func(*Record) error { return nil })
	wantCode(t, err, CorruptMessage)
}

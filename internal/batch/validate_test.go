package batch

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestValidateAcceptsBuilt(t *testing.T) {
	for _, c := range []Compression{None, Gzip, Snappy, LZ4, Zstd} {
		b := buildRecords(t, c, 1_700_000_000_000, sampleRecords(23))
		for _, opts := range []ValidateOptions{{}, {CheckRecords: true}, {FromLog: true, CheckRecords: true}} {
			s, err := Inspect(b, opts)
			if err != nil {
				t.Fatalf("%s %+v: %v", c, opts, err)
			}
			walked := c == None || opts.CheckRecords
			if s.RecordsChecked != walked {
				t.Fatalf("%s: RecordsChecked %v", c, s.RecordsChecked)
			}
			if walked && (s.MinTimestamp != 1_700_000_000_000-5 || s.MaxTimestamp != 1_700_000_000_000+1<<40) {
				t.Fatalf("%s: timestamps %d..%d", c, s.MinTimestamp, s.MaxTimestamp)
			}
		}
	}
}

func TestValidateHeaderErrors(t *testing.T) {
	good := buildRecords(t, None, 10, sampleRecords(3))
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	fixCRC := func(f func(b []byte)) []byte {
		return mut(func(b []byte) { f(b); UpdateCRC(b) })
	}
	cases := []struct {
		name string
		b    []byte
		opts ValidateOptions
		code ErrorCode
	}{
		{"flipped value byte", mut(func(b []byte) { b[len(b)-3] ^= 0x40 }), ValidateOptions{}, CorruptMessage},
		{"flipped crc", mut(func(b []byte) { b[OffCRC] ^= 1 }), ValidateOptions{}, CorruptMessage},
		{"flipped attributes", mut(func(b []byte) { b[OffAttributes+1] ^= 0x10 }), ValidateOptions{}, CorruptMessage},
		{"trailing byte", append(append([]byte(nil), good...), 0), ValidateOptions{}, CorruptMessage},
		{"short", good[:len(good)-1], ValidateOptions{}, CorruptMessage},
		{"magic 1", mut(func(b []byte) { b[OffMagic] = 1 }), ValidateOptions{}, UnsupportedForMessageFormat},
		{"codec 5", fixCRC(func(b []byte) { b[OffAttributes+1] |= 5 }), ValidateOptions{}, UnsupportedCompressionType},
		{"count 0", fixCRC(func(b []byte) {
			binary.BigEndian.PutUint32(b[OffRecordCount:], 0)
			binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 0xffffffff)
		}), ValidateOptions{}, InvalidRecord},
		{"count negative", fixCRC(func(b []byte) { binary.BigEndian.PutUint32(b[OffRecordCount:], 0xfffffff0) }), ValidateOptions{FromLog: true}, InvalidRecord},
		{"last delta mismatch", fixCRC(func(b []byte) { binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 3) }), ValidateOptions{}, InvalidRecord},
		{"count too high", fixCRC(func(b []byte) {
			binary.BigEndian.PutUint32(b[OffRecordCount:], 4)
			binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 3)
		}), ValidateOptions{}, InvalidRecord},
		{"count too low", fixCRC(func(b []byte) {
			binary.BigEndian.PutUint32(b[OffRecordCount:], 2)
			binary.BigEndian.PutUint32(b[OffLastOffsetDelta:], 1)
		}), ValidateOptions{}, InvalidRecord},
		{"control from client", fixCRC(func(b []byte) { b[OffAttributes+1] |= 0x20 }), ValidateOptions{}, InvalidRecord},
		{"producer without sequence", fixCRC(func(b []byte) { binary.BigEndian.PutUint64(b[OffProducerID:], 7) }), ValidateOptions{}, InvalidRecord},
		{"transactional without producer", fixCRC(func(b []byte) { b[OffAttributes+1] |= 0x10 }), ValidateOptions{}, InvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, Validate(c.b, c.opts), c.code)
		})
	}
	// A header MaxTimestamp that disagrees with the records is tolerated (as
	// Kafka does); the summary reports the records' own latest timestamp.
	skew := fixCRC(func(b []byte) { binary.BigEndian.PutUint64(b[OffMaxTimestamp:], 1<<50) })
	sum, err := Inspect(skew, ValidateOptions{CheckRecords: true})
	if err != nil {
		t.Fatalf("batch with a skewed max timestamp refused: %v", err)
	}
	if sum.MaxTimestamp == 1<<50 {
		t.Fatal("summary reports the header's max timestamp instead of the records'")
	}
	// Header-level rules the log relaxes.
	ctl := fixCRC(func(b []byte) { b[OffAttributes+1] |= 0x20 })
	if err := Validate(ctl, ValidateOptions{FromLog: true}); err == nil {
		t.Fatal("control batch with short keys accepted") // sample record 1 has a null key
	}
	pid := fixCRC(func(b []byte) { binary.BigEndian.PutUint64(b[OffProducerID:], 7) })
	if err := Validate(pid, ValidateOptions{FromLog: true}); err != nil {
		t.Fatal(err)
	}
	maxTS := fixCRC(func(b []byte) { binary.BigEndian.PutUint64(b[OffMaxTimestamp:], 1<<50) })
	if err := Validate(maxTS, ValidateOptions{FromLog: true}); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRecordErrors(t *testing.T) {
	h3 := defaultRaw(3)
	h1 := defaultRaw(1)
	long := rr(0, "k", "v")
	long.key = nil
	long.keyLen = 0
	long.extra = nil
	cases := []struct {
		name string
		b    []byte
		code ErrorCode
	}{
		{"offset delta skips", rawBatch(h3, concat(rr(0, "a", "1"), rr(2, "b", "2"), rr(3, "c", "3"))), InvalidRecord},
		{"offset delta repeats", rawBatch(h3, concat(rr(0, "a", "1"), rr(0, "b", "2"), rr(1, "c", "3"))), InvalidRecord},
		{"fewer records than count", rawBatch(h3, concat(rr(0, "a", "1"), rr(1, "b", "2"))), InvalidRecord},
		{"more records than count", rawBatch(h1, concat(rr(0, "a", "1"), rr(1, "b", "2"))), InvalidRecord},
		{"trailing garbage", rawBatch(h1, append(concat(rr(0, "a", "1")), 0, 0)), InvalidRecord},
		{"no record bytes", rawBatch(h1, nil), InvalidRecord},
		{"length too long", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.lenAdj = 1; return r }())), InvalidRecord},
		{"length too short", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.lenAdj = -1; return r }())), InvalidRecord},
		{"length negative", rawBatch(h1, []byte{0x01, 0, 0, 0, 0, 0, 0}), InvalidRecord},
		{"extra byte inside record", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.extra = []byte{0}; return r }())), InvalidRecord},
		{"key length -2", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.keyLen = -2 - 1; return r }())), InvalidRecord},
		{"key length past record", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.keyLen = 50; return r }())), InvalidRecord},
		{"value length past record", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.valLen = 3; return r }())), InvalidRecord},
		{"value length huge", rawBatch(h1, concat(func() rawRecord { r := rr(0, "a", "1"); r.valLen = math.MaxInt32; return r }())), InvalidRecord},
		{"null header key", rawBatch(h1, concat(func() rawRecord {
			r := rr(0, "a", "1")
			r.headers = [][2][]byte{{nil, []byte("v")}}
			return r
		}())), InvalidRecord},
		{"varint too long", rawBatch(h1, []byte{0x0e, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0}), InvalidRecord},
		{"int32 varint over 32 bits", rawBatch(h1, []byte{0x0e, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01, 0x01, 0}), InvalidRecord},
		{"header count negative", rawBatch(h1, []byte{0x0c, 0, 0, 0, 0x01, 0x01, 0x01}), InvalidRecord},
		{"header count huge", rawBatch(h1, []byte{0x14, 0, 0, 0, 0x01, 0x01, 0xfe, 0xff, 0xff, 0xff, 0x0f}), InvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.b, ValidateOptions{})
			wantCode(t, err, c.code)
			if _, err := Records(c.b, 0); err == nil && c.name != "offset delta skips" && c.name != "offset delta repeats" {
				t.Fatal("Records accepted a malformed batch")
			}
		})
	}
	// Control for the hand encoder: the same shapes, well formed, pass.
	ok := rawBatch(h3, concat(rr(0, "a", "1"), rr(1, "\x00", "\x00"), rr(2, "", "")))
	if err := Validate(ok, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestValidateTimestampOverflow(t *testing.T) {
	h := defaultRaw(1)
	h.baseTS = math.MaxInt64 - 5
	r := rr(0, "k", "v")
	r.tsDelta = 10
	wantCode(t, Validate(rawBatch(h, concat(r)), ValidateOptions{}), InvalidTimestamp)
	h.baseTS = math.MinInt64 + 5
	r.tsDelta = -10
	wantCode(t, Validate(rawBatch(h, concat(r)), ValidateOptions{}), InvalidTimestamp)
}

func TestValidateRequireKeys(t *testing.T) {
	recs := []Record{{Key: []byte("a")}, {Key: nil, Value: []byte("x")}, {Key: []byte{}}, {Key: nil}}
	for _, c := range []Compression{None, Gzip, Zstd} {
		b := buildRecords(t, c, 1, recs)
		if err := Validate(b, ValidateOptions{}); err != nil {
			t.Fatal(err)
		}
		e := wantCode(t, Validate(b, ValidateOptions{RequireKeys: true}), InvalidRecord)
		if len(e.RecordErrors) != 2 || e.RecordErrors[0].Index != 1 || e.RecordErrors[1].Index != 3 {
			t.Fatalf("%s: record errors %+v", c, e.RecordErrors)
		}
	}
}

func TestValidateControlBatch(t *testing.T) {
	bd := NewBuilder()
	bd.Attributes = 0x20 | 0x10
	bd.ProducerID, bd.ProducerEpoch, bd.BaseSequence = 5, 1, 0
	// End-transaction marker: key = version 0, type 1 (commit); value = version, coordinator epoch.
	bd.Add(Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 3}})
	b, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, Validate(b, ValidateOptions{}), InvalidRecord)
	for _, o := range []ValidateOptions{{AllowControl: true}, {FromLog: true}, {AllowControl: true, RequireKeys: true}} {
		if err := Validate(b, o); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	bd.Reset()
	bd.Add(Record{Key: []byte{0, 0}})
	b, _ = bd.Build()
	wantCode(t, Validate(b, ValidateOptions{AllowControl: true}), InvalidRecord)
}

func TestValidateFromLogCompactedShapes(t *testing.T) {
	// A compacted batch: original base offset kept, records at deltas 2, 5, 9, last offset kept at 12.
	bd := NewBuilder()
	bd.ExplicitOffsetDeltas = true
	bd.BaseTimestamp = 100
	bd.LastOffsetDelta = 12
	bd.Add(Record{OffsetDelta: 2, Key: []byte("a"), TimestampDelta: 3})
	bd.Add(Record{OffsetDelta: 5, Key: []byte("b"), TimestampDelta: 1})
	bd.Add(Record{OffsetDelta: 9, Key: []byte("c"), TimestampDelta: 2})
	b, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(b)
	if h.LastOffsetDelta != 12 || h.RecordCount != 3 || h.MaxTimestamp != 103 {
		t.Fatalf("header %+v", h)
	}
	wantCode(t, Validate(b, ValidateOptions{}), InvalidRecord)
	if err := Validate(b, ValidateOptions{FromLog: true, RequireKeys: true}); err != nil {
		t.Fatal(err)
	}

	// An empty batch kept for producer state.
	bd = NewBuilder()
	bd.ProducerID, bd.ProducerEpoch, bd.BaseSequence = 9, 0, 40
	bd.LastOffsetDelta = 4
	bd.MaxTimestamp = 777
	empty, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, Validate(empty, ValidateOptions{}), InvalidRecord)
	if err := Validate(empty, ValidateOptions{FromLog: true, CheckRecords: true}); err != nil {
		t.Fatal(err)
	}
	if recs, err := Records(empty, 0); err != nil || len(recs) != 0 {
		t.Fatalf("Records of empty batch: %v %v", recs, err)
	}

	// Offset deltas beyond LastOffsetDelta or out of order are rejected even from the log.
	h4 := defaultRaw(2)
	h4.lastOffsetDelta = 3
	wantCode(t, Validate(rawBatch(h4, concat(rr(1, "a", "1"), rr(4, "b", "2"))), ValidateOptions{FromLog: true}), InvalidRecord)
	wantCode(t, Validate(rawBatch(h4, concat(rr(2, "a", "1"), rr(1, "b", "2"))), ValidateOptions{FromLog: true}), InvalidRecord)
	h4.count = 5
	wantCode(t, Validate(rawBatch(h4, nil), ValidateOptions{FromLog: true}), InvalidRecord)
}

func TestValidateCompressedCorruption(t *testing.T) {
	for _, c := range []Compression{Gzip, Snappy, LZ4, Zstd} {
		b := buildRecords(t, c, 1, sampleRecords(10))
		// Damage the compressed payload but keep the CRC right: only a
		// records check can notice.
		x := append([]byte(nil), b...)
		for i := HeaderSize + 20; i < len(x); i += 7 {
			x[i] ^= 0x5a
		}
		UpdateCRC(x)
		if err := Validate(x, ValidateOptions{}); err != nil {
			t.Fatalf("%s: header-only validation failed: %v", c, err)
		}
		err := Validate(x, ValidateOptions{CheckRecords: true})
		if err == nil {
			t.Fatalf("%s: corrupt payload accepted", c)
		}
		e := wantCodeIn(t, err, CorruptMessage, InvalidRecord)
		_ = e
		if _, err := Records(x, 0); err == nil {
			t.Fatalf("%s: Records accepted corrupt payload", c)
		}
		// Bound the decompressed size below the real size.
		wantCode(t, Validate(b, ValidateOptions{CheckRecords: true, MaxDecompressed: 100}), MessageTooLarge)
	}
}

func wantCodeIn(t *testing.T, err error, codes ...ErrorCode) *Error {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v (%T) is not *Error", err, err)
	}
	for _, c := range codes {
		if e.Code == c {
			return e
		}
	}
	t.Fatalf("code %s not in %v (%v)", e.Code, codes, err)
	return nil
}

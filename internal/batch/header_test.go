package batch

import (
	"encoding/binary"
	"testing"
)

func TestHeaderOffsetsMatchLayout(t *testing.T) {
	h := rawHeader{baseOffset: 0x0102030405060708, ple: 0x11121314, magic: 2, attrs: 0x2122,
		lastOffsetDelta: 0x31323334, baseTS: 0x4142434445464748, maxTS: 0x5152535455565758,
		pid: 0x6162636465666768, epoch: 0x7172, seq: 0x01020304, count: 0x0a0b0c0d}
	b := rawBatch(h, make([]byte, 10))
	got, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{BaseOffset: h.baseOffset, Length: HeaderSize - 12 + 10, PartitionLeaderEpoch: h.ple, Magic: 2,
		CRC: binary.BigEndian.Uint32(b[17:]), Attributes: h.attrs, LastOffsetDelta: h.lastOffsetDelta,
		BaseTimestamp: h.baseTS, MaxTimestamp: h.maxTS, ProducerID: h.pid, ProducerEpoch: h.epoch,
		BaseSequence: h.seq, RecordCount: h.count}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got.TotalSize() != len(b) {
		t.Fatalf("TotalSize %d, len %d", got.TotalSize(), len(b))
	}
	if got.LastOffset() != h.baseOffset+int64(h.lastOffsetDelta) {
		t.Fatalf("LastOffset %d", got.LastOffset())
	}
	if MinLength != 49 || HeaderSize != 61 {
		t.Fatalf("MinLength %d HeaderSize %d", MinLength, HeaderSize)
	}
}

func TestHeaderAttributes(t *testing.T) {
	cases := []struct {
		attrs                     int16
		c                         Compression
		ts                        TimestampType
		txn, control, deleteHoriz bool
	}{
		{0, None, CreateTime, false, false, false},
		{1, Gzip, CreateTime, false, false, false},
		{2 | 0x08, Snappy, LogAppendTime, false, false, false},
		{3 | 0x10, LZ4, CreateTime, true, false, false},
		{4 | 0x20 | 0x10, Zstd, CreateTime, true, true, false},
		{0x40, None, CreateTime, false, false, true},
		{-1, Compression(7), LogAppendTime, true, true, true},
	}
	for _, c := range cases {
		h := Header{Attributes: c.attrs}
		if h.Compression() != c.c || h.TimestampType() != c.ts || h.IsTransactional() != c.txn ||
			h.IsControl() != c.control || h.HasDeleteHorizon() != c.deleteHoriz {
			t.Errorf("attrs %#x: got %v %v %v %v %v", c.attrs, h.Compression(), h.TimestampType(), h.IsTransactional(), h.IsControl(), h.HasDeleteHorizon())
		}
	}
	if Zstd.String() != "zstd" || Compression(9).String() != "unknown" || LogAppendTime.String() != "LogAppendTime" {
		t.Fatal("String methods")
	}
}

func TestParseHeaderErrors(t *testing.T) {
	good := NewBatch(0, 1, KV{Key: []byte("k"), Value: []byte("v")})
	if _, err := ParseHeader(good); err != nil {
		t.Fatal(err)
	}
	wantCode(t, func() error { _, err := ParseHeader(good[:HeaderSize-1]); return err }(), CorruptMessage)
	wantCode(t, func() error { _, err := ParseHeader(nil); return err }(), CorruptMessage)

	for _, m := range []byte{0, 1} {
		// A v0/v1 message is often shorter than a v2 header; the magic decides.
		b := make([]byte, 30)
		b[OffMagic] = m
		_, err := ParseHeader(b)
		e := wantCode(t, err, UnsupportedForMessageFormat)
		if e.Code.KafkaCode() != 43 {
			t.Fatalf("kafka code %d", e.Code.KafkaCode())
		}
	}
	for _, m := range []byte{3, 0xff} {
		b := append([]byte(nil), good...)
		b[OffMagic] = m
		_, err := ParseHeader(b)
		wantCode(t, err, CorruptMessage)
	}
	b := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(b[OffLength:], 48)
	_, err := ParseHeader(b)
	wantCode(t, err, CorruptMessage)
	binary.BigEndian.PutUint32(b[OffLength:], 0x80000000)
	_, err = ParseHeader(b)
	wantCode(t, err, CorruptMessage)
}

func TestErrorCodes(t *testing.T) {
	want := map[ErrorCode]int16{CorruptMessage: 2, InvalidRecord: 87, UnsupportedForMessageFormat: 43,
		MessageTooLarge: 10, InvalidTimestamp: 32, UnsupportedCompressionType: 76, ErrorCode(0): -1}
	for c, k := range want {
		if c.KafkaCode() != k {
			t.Errorf("%s: KafkaCode %d, want %d", c, c.KafkaCode(), k)
		}
	}
	e := &Error{Code: InvalidRecord, Msg: "m", RecordErrors: []RecordError{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}, {5, "e"}}}
	if s := e.Error(); s != "batch: INVALID_RECORD: m; record 1: a; record 2: b; record 3: c (and 2 more)" {
		t.Fatalf("Error() = %q", s)
	}
}

func TestInPlaceRewrites(t *testing.T) {
	b := buildRecords(t, None, 5000, sampleRecords(6))
	crc := ComputeCRC(b)

	SetBaseOffset(b, 123456789)
	SetPartitionLeaderEpoch(b, 42)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 123456789 || h.PartitionLeaderEpoch != 42 || h.CRC != crc || ComputeCRC(b) != crc {
		t.Fatalf("after offset/epoch rewrite: %+v, crc %08x", h, ComputeCRC(b))
	}
	if err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}

	SetLogAppendTime(b, 99999)
	h, _ = ParseHeader(b)
	if h.TimestampType() != LogAppendTime || h.MaxTimestamp != 99999 || h.Compression() != None {
		t.Fatalf("after SetLogAppendTime: %+v", h)
	}
	if h.CRC == crc || h.CRC != ComputeCRC(b) {
		t.Fatalf("CRC not recomputed: %08x vs %08x", h.CRC, ComputeCRC(b))
	}
	s, err := Inspect(b, ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.MinTimestamp != 99999 || s.MaxTimestamp != 99999 {
		t.Fatalf("summary timestamps %d %d", s.MinTimestamp, s.MaxTimestamp)
	}
	recs, err := Records(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if h.Timestamp(&r) != 99999 {
			t.Fatalf("record timestamp %d", h.Timestamp(&r))
		}
	}
	if h.Offset(&recs[3]) != 123456789+3 {
		t.Fatal("Offset")
	}
}

package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

// wantCode fails t unless err is an *Error with code want.
func wantCode(t *testing.T, err error, want ErrorCode) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want *Error with %s", err, err, want)
	}
	if e.Code != want {
		t.Fatalf("got code %s (%v), want %s", e.Code, err, want)
	}
	return e
}

// rawHeader describes a batch header for rawBatch; Length and CRC are computed.
type rawHeader struct {
	baseOffset      int64
	ple             int32
	magic           int8
	attrs           int16
	lastOffsetDelta int32
	baseTS, maxTS   int64
	pid             int64
	epoch           int16
	seq             int32
	count           int32
}

func defaultRaw(count int32) rawHeader {
	return rawHeader{magic: 2, lastOffsetDelta: count - 1, pid: -1, epoch: -1, seq: -1, count: count, ple: -1}
}

// rawBatch writes h followed by records verbatim and a correct CRC, without
// any of the Builder's checks, so tests can produce any malformed batch.
func rawBatch(h rawHeader, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(h.baseOffset))
	be.PutUint32(b[8:], uint32(HeaderSize-12+len(records)))
	be.PutUint32(b[12:], uint32(h.ple))
	b[16] = byte(h.magic)
	be.PutUint16(b[21:], uint16(h.attrs))
	be.PutUint32(b[23:], uint32(h.lastOffsetDelta))
	be.PutUint64(b[27:], uint64(h.baseTS))
	be.PutUint64(b[35:], uint64(h.maxTS))
	be.PutUint64(b[43:], uint64(h.pid))
	be.PutUint16(b[51:], uint16(h.epoch))
	be.PutUint32(b[53:], uint32(h.seq))
	be.PutUint32(b[57:], uint32(h.count))
	b = append(b, records...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawRecord encodes one record by hand. keyLen/valLen of -2 mean "use
// len(key)/len(val), or -1 when nil"; other values are written as given.
type rawRecord struct {
	attrs    int8
	tsDelta  int64
	offDelta int32
	key, val []byte
	keyLen   int64
	valLen   int64
	headers  [][2][]byte // key, value (nil value = null)
	extra    []byte      // appended to the body, counted in the length
	lenAdj   int64       // added to the length field
}

func rr(off int32, key, val string) rawRecord {
	r := rawRecord{offDelta: off, keyLen: -2, valLen: -2}
	if key != "\x00" {
		r.key = []byte(key)
	}
	if val != "\x00" {
		r.val = []byte(val)
	}
	return r
}

func (r rawRecord) encode() []byte {
	var body []byte
	body = append(body, byte(r.attrs))
	body = binary.AppendVarint(body, r.tsDelta)
	body = binary.AppendVarint(body, int64(r.offDelta))
	field := func(n int64, v []byte) {
		if n == -2 {
			n = int64(len(v))
			if v == nil {
				n = -1
			}
		}
		body = binary.AppendVarint(body, n)
		body = append(body, v...)
	}
	field(r.keyLen, r.key)
	field(r.valLen, r.val)
	body = binary.AppendVarint(body, int64(len(r.headers)))
	for _, h := range r.headers {
		field(-2, h[0])
		field(-2, h[1])
	}
	body = append(body, r.extra...)
	out := binary.AppendVarint(nil, int64(len(body))+r.lenAdj)
	return append(out, body...)
}

func concat(rs ...rawRecord) []byte {
	var out []byte
	for _, r := range rs {
		out = append(out, r.encode()...)
	}
	return out
}

// sampleRecords is a varied set of records: null/empty keys and values,
// headers with null values, negative and large timestamp deltas.
func sampleRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = int64(i * 7)
		switch i % 5 {
		case 0:
			r.Key, r.Value = []byte(fmt.Sprintf("key-%d", i)), bytes.Repeat([]byte{byte(i)}, i*13)
		case 1:
			r.Key, r.Value = nil, []byte("no key")
		case 2:
			r.Key, r.Value = []byte{}, nil // empty key, tombstone
			r.TimestampDelta = -5
		case 3:
			r.Key, r.Value = []byte("k"), []byte{}
			r.Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}
		case 4:
			r.Key, r.Value = []byte(fmt.Sprintf("big-%d", i)), bytes.Repeat([]byte("abcdefgh"), 300)
			r.Attributes = 0
			r.TimestampDelta = 1 << 40
		}
	}
	return recs
}

func buildRecords(t testing.TB, c Compression, baseTS int64, recs []Record) []byte {
	t.Helper()
	bd := NewBuilder()
	bd.Compression = c
	bd.BaseTimestamp = baseTS
	bd.BaseOffset = 1000
	for _, r := range recs {
		bd.Add(r)
	}
	out, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameRecords compares records field by field, telling nil from empty.
func sameRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Attributes != w.Attributes || g.TimestampDelta != w.TimestampDelta || g.OffsetDelta != w.OffsetDelta {
			t.Fatalf("record %d: got attrs/ts/off %d/%d/%d, want %d/%d/%d", i, g.Attributes, g.TimestampDelta, g.OffsetDelta, w.Attributes, w.TimestampDelta, w.OffsetDelta)
		}
		sameBytes(t, fmt.Sprintf("record %d key", i), g.Key, w.Key)
		sameBytes(t, fmt.Sprintf("record %d value", i), g.Value, w.Value)
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key {
				t.Fatalf("record %d header %d key %q, want %q", i, j, g.Headers[j].Key, w.Headers[j].Key)
			}
			sameBytes(t, fmt.Sprintf("record %d header %d value", i, j), g.Headers[j].Value, w.Headers[j].Value)
		}
	}
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%s: got %q (nil %v), want %q (nil %v)", what, got, got == nil, want, want == nil)
	}
}

package batch

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// walkSections returns record sections (with their headers) that exercise
// every varint width walkProduce decodes in line or not: one- to three-byte
// offset deltas, negative and 64-bit timestamp deltas, null and empty keys,
// values and header values, and records of 100 bytes.
func walkSections(t testing.TB) [][]byte {
	var out [][]byte
	out = append(out, buildRecords(t, None, 1_700_000_000_000, sampleRecords(12)))
	bd := NewBuilder()
	bd.BaseTimestamp = 1_700_000_000_000
	val := bytes.Repeat([]byte("v"), 100)
	for i := range 9000 { // offset deltas up to three bytes
		bd.AddAt(bd.BaseTimestamp+int64(i%300)-150, []byte(fmt.Sprintf("key-%d", i)), val)
	}
	b, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, b)
	// The shape walkSmallRecords takes, small enough to seed the fuzzer:
	// one- and two-byte record and value lengths and offset deltas, null
	// and present keys, timestamp deltas of both signs.
	for _, n := range []struct{ records, value int }{{70, 20}, {30, 100}} {
		bd = NewBuilder()
		bd.BaseTimestamp = 1_700_000_000_000
		for i := range n.records {
			var key []byte
			if i%7 != 3 {
				key = []byte(fmt.Sprintf("k%d", i))
			}
			bd.AddAt(bd.BaseTimestamp+int64(i%9)-4, key, bytes.Repeat([]byte("s"), n.value))
		}
		if b, err = bd.Build(); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	bd = NewBuilder()
	bd.BaseTimestamp = math.MaxInt64 - 10
	bd.AddAt(math.MaxInt64, nil, nil, RecordHeader{Key: "k", Value: bytes.Repeat([]byte("h"), 200)})
	bd.AddAt(bd.BaseTimestamp, []byte{}, []byte{})
	if b, err = bd.Build(); err != nil {
		t.Fatal(err)
	}
	return append(out, b)
}

// agree checks that walkProduce accepts exactly what the full walk accepts,
// with the same timestamps, for the record section of the valid-header
// batch b, with and without the compacted-topic key rule. Control batches
// never take the fast walk.
func agree(t *testing.T, b []byte) {
	t.Helper()
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.IsControl() {
		return
	}
	data := b[HeaderSize:]
	for _, keys := range []bool{false, true} {
		minTS, maxTS, ok := walkProduce(data, int(h.RecordCount), h.BaseTimestamp, keys)
		wantMin, wantMax, werr := walkRecords(data, h, ValidateOptions{RequireKeys: keys})
		if ok != (werr == nil) {
			t.Fatalf("keys %v: fast walk ok=%v, full walk: %v", keys, ok, werr)
		}
		if ok && (minTS != wantMin || maxTS != wantMax) {
			t.Fatalf("keys %v: fast walk timestamps %d..%d, full walk %d..%d", keys, minTS, maxTS, wantMin, wantMax)
		}
		// The CRC and the walk in turns (Inspect's path for uncompressed
		// batches) give the same answer and the batch's CRC.
		if h.Compression() == None {
			crc, lo, hi, cok := crcWalk(b, int(h.RecordCount), h.BaseTimestamp, keys)
			if crc != ComputeCRC(b) || cok != ok || (ok && (lo != minTS || hi != maxTS)) {
				t.Fatalf("keys %v: crcWalk crc %08x ok %v %d..%d; ComputeCRC %08x, walkProduce ok %v %d..%d",
					keys, crc, cok, lo, hi, ComputeCRC(b), ok, minTS, maxTS)
			}
		}
		// From a log the full walk also takes gaps in the offset deltas, so
		// only the one direction holds: what the lean walk takes, it takes.
		if ok && int64(h.RecordCount) <= int64(h.LastOffsetDelta)+1 {
			logMin, logMax, err := walkRecords(data, h, ValidateOptions{RequireKeys: keys, FromLog: true})
			if err != nil || logMin != minTS || logMax != maxTS {
				t.Fatalf("keys %v: fast walk takes %d..%d, full walk from a log: %d..%d, %v", keys, minTS, maxTS, logMin, logMax, err)
			}
		}
	}
}

func TestWalkProduceAgreesWithFullWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	for n, b := range walkSections(t) {
		// The valid sections take the fast path.
		h, _ := ParseHeader(b)
		if _, _, ok := walkProduce(b[HeaderSize:], int(h.RecordCount), h.BaseTimestamp, false); !ok {
			t.Fatalf("section %d: the fast walk rejects a valid batch", n)
		}
		agree(t, b)
		// Damaged sections: both walks must reject or accept alike.
		tries := 3000
		if len(b) > 64<<10 {
			tries = 100
		}
		for range tries {
			x := append([]byte(nil), b...)
			switch rng.IntN(4) {
			case 0: // flip one byte
				p := HeaderSize + rng.IntN(len(x)-HeaderSize)
				x[p] ^= byte(1 + rng.IntN(255))
			case 1: // set one byte to a varint-significant value
				p := HeaderSize + rng.IntN(len(x)-HeaderSize)
				x[p] = []byte{0x00, 0x01, 0x7f, 0x80, 0xff}[rng.IntN(5)]
			case 2: // cut the tail
				x = x[:HeaderSize+rng.IntN(len(x)-HeaderSize)]
			case 3: // grow a byte in the middle
				p := HeaderSize + rng.IntN(len(x)-HeaderSize)
				x = append(x[:p], append([]byte{byte(rng.IntN(256))}, x[p:]...)...)
			}
			agree(t, x)
		}
	}
}

// TestWalkSmallRecordsTakesSmallRecords checks that the word-at-a-time loop
// takes every record of the shape it is for (it would be correct, and slow,
// if it took none), and stops at the first one it is not for.
func TestWalkSmallRecordsTakesSmallRecords(t *testing.T) {
	bd := NewBuilder()
	bd.BaseTimestamp = 1_700_000_000_000
	val := bytes.Repeat([]byte("x"), 100)
	for i := range 140 {
		bd.AddAt(bd.BaseTimestamp+int64(i%5), []byte(fmt.Sprintf("key-%04d", i)), val)
	}
	bd.AddAt(bd.BaseTimestamp, []byte("h"), val, RecordHeader{Key: "k", Value: []byte("v")})
	b, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(b)
	data := b[HeaderSize:]
	n, p, lo, hi := walkSmallRecords(data, 0, 0, int(h.RecordCount), len(data)+1, h.BaseTimestamp, true)
	if n != 140 || lo != bd.BaseTimestamp || hi != bd.BaseTimestamp+4 {
		t.Fatalf("took %d records (timestamps %d..%d), want 140 (%d..%d)", n, lo, hi, bd.BaseTimestamp, bd.BaseTimestamp+4)
	}
	if _, q := varint32At(data, p); q < 0 || p >= len(data) {
		t.Fatalf("stopped at %d of %d, not at a record", p, len(data))
	}
	if _, _, ok := walkProduce(data, int(h.RecordCount), h.BaseTimestamp, true); !ok {
		t.Fatal("walkProduce rejects the batch")
	}
}

// FuzzWalkProduce checks the same agreement on arbitrary record sections.
func FuzzWalkProduce(f *testing.F) {
	for _, b := range walkSections(f) {
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseHeader(b); err != nil {
			return
		}
		agree(t, b)
	})
}

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

package batch

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestSplit(t *testing.T) {
	b1 := NewBatch(0, 1, KV{Key: []byte("a"), Value: []byte("1")})
	b2 := buildRecords(t, Zstd, 2, sampleRecords(7))
	b3 := NewBatch(9, 3, KV{Value: []byte("x")}, KV{Value: []byte("y")})
	all := append(append(append([]byte(nil), b1...), b2...), b3...)

	got, err := Split(all)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !bytes.Equal(got[0], b1) || !bytes.Equal(got[1], b2) || !bytes.Equal(got[2], b3) {
		t.Fatalf("split into %d parts", len(got))
	}
	if &got[1][0] != &all[len(b1)] {
		t.Fatal("Split copied instead of sub-slicing")
	}
	if cap(got[0]) != len(b1) {
		t.Fatal("sub-slice capacity reaches into the next batch")
	}
	for _, part := range got {
		if err := Validate(part, ValidateOptions{CheckRecords: true}); err != nil {
			t.Fatal(err)
		}
	}

	// Every truncation point of the payload is an error, never a panic.
	for n := 1; n < len(all); n++ {
		if n == len(b1) || n == len(b1)+len(b2) {
			continue // whole batches
		}
		_, err := Split(all[:n])
		wantCode(t, err, CorruptMessage)
	}
}

func TestSplitErrors(t *testing.T) {
	_, err := Split(nil)
	wantCode(t, err, InvalidRecord)

	good := NewBatch(0, 1, KV{Value: []byte("v")})
	bad := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(bad[OffLength:], 10)
	_, err = Split(bad)
	wantCode(t, err, CorruptMessage)

	binary.BigEndian.PutUint32(bad[OffLength:], 0xffffffff) // negative
	_, err = Split(bad)
	wantCode(t, err, CorruptMessage)

	// A v1 message set (offset, size, crc, magic=1, ...) after a good batch.
	v1 := make([]byte, 40)
	binary.BigEndian.PutUint32(v1[8:], 28)
	v1[16] = 1
	_, err = Split(append(append([]byte(nil), good...), v1...))
	wantCode(t, err, UnsupportedForMessageFormat)
	v1[16] = 0
	_, err = Split(v1)
	wantCode(t, err, UnsupportedForMessageFormat)
	v1[16] = 7
	_, err = Split(v1)
	wantCode(t, err, CorruptMessage)
}

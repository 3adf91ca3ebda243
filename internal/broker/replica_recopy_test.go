package broker

import (
	"encoding/binary"
	"testing"

	"github.com/sluice-broker/sluice/internal/batch"
)

func TestCleanedFrom(t *testing.T) {
	kv := func(k, v string) batch.KV { return batch.KV{Key: []byte(k), Value: []byte(v)} }
	b := func(base int64, n int) []byte {
		var recs []batch.KV
		for i := 0; i < n; i++ {
			recs = append(recs, kv("k", "v"))
		}
		return batch.NewBatch(base, 1000, recs...)
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, x := range bs {
			out = append(out, x...)
		}
		return out
	}
	withCount := func(x []byte, n uint32) []byte {
		binary.BigEndian.PutUint32(x[batch.OffRecordCount:], n)
		return x
	}
	withAttrs := func(x []byte, a uint16) []byte {
		binary.BigEndian.PutUint16(x[batch.OffAttributes:], a)
		return x
	}
	full := cat(b(10, 2), b(12, 1), b(13, 3))
	for _, c := range []struct {
		name string
		recs []byte
		pos  int64
		want bool
	}{
		{"empty answer", nil, 10, false},
		{"contiguous producer batches", full, 10, false},
		{"partial batch at the end", full[:len(full)-5], 10, false},
		{"starts after the position", cat(b(11, 1), b(12, 1)), 10, true},
		{"starts before the position", cat(b(9, 2), b(11, 1)), 10, true},
		{"gap between batches", cat(b(10, 2), b(13, 1)), 10, true},
		{"records removed inside a batch", cat(b(10, 1), withCount(b(11, 3), 2)), 10, true},
		{"emptied batch", cat(b(10, 1), withCount(b(11, 3), 0)), 10, true},
		{"delete horizon", withAttrs(b(10, 1), batch.AttrDeleteHorizon), 10, true},
	} {
		if got := cleanedFrom(c.recs, c.pos); got != c.want {
			t.Errorf("%s: cleanedFrom = %v, want %v", c.name, got, c.want)
		}
	}
}

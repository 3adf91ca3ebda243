package batch

import (
	"encoding/binary"
	"hash/crc32"
	"math"
)

// walkProduce is Inspect's record walk for a batch that is not a control
// batch, with the offset deltas 0, 1, … of a client's batch (a batch from a
// log with gaps after compaction is not taken): it checks the same structure
// as recordReader and parseRecord, with the small fields of small records
// decoded in line (most of them by walkSmallRecords) and no Record filled in.
// With 100-byte records the walk was most of the broker's own CPU per byte on
// produce.
//
// It returns ok only for a section that the full walk accepts too, with the
// smallest and largest record timestamps (base plus each delta). It never
// explains a rejection: on !ok Inspect walks again the slow way, which finds
// the same fault and describes it (a record without a key on a compacted topic
// is such a fault here too, so that all of them are reported).
func walkProduce(data []byte, count int, base int64, requireKeys bool) (minTS, maxTS int64, ok bool) {
	w := newRecordWalk(data, count, base, requireKeys)
	ok = w.until(len(data) + 1)
	return w.minTS, w.maxTS, ok && w.complete()
}

// recordWalk is walkProduce's walk in steps, so that a batch's CRC and the
// walk of its records can take turns over it (crcWalk).
type recordWalk struct {
	data         []byte
	count        int
	base         int64
	requireKeys  bool
	i, p         int   // the next record and its position
	minTS, maxTS int64 // over the records walked
}

func newRecordWalk(data []byte, count int, base int64, requireKeys bool) *recordWalk {
	return &recordWalk{data: data, count: count, base: base, requireKeys: requireKeys,
		minTS: math.MaxInt64, maxTS: math.MinInt64}
}

// complete reports whether the walk took every record and ended with the
// data.
func (w *recordWalk) complete() bool { return w.i >= w.count && w.p == len(w.data) }

// until walks the records that start before stop (all of them, with stop
// past the end), and returns false if one of them is not valid as the full
// walk has it.
func (w *recordWalk) until(stop int) bool {
	data, count, base, requireKeys := w.data, w.count, w.base, w.requireKeys
	i, p, minTS, maxTS := w.i, w.p, w.minTS, w.maxTS
	for ; i < count && p < stop; i++ {
		// Most records take the fast loop; the one it stops at, valid or
		// not, is walked field by field below.
		if n, q, lo, hi := walkSmallRecords(data, p, i, count, stop, base, requireKeys); n > i {
			minTS, maxTS = min(minTS, lo), max(maxTS, hi)
			if p, i = q, n; i == count || p >= stop {
				break
			}
		}
		// Lengths of small records take one or two bytes; both in line.
		var l int32
		q := p + 1
		if p+1 < len(data) && data[p] < 0x80 {
			l = int32(data[p]>>1) ^ -int32(data[p]&1)
		} else if p+2 < len(data) && data[p+1] < 0x80 {
			u := uint32(data[p]&0x7f) | uint32(data[p+1])<<7
			l, q = int32(u>>1)^-int32(u&1), p+2
		} else if l, q = varint32At(data, p); q < 0 {
			return false
		}
		if l < 0 || int(l) > len(data)-q {
			return false
		}
		end := q + int(l)
		body := data[:end]
		if q >= end { // no room for the attributes byte
			return false
		}
		q++

		// The one-byte varints of small records are decoded in line here.
		var d int64
		if q < len(body) && body[q] < 0x80 {
			d = int64(body[q]>>1) ^ -int64(body[q]&1)
			q++
		} else if d, q = varint64At(body, q); q < 0 {
			return false
		}
		if (d > 0 && base > math.MaxInt64-d) || (d < 0 && base < math.MinInt64-d) {
			return false
		}
		ts := base + d
		minTS, maxTS = min(minTS, ts), max(maxTS, ts)

		var od int32
		if q < len(body) && body[q] < 0x80 {
			od = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if od, q = varint32At(body, q); q < 0 {
			return false
		}
		if int(od) != i {
			return false
		}

		var n int32
		if q < len(body) && body[q] < 0x80 {
			n = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if n, q = varint32At(body, q); q < 0 {
			return false
		}
		if n < -1 || int(n) > len(body)-q || (n == -1 && requireKeys) {
			return false // key
		}
		q += max(int(n), 0)
		if q+1 < len(body) && body[q] < 0x80 {
			n = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if q+2 < len(body) && body[q+1] < 0x80 {
			u := uint32(body[q]&0x7f) | uint32(body[q+1])<<7
			n = int32(u>>1) ^ -int32(u&1)
			q += 2
		} else if n, q = varint32At(body, q); q < 0 {
			return false
		}
		if n < -1 || int(n) > len(body)-q {
			return false // value
		}
		q += max(int(n), 0)

		var nh int32
		if q < len(body) && body[q] < 0x80 {
			nh = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if nh, q = varint32At(body, q); q < 0 {
			return false
		}
		if nh < 0 || int(nh) > (len(body)-q)/2 {
			return false
		}
		for j := int32(0); j < nh; j++ {
			if n, q = varint32At(body, q); q < 0 || n < 0 || int(n) > len(body)-q {
				return false // header key: never null
			}
			q += int(n)
			if n, q = varint32At(body, q); q < 0 || n < -1 || int(n) > len(body)-q {
				return false // header value
			}
			q += max(int(n), 0)
		}
		if q != end {
			return false
		}
		p = end
	}
	w.i, w.p, w.minTS, w.maxTS = i, p, minTS, maxTS
	return true
}

// varint32At decodes the zig-zag int32 varint at b[p:] as readVarint does and
// returns it with the position after it, or a negative position if it is
// truncated, too long or out of range.
func varint32At(b []byte, p int) (int32, int) {
	if uint(p) >= uint(len(b)) {
		return 0, -1
	}
	c := b[p]
	if c < 0x80 {
		return int32(c>>1) ^ -int32(c&1), p + 1
	}
	if p+1 < len(b) {
		if c2 := b[p+1]; c2 < 0x80 {
			u := uint32(c&0x7f) | uint32(c2)<<7
			return int32(u>>1) ^ -int32(u&1), p + 2
		}
	}
	return varint32Slow(b, p)
}

func varint32Slow(b []byte, p int) (int32, int) {
	if p < 0 || p >= len(b) {
		return 0, -1
	}
	v, n := readVarint(b[p:])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// varint64At is varint32At for a zig-zag int64 (readVarlong).
func varint64At(b []byte, p int) (int64, int) {
	if uint(p) < uint(len(b)) {
		if c := b[p]; c < 0x80 {
			return int64(c>>1) ^ -int64(c&1), p + 1
		}
	}
	return varint64Slow(b, p)
}

func varint64Slow(b []byte, p int) (int64, int) {
	if p < 0 || p >= len(b) {
		return 0, -1
	}
	v, n := readVarlong(b[p:])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// walkSmallRecords walks records i, i+1, … of data from p on for as long as
// each has the shape of nearly every small record: a length of one or two
// bytes, one-byte timestamp delta and key length, an offset delta of one to
// three bytes, a value length of one or two bytes and no headers. It reads the
// fields from two 8-byte words and compares the offset delta with the varint
// it must be instead of decoding it. It returns the index and position of the
// first record it did not take (valid or not; walkProduce walks that one
// field by field) and the smallest and largest timestamps of those it took.
// It is its own function so that its loop keeps its few variables in
// registers.
func walkSmallRecords(data []byte, p, i, count, stop int, base int64, requireKeys bool) (next, pos int, minTS, maxTS int64) {
	minTS, maxTS = math.MaxInt64, math.MinInt64
	// A one-byte timestamp delta is within [-64, 63]: with base this far
	// from the ends of int64 no record's timestamp can overflow.
	if base < math.MinInt64+64 || base > math.MaxInt64-64 {
		return i, p, minTS, maxTS
	}
	first := i
	limit := min(stop, len(data)-15) // p < limit: a record starts before stop, with 16 bytes to read
	last := min(count, 1<<20)
	var loD, hiD int64 = 64, -65 // the smallest and largest timestamp delta taken
walk:
	for ; i < last && p >= 0 && p < limit; i++ {
		w := binary.LittleEndian.Uint64(data[p:])
		var u uint64
		f := p + 1 // the attributes byte
		switch {
		case w&0x80 == 0:
			u = w & 0x7f
		case w&0x8000 == 0:
			u, f = w&0x7f|(w>>1)&0x3f80, p+2
		default:
			break walk // three or more bytes
		}
		if u == 0 || u&1 != 0 {
			break walk // a negative or empty length
		}
		end := f + int(u>>1)
		if end > len(data) {
			break walk
		}
		// From the attributes on: attributes, timestamp delta, offset delta, key length.
		w = binary.LittleEndian.Uint64(data[f:])
		e := uint64(i) << 1 // the offset delta's zig-zag value
		k := 3              // where the key length is, from f
		switch {
		case i < 64:
			if w>>16&0xff != e {
				break walk
			}
		case i < 8192:
			if w>>16&0xffff != e&0x7f|0x80|e>>7<<8 {
				break walk
			}
			k = 4
		default: // a batch of 1 MiB holds about 9,000 records of 100 bytes
			if w>>16&0xffffff != e&0x7f|0x80|(e>>7&0x7f|0x80)<<8|e>>14<<16 {
				break walk
			}
			k = 5
		}
		tb, kb := w>>8&0xff, w>>(8*k)&0xff
		if tb|kb >= 0x80 {
			break walk
		}
		d := int64(tb>>1) ^ -int64(tb&1)
		n := int(kb>>1) ^ -int(kb&1)
		q := f + k + 1 // after the key length
		if n < -1 || (n == -1 && requireKeys) || n > end-q {
			break walk
		}
		q += max(n, 0)
		// The value length, then a header count of zero as the record's last byte.
		var v int
		switch {
		case q+1 < end && data[q] < 0x80:
			v, q = int(data[q]>>1)^-int(data[q]&1), q+1
		case q+2 < end && data[q+1] < 0x80:
			x := int(data[q]&0x7f) | int(data[q+1])<<7
			v, q = x>>1^-(x&1), q+2
		default:
			break walk
		}
		if v < -1 || q+max(v, 0) != end-1 || data[end-1] != 0 {
			break walk
		}
		loD, hiD = min(loD, d), max(hiD, d)
		p = end
	}
	if i > first {
		minTS, maxTS = base+loD, base+hiD
	}
	return i, p, minTS, maxTS
}

// crcChunk is how much of a batch crcWalk checksums before it walks the
// records in that part: little enough to stay in a core's first-level cache.
const crcChunk = 16 << 10

// crcWalk computes the CRC of the uncompressed batch b (ComputeCRC) and walks
// its records as walkProduce does, taking turns over chunks of crcChunk
// bytes, so that the walk reads what the CRC has just brought into the
// cache: with 1 MiB batches of small records the walk otherwise read each
// batch back from memory after the CRC had streamed all of it. ok is
// walkProduce's answer.
func crcWalk(b []byte, count int, base int64, requireKeys bool) (crc uint32, minTS, maxTS int64, ok bool) {
	crc = crc32.Update(0, castagnoli, b[OffAttributes:HeaderSize])
	data := b[HeaderSize:]
	w := newRecordWalk(data, count, base, requireKeys)
	ok = true
	for done := 0; done < len(data); {
		next := min(done+crcChunk, len(data))
		crc = crc32.Update(crc, castagnoli, data[done:next])
		stop := next
		if next == len(data) {
			stop = next + 1 // the records left, all of them
		}
		ok = ok && w.until(stop)
		done = next
	}
	return crc, w.minTS, w.maxTS, ok && w.complete()
}

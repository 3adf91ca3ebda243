package batch

import "math"

// walkProduce is Inspect's record walk for a client's batch (not FromLog, not
// control): it checks the same structure as recordReader and parseRecord, with
// the one-byte varints that dominate small records decoded in line and no
// Record filled in. With 100-byte records the walk was most of the broker's
// own CPU per byte on produce.
//
// It returns ok only for a section that the full walk accepts too, with the
// smallest and largest record timestamps (base plus each delta). It never
// explains a rejection: on !ok Inspect walks again the slow way, which finds
// the same fault and describes it (a record without a key on a compacted topic
// is such a fault here too, so that all of them are reported).
func walkProduce(data []byte, count int, base int64, requireKeys bool) (minTS, maxTS int64, ok bool) {
	minTS, maxTS = math.MaxInt64, math.MinInt64
	p := 0
	for i := 0; i < count; i++ {
		// Lengths of small records take one or two bytes; both in line.
		var l int32
		q := p + 1
		if p+1 < len(data) && data[p] < 0x80 {
			l = int32(data[p]>>1) ^ -int32(data[p]&1)
		} else if p+2 < len(data) && data[p+1] < 0x80 {
			u := uint32(data[p]&0x7f) | uint32(data[p+1])<<7
			l, q = int32(u>>1)^-int32(u&1), p+2
		} else if l, q = varint32At(data, p); q < 0 {
			return
		}
		if l < 0 || int(l) > len(data)-q {
			return
		}
		end := q + int(l)
		body := data[:end]
		if q >= end { // no room for the attributes byte
			return
		}
		q++

		// The one-byte varints of small records are decoded in line here.
		var d int64
		if q < len(body) && body[q] < 0x80 {
			d = int64(body[q]>>1) ^ -int64(body[q]&1)
			q++
		} else if d, q = varint64At(body, q); q < 0 {
			return
		}
		if (d > 0 && base > math.MaxInt64-d) || (d < 0 && base < math.MinInt64-d) {
			return
		}
		ts := base + d
		minTS, maxTS = min(minTS, ts), max(maxTS, ts)

		var od int32
		if q < len(body) && body[q] < 0x80 {
			od = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if od, q = varint32At(body, q); q < 0 {
			return
		}
		if int(od) != i {
			return
		}

		var n int32
		if q < len(body) && body[q] < 0x80 {
			n = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if n, q = varint32At(body, q); q < 0 {
			return
		}
		if n < -1 || int(n) > len(body)-q || (n == -1 && requireKeys) {
			return // key
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
			return
		}
		if n < -1 || int(n) > len(body)-q {
			return // value
		}
		q += max(int(n), 0)

		var nh int32
		if q < len(body) && body[q] < 0x80 {
			nh = int32(body[q]>>1) ^ -int32(body[q]&1)
			q++
		} else if nh, q = varint32At(body, q); q < 0 {
			return
		}
		if nh < 0 || int(nh) > (len(body)-q)/2 {
			return
		}
		for j := int32(0); j < nh; j++ {
			if n, q = varint32At(body, q); q < 0 || n < 0 || int(n) > len(body)-q {
				return // header key: never null
			}
			q += int(n)
			if n, q = varint32At(body, q); q < 0 || n < -1 || int(n) > len(body)-q {
				return // header value
			}
			q += max(int(n), 0)
		}
		if q != end {
			return
		}
		p = end
	}
	return minTS, maxTS, p == len(data)
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

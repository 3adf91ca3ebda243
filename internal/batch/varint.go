package batch

// Kafka encodes record fields as zig-zag varints (the same encoding as
// encoding/binary's Varint). The readers here are strict: an int32 field takes
// at most 5 bytes and must fit 32 bits, an int64 at most 10 bytes.

// readVarint decodes a zig-zag varint that must fit an int32. It returns the
// value and the number of bytes read, or n <= 0 if b is truncated (0) or the
// varint is too long or out of range (-1).
func readVarint(b []byte) (int32, int) {
	var u uint64
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if u > 0xffffffff {
				return 0, -1
			}
			u32 := uint32(u)
			return int32(u32>>1) ^ -int32(u32&1), i + 1
		}
	}
	return 0, -1
}

// readVarlong decodes a zig-zag varint of up to 64 bits, with the same
// result convention as readVarint.
func readVarlong(b []byte) (int64, int) {
	var u uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, -1
}

// varintSize returns the encoded size of v as a zig-zag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// appendVarint appends v zig-zag encoded.
func appendVarint(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

package batch

import "encoding/binary"

// Split cuts the records bytes of one produce partition into whole batches,
// returned as sub-slices of b (no copy). Each batch must carry magic 2 (v0/v1
// message sets are UNSUPPORTED_FOR_MESSAGE_FORMAT), a Length of at least
// MinLength, and lie entirely within b; a truncated tail is CORRUPT_MESSAGE.
// Empty input is INVALID_RECORD, as Kafka rejects a produce partition without
// a batch. Split looks at nothing beyond the length and magic: use Validate on
// each batch. Note that Kafka accepts exactly one v2 batch per produce
// partition (INVALID_RECORD otherwise); enforcing that is the caller's choice.
func Split(b []byte) ([][]byte, error) {
	if len(b) == 0 {
		return nil, errorf(InvalidRecord, "produce partition holds no record batch")
	}
	var out [][]byte
	for pos := 0; pos < len(b); {
		rest := b[pos:]
		if len(rest) > OffMagic {
			if m := int8(rest[OffMagic]); m != Magic {
				return nil, magicError(m)
			}
		}
		if len(rest) < HeaderSize {
			return nil, errorf(CorruptMessage, "truncated batch at byte %d: %d bytes left, header needs %d", pos, len(rest), HeaderSize)
		}
		length := int32(binary.BigEndian.Uint32(rest[OffLength:]))
		if length < MinLength {
			return nil, errorf(CorruptMessage, "batch at byte %d: length %d below minimum %d", pos, length, MinLength)
		}
		size := lengthPrefix + int(length)
		if size > len(rest) {
			return nil, errorf(CorruptMessage, "truncated batch at byte %d: length says %d bytes, %d left", pos, size, len(rest))
		}
		out = append(out, rest[:size:size])
		pos += size
	}
	return out, nil
}

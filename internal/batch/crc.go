package batch

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC-32C table; the standard library uses the SSE4.2 /
// ARMv8 CRC instructions for it when available.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ComputeCRC returns the CRC-32C of a whole batch b over b[OffAttributes:]
// (attributes to the end), which is what the header's CRC field must hold.
// b must hold at least the header.
func ComputeCRC(b []byte) uint32 {
	return crc32.Checksum(b[OffAttributes:], castagnoli)
}

// UpdateCRC recomputes the CRC of the whole batch b and stores it in the
// header.
func UpdateCRC(b []byte) {
	binary.BigEndian.PutUint32(b[OffCRC:], ComputeCRC(b))
}

// storedCRC returns the CRC field of the header in b.
func storedCRC(b []byte) uint32 { return binary.BigEndian.Uint32(b[OffCRC:]) }

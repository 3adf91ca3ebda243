package batch

import "encoding/binary"

// HeaderSize is the size in bytes of the v2 batch header, from baseOffset up
// to and including recordCount.
const HeaderSize = 61

// Byte offsets of the fields inside a v2 batch.
const (
	OffBaseOffset           = 0
	OffLength               = 8
	OffPartitionLeaderEpoch = 12
	OffMagic                = 16
	OffCRC                  = 17
	OffAttributes           = 21
	OffLastOffsetDelta      = 23
	OffBaseTimestamp        = 27
	OffMaxTimestamp         = 35
	OffProducerID           = 43
	OffProducerEpoch        = 51
	OffBaseSequence         = 53
	OffRecordCount          = 57
)

// lengthPrefix is the number of bytes not counted by the batch Length field
// (baseOffset and the length itself).
const lengthPrefix = OffPartitionLeaderEpoch

// MinLength is the smallest legal value of the Length field: a header with no
// records.
const MinLength = HeaderSize - lengthPrefix // 49

// Magic is the only record-batch format version this package accepts.
const Magic = 2

// Attribute bits of a v2 batch (Header.Attributes).
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40
)

// Compression is the codec recorded in the low three attribute bits.
type Compression int8

// Compression codecs, as numbered by Kafka.
const (
	None   Compression = 0
	Gzip   Compression = 1
	Snappy Compression = 2
	LZ4    Compression = 3
	Zstd   Compression = 4
)

// String returns Kafka's name for the codec.
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return "unknown"
}

// TimestampType is attribute bit 3.
type TimestampType int8

// Timestamp types.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// String returns Kafka's name for the timestamp type.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Header is a decoded copy of the 61-byte v2 batch header.
type Header struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// ParseHeader decodes the header at the start of b. It needs
// len(b) >= HeaderSize (a shorter b is reported as truncated, or as an
// unsupported format when it carries magic 0 or 1), magic == 2 and
// Length >= MinLength. It does not check the CRC or that b holds the whole
// batch; see Validate for that.
func ParseHeader(b []byte) (Header, error) {
	if len(b) > OffMagic {
		if m := int8(b[OffMagic]); m != Magic {
			return Header{}, magicError(m)
		}
	}
	if len(b) < HeaderSize {
		return Header{}, errorf(CorruptMessage, "truncated batch header: %d of %d bytes", len(b), HeaderSize)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[OffBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[OffLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[OffPartitionLeaderEpoch:])),
		Magic:                int8(b[OffMagic]),
		CRC:                  binary.BigEndian.Uint32(b[OffCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[OffAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[OffLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[OffBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[OffMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[OffProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[OffProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[OffBaseSequence:])),
		RecordCount:          int32(binary.BigEndian.Uint32(b[OffRecordCount:])),
	}
	if h.Length < MinLength {
		return Header{}, errorf(CorruptMessage, "batch length %d below minimum %d", h.Length, MinLength)
	}
	return h, nil
}

func magicError(m int8) error {
	if m == 0 || m == 1 {
		return errorf(UnsupportedForMessageFormat, "message format v%d is not supported, only v2 record batches", m)
	}
	return errorf(CorruptMessage, "invalid batch magic %d", m)
}

// Compression returns the codec of the batch's records.
func (h Header) Compression() Compression { return Compression(h.Attributes & AttrCompressionMask) }

// TimestampType reports whether MaxTimestamp is the create or log-append time.
func (h Header) TimestampType() TimestampType {
	if h.Attributes&AttrTimestampType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports attribute bit 4.
func (h Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports attribute bit 5 (commit/abort markers and similar).
func (h Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// HasDeleteHorizon reports attribute bit 6 (KIP-534): BaseTimestamp then
// holds the time after which the cleaner may drop tombstones and markers.
func (h Header) HasDeleteHorizon() bool { return h.Attributes&AttrDeleteHorizon != 0 }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// TotalSize is the size of the whole batch in bytes, prefix included.
func (h Header) TotalSize() int { return lengthPrefix + int(h.Length) }

// SetBaseOffset rewrites the base offset in place. The field is not covered
// by the CRC. b must hold at least the header.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[OffBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch rewrites the partition leader epoch in place. The
// field is not covered by the CRC. b must hold at least the header.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[OffPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the whole batch b as LogAppendTime with timestamp
// ts: it sets attribute bit 3, writes ts to MaxTimestamp and recomputes the
// CRC. Record timestamp deltas are left as they are; readers of a
// LogAppendTime batch use MaxTimestamp for every record, as Kafka does.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[OffAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[OffAttributes:], attrs)
	binary.BigEndian.PutUint64(b[OffMaxTimestamp:], uint64(ts))
	UpdateCRC(b)
}

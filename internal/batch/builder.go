package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Builder assembles a v2 batch. Create it with NewBuilder (which sets the
// "no producer" defaults), set the header fields, Add records, then Build.
// A Builder may be reused after Reset.
type Builder struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32 // -1 from NewBuilder, as clients write it
	// Attributes holds the flag bits: timestamp type (0x08), transactional
	// (0x10), control (0x20), delete horizon (0x40). The codec bits are
	// ignored; the Compression field decides them.
	Attributes    int16
	Compression   Compression
	ProducerID    int64 // -1 from NewBuilder
	ProducerEpoch int16 // -1 from NewBuilder
	BaseSequence  int32 // -1 from NewBuilder
	BaseTimestamp int64
	// MaxTimestamp is written as is for LogAppendTime batches and batches
	// without records; otherwise Build derives it from the records.
	MaxTimestamp int64
	// LastOffsetDelta is used for a batch without records, and when it is
	// larger than the last record's offset delta (a compacted batch keeping
	// its original last offset); otherwise the last record's delta wins.
	LastOffsetDelta int32
	// ExplicitOffsetDeltas keeps each added record's OffsetDelta (they must
	// increase strictly), as a cleaner rewriting a batch needs. When false,
	// Add numbers the records 0, 1, 2, ...
	ExplicitOffsetDeltas bool

	records []Record
	scratch []byte
}

// NewBuilder returns a Builder for an uncompressed CreateTime batch at
// offset 0 with no producer id, epoch or sequence (all -1) and leader epoch
// -1.
func NewBuilder() *Builder {
	return &Builder{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}
}

// Add appends r. Its TimestampDelta is relative to BaseTimestamp and is
// kept as given; its OffsetDelta is replaced by the record's index unless
// ExplicitOffsetDeltas is set. Key, Value and header values are referenced,
// not copied, until Build.
func (b *Builder) Add(r Record) {
	if !b.ExplicitOffsetDeltas {
		r.OffsetDelta = int32(len(b.records))
	}
	b.records = append(b.records, r)
}

// AddAt appends a record with absolute timestamp ts (BaseTimestamp must be
// set first), key, value and headers; nil key or value encode as null.
func (b *Builder) AddAt(ts int64, key, value []byte, headers ...RecordHeader) {
	b.Add(Record{TimestampDelta: ts - b.BaseTimestamp, OffsetDelta: int32(len(b.records)), Key: key, Value: value, Headers: headers})
}

// Len returns the number of records added so far.
func (b *Builder) Len() int { return len(b.records) }

// Reset drops the added records, keeping the header fields and buffers.
func (b *Builder) Reset() {
	clear(b.records)
	b.records = b.records[:0]
}

// Build returns the complete batch: header with correct Length, CRC,
// LastOffsetDelta, MaxTimestamp and RecordCount, then the (possibly
// compressed) records. The result is a new slice owned by the caller.
func (b *Builder) Build() ([]byte, error) {
	if b.Compression < None || b.Compression > Zstd {
		return nil, fmt.Errorf("batch: unknown compression codec %d", int(b.Compression))
	}
	if len(b.records) > math.MaxInt32 {
		return nil, errors.New("batch: too many records")
	}
	attrs := b.Attributes&^AttrCompressionMask | int16(b.Compression)

	lastDelta := b.LastOffsetDelta
	maxTS := b.MaxTimestamp
	if n := len(b.records); n > 0 {
		prev := int32(-1)
		maxDelta := int64(math.MinInt64)
		for i := range b.records {
			r := &b.records[i]
			if r.OffsetDelta <= prev {
				return nil, fmt.Errorf("batch: record %d: offset delta %d does not increase", i, r.OffsetDelta)
			}
			prev = r.OffsetDelta
			maxDelta = max(maxDelta, r.TimestampDelta)
		}
		lastDelta = max(lastDelta, prev)
		if attrs&AttrTimestampType == 0 {
			if (maxDelta > 0 && b.BaseTimestamp > math.MaxInt64-maxDelta) || (maxDelta < 0 && b.BaseTimestamp < math.MinInt64-maxDelta) {
				return nil, errors.New("batch: record timestamp overflows int64")
			}
			maxTS = b.BaseTimestamp + maxDelta
		}
	}

	// Encode the records; straight after the header when uncompressed.
	var out []byte
	if b.Compression == None {
		out = make([]byte, HeaderSize, HeaderSize+b.encodedSize())
		var err error
		if out, err = b.appendRecords(out); err != nil {
			return nil, err
		}
	} else {
		var err error
		if b.scratch, err = b.appendRecords(b.scratch[:0]); err != nil {
			return nil, err
		}
		comp, err := Compress(b.Compression, b.scratch)
		if err != nil {
			return nil, fmt.Errorf("batch: compress records: %w", err)
		}
		out = make([]byte, HeaderSize, HeaderSize+len(comp))
		out = append(out, comp...)
	}
	if len(out)-lengthPrefix > math.MaxInt32 {
		return nil, errors.New("batch: batch larger than 2 GiB")
	}

	be := binary.BigEndian
	be.PutUint64(out[OffBaseOffset:], uint64(b.BaseOffset))
	be.PutUint32(out[OffLength:], uint32(len(out)-lengthPrefix))
	be.PutUint32(out[OffPartitionLeaderEpoch:], uint32(b.PartitionLeaderEpoch))
	out[OffMagic] = Magic
	be.PutUint16(out[OffAttributes:], uint16(attrs))
	be.PutUint32(out[OffLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(out[OffBaseTimestamp:], uint64(b.BaseTimestamp))
	be.PutUint64(out[OffMaxTimestamp:], uint64(maxTS))
	be.PutUint64(out[OffProducerID:], uint64(b.ProducerID))
	be.PutUint16(out[OffProducerEpoch:], uint16(b.ProducerEpoch))
	be.PutUint32(out[OffBaseSequence:], uint32(b.BaseSequence))
	be.PutUint32(out[OffRecordCount:], uint32(len(b.records)))
	UpdateCRC(out)
	return out, nil
}

// encodedSize is the size of the uncompressed record section (a capacity
// hint; lengths too large for the format are rejected by appendRecords).
func (b *Builder) encodedSize() int {
	n := 0
	for i := range b.records {
		body := recordBodySize(&b.records[i])
		n += varintSize(int64(body)) + body
	}
	return n
}

func recordBodySize(r *Record) int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta))
	n += bytesFieldSize(r.Key) + bytesFieldSize(r.Value)
	n += varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesFieldSize(h.Value)
	}
	return n
}

func bytesFieldSize(v []byte) int {
	if v == nil {
		return 1
	}
	return varintSize(int64(len(v))) + len(v)
}

func (b *Builder) appendRecords(dst []byte) ([]byte, error) {
	for i := range b.records {
		r := &b.records[i]
		if len(r.Key) > math.MaxInt32/2 || len(r.Value) > math.MaxInt32/2 || len(r.Headers) > math.MaxInt32/2 {
			return nil, fmt.Errorf("batch: record %d too large", i)
		}
		body := recordBodySize(r)
		if body > math.MaxInt32/2 {
			return nil, fmt.Errorf("batch: record %d too large", i)
		}
		dst = appendVarint(dst, int64(body))
		dst = append(dst, byte(r.Attributes))
		dst = appendVarint(dst, r.TimestampDelta)
		dst = appendVarint(dst, int64(r.OffsetDelta))
		dst = appendBytesField(dst, r.Key)
		dst = appendBytesField(dst, r.Value)
		dst = appendVarint(dst, int64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = appendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendBytesField(dst, h.Value)
		}
	}
	return dst, nil
}

func appendBytesField(dst, v []byte) []byte {
	if v == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

// KV is a key and value for NewBatch; nil means null.
type KV struct {
	Key, Value []byte
}

// NewBatch builds an uncompressed CreateTime batch with no producer at
// baseOffset whose records all have timestamp ts. It is meant for tests and
// internal topics with small, trusted input, and panics if Build fails
// (which needs records over 1 GiB).
func NewBatch(baseOffset, ts int64, recs ...KV) []byte {
	b := NewBuilder()
	b.BaseOffset = baseOffset
	b.BaseTimestamp = ts
	for _, kv := range recs {
		b.AddAt(ts, kv.Key, kv.Value)
	}
	out, err := b.Build()
	if err != nil {
		panic(err)
	}
	return out
}

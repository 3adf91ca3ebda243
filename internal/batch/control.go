package batch

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type field of a control record's key. Transaction
// markers are the only control records Sluice writes or interprets.
type ControlType int16

// Control record types, as numbered by Kafka.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// String returns the marker's name.
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "abort"
	case ControlCommit:
		return "commit"
	}
	return fmt.Sprintf("control(%d)", int16(t))
}

// Marker is the content of a transaction marker: the control batch a
// transaction coordinator appends to each partition of a transaction when
// it ends.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Type             ControlType
	CoordinatorEpoch int32
	Timestamp        int64 // ms, the batch's base and max timestamp
	// TransactionVersion is the transaction version of the transaction the
	// marker ends, as WriteTxnMarkers v2 carries it (KIP-1228): from 2 the
	// producer epoch check is strict (producer.State.CheckMarker). It is not
	// part of the batch; 0 (unknown) keeps the lenient check.
	TransactionVersion int8
}

// NewMarkerBatch encodes m as a v2 control batch at base offset 0 (the log
// assigns the real offset): attributes transactional|control, no
// compression, base sequence -1, one record whose key is (version 0, type)
// and whose value is (version 0, coordinator epoch), as Kafka writes them.
func NewMarkerBatch(m Marker) []byte {
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[0:], 0)
	binary.BigEndian.PutUint16(key[2:], uint16(m.Type))
	value := make([]byte, 6)
	binary.BigEndian.PutUint16(value[0:], 0)
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	b := NewBuilder()
	b.Attributes = AttrTransactional | AttrControl
	b.ProducerID = m.ProducerID
	b.ProducerEpoch = m.ProducerEpoch
	b.BaseTimestamp = m.Timestamp
	b.MaxTimestamp = m.Timestamp
	b.AddAt(m.Timestamp, key, value)
	out, err := b.Build()
	if err != nil { // a fixed-size record cannot fail to encode
		panic("batch: encoding a transaction marker: " + err.Error())
	}
	return out
}

// ParseMarker decodes the transaction marker in the whole control batch b.
// It fails for a batch that is not a control batch, holds no record, or
// whose record key is not a known marker type.
func ParseMarker(b []byte, maxDecompressed int) (Marker, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Marker{}, err
	}
	if !h.IsControl() {
		return Marker{}, errorf(CorruptMessage, "batch at offset %d is not a control batch", h.BaseOffset)
	}
	m := Marker{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, Timestamp: h.MaxTimestamp}
	found := false
	err = ForEachRecord(b, maxDecompressed, func(r *Record) error {
		if found {
			return nil
		}
		found = true
		if len(r.Key) < 4 {
			return errorf(CorruptMessage, "control record key of %d bytes", len(r.Key))
		}
		m.Type = ControlType(int16(binary.BigEndian.Uint16(r.Key[2:])))
		if m.Type != ControlAbort && m.Type != ControlCommit {
			return errorf(CorruptMessage, "unknown control record type %d", int16(m.Type))
		}
		if len(r.Value) >= 6 {
			m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		}
		return nil
	})
	if err != nil {
		return Marker{}, err
	}
	if !found {
		return Marker{}, errorf(CorruptMessage, "control batch at offset %d holds no record", h.BaseOffset)
	}
	return m, nil
}

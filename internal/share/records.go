package share

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"unicode/utf16"
)

// The share-group state topic holds one record per share partition in Kafka's
// __share_group_state format: the key is a ShareSnapshotKey (record type 0), the value a
// ShareSnapshotValue version 0, the latest snapshot of the share partition (the topic is
// compacted, so the latest value wins):
//
//	key:   int16 type (0) | int16 len + group id | [16]byte topic id | int32 partition
//	value: int16 version (0) | int32 snapshot epoch | int32 state epoch | int32 leader epoch |
//	       int64 start offset | int64 create timestamp | int64 write timestamp |
//	       compact array of (int64 first | int64 last | int8 state | int16 delivery count | tags) |
//	       tags (tag 0: int32 delivery complete count)
//
// A null value (tombstone) deletes the share partition's state. Kafka's ShareUpdate records
// (type 1) are never written and are skipped when read.

// keyTypeSnapshot is the record key type of a share-partition snapshot.
const keyTypeSnapshot = 0

var errShortRecord = errors.New("share: truncated state record")

// Key names a share partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// CoordinatorKey is Kafka's coordinator key of a share partition,
// "group:topicId:partition" with the topic id in Kafka's base64 form; its
// Java string hash picks the state-topic partition.
func (k Key) CoordinatorKey() string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + itoa(k.Partition)
}

// StatePartition returns the state-topic partition (of n) that holds k.
func (k Key) StatePartition(n int32) int32 {
	if n <= 0 {
		return 0
	}
	var h int32 // Java's String.hashCode, over UTF-16 code units
	for _, u := range utf16.Encode([]rune(k.CoordinatorKey())) {
		h = 31*h + int32(u)
	}
	switch { // Kafka's Utils.abs
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}

func itoa(v int32) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	u := int64(v)
	if neg {
		u = -u
	}
	var buf [12]byte
	i := len(buf)
	for u > 0 {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// EncodeKey encodes the state-record key of k.
func EncodeKey(k Key) []byte {
	b := make([]byte, 0, 2+2+len(k.Group)+16+4)
	b = binary.BigEndian.AppendUint16(b, keyTypeSnapshot)
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// DecodeKey decodes a state-record key; ok is false for other key types.
func DecodeKey(b []byte) (k Key, ok bool, err error) {
	if len(b) < 2 {
		return k, false, errShortRecord
	}
	if binary.BigEndian.Uint16(b) != keyTypeSnapshot {
		return k, false, nil
	}
	b = b[2:]
	if len(b) < 2 {
		return k, false, errShortRecord
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) != n+16+4 {
		return k, false, errShortRecord
	}
	k.Group = string(b[:n])
	copy(k.TopicID[:], b[n:n+16])
	k.Partition = int32(binary.BigEndian.Uint32(b[n+16:]))
	return k, true, nil
}

// EncodeSnapshotValue encodes the value of a snapshot record.
func EncodeSnapshotValue(s Snapshot) []byte {
	b := make([]byte, 0, 2+4+4+4+8+8+8+1+len(s.Batches)*20+8)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(s.CreateTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(s.WriteTimestamp))
	b = binary.AppendUvarint(b, uint64(len(s.Batches))+1)
	for _, sb := range s.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tagged fields
	}
	if s.DeliveryCompleteCount < 0 {
		return append(b, 0)
	}
	b = append(b, 1, 0, 4) // one tagged field: tag 0, 4 bytes
	return binary.BigEndian.AppendUint32(b, uint32(s.DeliveryCompleteCount))
}

// DecodeSnapshotValue decodes the value of a snapshot record.
func DecodeSnapshotValue(b []byte) (Snapshot, error) {
	s := Snapshot{DeliveryCompleteCount: -1}
	if len(b) < 2+4+4+4+8+8+8 {
		return s, errShortRecord
	}
	if v := binary.BigEndian.Uint16(b); v != 0 {
		return s, errors.New("share: unknown state record version")
	}
	s.SnapshotEpoch = int32(binary.BigEndian.Uint32(b[2:]))
	s.StateEpoch = int32(binary.BigEndian.Uint32(b[6:]))
	s.LeaderEpoch = int32(binary.BigEndian.Uint32(b[10:]))
	s.StartOffset = int64(binary.BigEndian.Uint64(b[14:]))
	s.CreateTimestamp = int64(binary.BigEndian.Uint64(b[22:]))
	s.WriteTimestamp = int64(binary.BigEndian.Uint64(b[30:]))
	b = b[38:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n-1 > uint64(len(b)/20) {
		return s, errShortRecord
	}
	b = b[k:]
	s.Batches = make([]StateBatch, n-1)
	for i := range s.Batches {
		if len(b) < 19 {
			return s, errShortRecord
		}
		s.Batches[i] = StateBatch{
			First:         int64(binary.BigEndian.Uint64(b)),
			Last:          int64(binary.BigEndian.Uint64(b[8:])),
			State:         int8(b[16]),
			DeliveryCount: int16(binary.BigEndian.Uint16(b[17:])),
		}
		var err error
		if b, err = skipTags(b[19:], nil); err != nil {
			return s, err
		}
	}
	rest, err := skipTags(b, func(tag uint64, data []byte) {
		if tag == 0 && len(data) == 4 {
			s.DeliveryCompleteCount = int32(binary.BigEndian.Uint32(data))
		}
	})
	if err != nil {
		return s, err
	}
	if len(rest) != 0 {
		return s, errShortRecord
	}
	return s, nil
}

// skipTags reads a tagged-field section, passing each field to fn (if not
// nil), and returns what follows it.
func skipTags(b []byte, fn func(tag uint64, data []byte)) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortRecord
	}
	b = b[k:]
	for ; n > 0; n-- {
		tag, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errShortRecord
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errShortRecord
		}
		b = b[k:]
		if fn != nil {
			fn(tag, b[:size])
		}
		b = b[size:]
	}
	return b, nil
}

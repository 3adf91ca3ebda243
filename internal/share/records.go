package share

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// The share-group state topic holds one record per share partition: the
// key identifies it, the value is its latest snapshot (the topic is
// compacted, so the latest value wins). The layout follows Kafka's
// ShareSnapshot record (key type 0: group id, topic id, partition; value:
// snapshot epoch, state epoch, leader epoch, start offset and state batches)
// in a fixed-width encoding of Sluice's own:
//
//	key:   int16 type (0) | int16 len + group id | [16]byte topic id | int32 partition
//	value: int16 version (0) | int32 snapshot epoch | int32 state epoch | int32 leader epoch |
//	       int64 start offset | int32 n | n × (int64 first | int64 last | int8 state | int16 delivery count)
//
// A null value (tombstone) deletes the share partition's state.

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
	var h int32
	for _, c := range k.CoordinatorKey() { // Java String.hashCode over UTF-16 units (ASCII here)
		h = 31*h + int32(c)
	}
	return int32(uint32(h)&0x7fffffff) % n
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
	b := make([]byte, 0, 2+4+4+4+8+4+len(s.Batches)*19)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, 0)                  // state epoch
	b = binary.BigEndian.AppendUint32(b, uint32(0xffffffff)) // leader epoch: -1
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Batches)))
	for _, sb := range s.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
	}
	return b
}

// DecodeSnapshotValue decodes the value of a snapshot record.
func DecodeSnapshotValue(b []byte) (Snapshot, error) {
	var s Snapshot
	if len(b) < 26 {
		return s, errShortRecord
	}
	if v := binary.BigEndian.Uint16(b); v != 0 {
		return s, errors.New("share: unknown state record version")
	}
	s.SnapshotEpoch = int32(binary.BigEndian.Uint32(b[2:]))
	s.StartOffset = int64(binary.BigEndian.Uint64(b[14:]))
	n := int(binary.BigEndian.Uint32(b[22:]))
	b = b[26:]
	if n < 0 || len(b) != n*19 {
		return s, errShortRecord
	}
	s.Batches = make([]StateBatch, n)
	for i := range s.Batches {
		s.Batches[i] = StateBatch{
			First:         int64(binary.BigEndian.Uint64(b)),
			Last:          int64(binary.BigEndian.Uint64(b[8:])),
			State:         int8(b[16]),
			DeliveryCount: int16(binary.BigEndian.Uint16(b[17:])),
		}
		b = b[19:]
	}
	return s, nil
}

package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"

	kbatch "github.com/sluice-broker/sluice/internal/batch"
)

// __consumer_offsets record key versions, as Apache Kafka writes them.
const (
	keyVersionOffsetCommit  = 1 // 0 and 1 are both offset commits
	keyVersionGroupMetadata = 2
	// 3..8 are the KIP-848 consumer-group records (consumer_records.go).

	valueVersionOffsetCommit  = 3
	valueVersionGroupMetadata = 3
)

// record is one key/value pair of __consumer_offsets; a nil value is a tombstone.
type record struct {
	key, value []byte
}

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: keyVersionOffsetCommit, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitRecord(group string, tp topicPartition, o committedOffset) record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = valueVersionOffsetCommit
	v.Offset = o.offset
	v.LeaderEpoch = o.leaderEpoch
	v.Metadata = o.metadata
	v.CommitTimestamp = o.commitMs
	return record{key: offsetCommitKey(group, tp.topic, tp.partition), value: v.AppendTo(nil)}
}

func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: keyVersionGroupMetadata, Group: group}
	return k.AppendTo(nil)
}

// encodeBatch builds an uncompressed v2 RecordBatch (base offset 0; the log assigns
// offsets) holding recs, timestamped nowMs.
func encodeBatch(recs []record, nowMs int64) []byte {
	return encodeProducerBatch(recs, nowMs, -1, -1)
}

// encodeProducerBatch is encodeBatch for producer id/epoch: with a producer id (>= 0)
// the batch is transactional (attribute bit 4), base sequence -1, as Kafka's
// coordinator writes transactional offset commits.
func encodeProducerBatch(recs []record, nowMs int64, producerID int64, producerEpoch int16) []byte {
	b := make([]byte, 61, 61+len(recs)*64)
	binary.BigEndian.PutUint64(b[0:], 0)           // base offset
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partition leader epoch -1
	b[16] = 2                                      // magic
	if producerID >= 0 {
		binary.BigEndian.PutUint16(b[21:], 0x10) // transactional
	}
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))   // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(nowMs))         // base timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(nowMs))         // max timestamp
	binary.BigEndian.PutUint64(b[43:], uint64(producerID))    // producer id
	binary.BigEndian.PutUint16(b[51:], uint16(producerEpoch)) // producer epoch
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)            // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))     // record count
	var body []byte
	for i, r := range recs {
		body = body[:0]
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, int64(len(r.key)))
		body = append(body, r.key...)
		if r.value == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.value)))
			body = append(body, r.value...)
		}
		body = binary.AppendVarint(body, 0) // headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

var errCompressedBatch = errors.New("compressed __consumer_offsets batch")

// decodeBatches walks the v2 batches in buf and calls fn for every record of every
// data batch (control batches are skipped). It stops at the first malformed batch.
func decodeBatches(buf []byte, fn func(key, value []byte)) error {
	return walkBatches(buf, func(_ batchInfo, k, v []byte) { fn(k, v) }, nil)
}

// batchInfo is what a record's batch says about its producer.
type batchInfo struct {
	producerID    int64
	transactional bool
}

// walkBatches is decodeBatches with each record's batch described, and transaction
// markers (control batches) reported to marker when it is not nil.
func walkBatches(buf []byte, fn func(b batchInfo, key, value []byte), marker func(producerID int64, commit bool)) error {
	for len(buf) > 0 {
		if len(buf) < 61 {
			return fmt.Errorf("truncated batch header (%d bytes)", len(buf))
		}
		size := int64(int32(binary.BigEndian.Uint32(buf[8:]))) + 12
		if size < 61 || size > int64(len(buf)) {
			return fmt.Errorf("bad batch length %d", size-12)
		}
		batch := buf[:size]
		buf = buf[size:]
		if batch[16] != 2 {
			return fmt.Errorf("unsupported magic %d", batch[16])
		}
		attrs := binary.BigEndian.Uint16(batch[21:])
		info := batchInfo{producerID: int64(binary.BigEndian.Uint64(batch[43:])), transactional: attrs&0x10 != 0}
		if attrs&0x20 != 0 { // control batch
			if marker != nil {
				m, err := kbatch.ParseMarker(batch, 1<<20)
				if err != nil {
					return err
				}
				marker(m.ProducerID, m.Type == kbatch.ControlCommit)
			}
			continue
		}
		if attrs&0x07 != 0 {
			return errCompressedBatch
		}
		n := int(int32(binary.BigEndian.Uint32(batch[57:])))
		rest := batch[61:]
		for i := 0; i < n; i++ {
			l, w := binary.Varint(rest)
			if w <= 0 || l < 0 || int64(len(rest)-w) < l {
				return errors.New("bad record length")
			}
			rec := rest[w : w+int(l)]
			rest = rest[w+int(l):]
			if len(rec) < 1 {
				return errors.New("empty record")
			}
			p := rec[1:]
			for j := 0; j < 2; j++ { // timestamp delta, offset delta
				_, w := binary.Varint(p)
				if w <= 0 {
					return errors.New("bad record varint")
				}
				p = p[w:]
			}
			key, p2, err := readVarBytes(p)
			if err != nil {
				return err
			}
			value, _, err := readVarBytes(p2)
			if err != nil {
				return err
			}
			fn(info, key, value)
		}
	}
	return nil
}

func readVarBytes(p []byte) ([]byte, []byte, error) {
	l, w := binary.Varint(p)
	if w <= 0 {
		return nil, nil, errors.New("bad record varint")
	}
	p = p[w:]
	if l < 0 {
		return nil, p, nil
	}
	if int64(len(p)) < l {
		return nil, nil, errors.New("record field overruns record")
	}
	return p[:l], p[l:], nil
}

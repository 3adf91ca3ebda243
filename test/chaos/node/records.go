package node

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// KV is the latest record of one record key in a replica's copy of a
// partition: its offset and value (nil: a tombstone).
type KV struct {
	Offset int64
	Value  []byte
}

// ReplicaLatest reads one partition's copy in a stopped node's data
// directory (as ReplicaBatches does) and returns the latest record of each
// record key below offset below (control batches skipped). ok is false
// when the node holds no copy of the partition.
func ReplicaLatest(dataDir, topic string, partition int32, below int64) (latest map[string]KV, ok bool, err error) {
	dir := filepath.Join(dataDir, topic+"-"+strconv.Itoa(int(partition)))
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var segs []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() && strings.HasSuffix(name, ".log") && len(name) == 24 {
			segs = append(segs, name)
		}
	}
	sort.Strings(segs) // 20-digit base offsets: name order is offset order
	latest = map[string]KV{}
	for _, s := range segs {
		b, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil {
			return nil, true, err
		}
		if err := eachRecord(b, func(off int64, key, value []byte) {
			if off < below {
				if cur, ok := latest[string(key)]; !ok || off > cur.Offset {
					latest[string(key)] = KV{Offset: off, Value: value}
				}
			}
		}); err != nil {
			return nil, true, fmt.Errorf("%s: %w", filepath.Join(dir, s), err)
		}
	}
	return latest, true, nil
}

// eachRecord calls f for every record of the data batches of one segment
// (record batch format v2, any of Kafka's compression codecs); it stops at
// a batch cut short or at a zero tail, as parseBatches does.
func eachRecord(b []byte, f func(off int64, key, value []byte)) error {
	for pos := 0; pos+batchHeaderLen <= len(b); {
		base := int64(binary.BigEndian.Uint64(b[pos:]))
		length := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
		if length < batchHeaderLen-12 || pos+12+length > len(b) {
			break
		}
		end := pos + 12 + length
		if magic := b[pos+16]; magic != 2 {
			return fmt.Errorf("batch at byte %d (offset %d) has magic %d, not 2", pos, base, magic)
		}
		attrs := binary.BigEndian.Uint16(b[pos+21:])
		n := int(int32(binary.BigEndian.Uint32(b[pos+57:])))
		if attrs&0x20 != 0 { // a control batch (transaction marker)
			pos = end
			continue
		}
		recs, err := decompress(attrs&7, b[pos+batchHeaderLen:end])
		if err != nil {
			return fmt.Errorf("batch at offset %d: %w", base, err)
		}
		for i := 0; i < n; i++ {
			var r record
			if recs, err = r.parse(recs); err != nil {
				return fmt.Errorf("batch at offset %d, record %d: %w", base, i, err)
			}
			f(base+r.offsetDelta, r.key, r.value)
		}
		pos = end
	}
	return nil
}

type record struct {
	offsetDelta int64
	key, value  []byte // value nil: a tombstone
}

var errShort = errors.New("record cut short")

// parse reads one record (v2: varint length, attributes, varint timestamp
// and offset deltas, key, value, headers) and returns what follows it.
func (r *record) parse(b []byte) ([]byte, error) {
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || int64(len(b)-n) < length {
		return nil, errShort
	}
	rest, body := b[n+int(length):], b[n:n+int(length)]
	if len(body) < 1 {
		return nil, errShort
	}
	body = body[1:] // attributes
	var ok bool
	if _, body, ok = varint(body); !ok { // timestamp delta
		return nil, errShort
	}
	if r.offsetDelta, body, ok = varint(body); !ok {
		return nil, errShort
	}
	if r.key, body, ok = bytesField(body); !ok {
		return nil, errShort
	}
	if r.value, _, ok = bytesField(body); !ok {
		return nil, errShort
	}
	return rest, nil
}

func varint(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

// bytesField reads a varint length (-1: null) and that many bytes.
func bytesField(b []byte) ([]byte, []byte, bool) {
	l, b, ok := varint(b)
	if !ok || l > int64(len(b)) {
		return nil, nil, false
	}
	if l < 0 {
		return nil, b, true
	}
	return append([]byte{}, b[:l]...), b[l:], true
}

// xerialMagic starts snappy data in the xerial framing (Java clients).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func decompress(codec uint16, b []byte) ([]byte, error) {
	switch codec {
	case 0:
		return b, nil
	case 1:
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case 2:
		if !bytes.HasPrefix(b, xerialMagic) {
			return s2.Decode(nil, b)
		}
		// xerial: 16-byte header, then blocks of a 4-byte length and data.
		var out []byte
		for b = b[16:]; len(b) >= 4; {
			l := int(binary.BigEndian.Uint32(b))
			if l > len(b)-4 {
				return nil, errShort
			}
			blk, err := s2.Decode(nil, b[4:4+l])
			if err != nil {
				return nil, err
			}
			out, b = append(out, blk...), b[4+l:]
		}
		return out, nil
	case 3:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(b)))
	case 4:
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(b, nil)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

package node

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ReplicaBatches reads the record batches of one partition from a stopped
// node's data directory (Kafka's layout: <log.dirs>/<topic>-<partition>/
// <20-digit base offset>.log) and returns each batch's base offset, last
// offset, partition leader epoch and CRC, in log order. It parses batch
// headers only (record batch format v2). ok is false when the node holds no
// copy of the partition. A batch cut short at the end of a segment (a write
// torn by SIGKILL that recovery did not truncate) ends that segment.
func ReplicaBatches(dataDir, topic string, partition int32) (batches [][4]int64, ok bool, err error) {
	dir := filepath.Join(dataDir, topic+"-"+strconv.Itoa(int(partition)))
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	type seg struct {
		base int64
		path string
	}
	var segs []seg
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".log") || len(name) != 24 {
			continue // .index, .timeindex, .snapshot, .deleted, .cleaned, .swap, …
		}
		base, perr := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if perr != nil {
			continue
		}
		segs = append(segs, seg{base, filepath.Join(dir, name)})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].base < segs[j].base })
	for _, s := range segs {
		b, err := os.ReadFile(s.path)
		if err != nil {
			return nil, true, err
		}
		bs, err := parseBatches(b)
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", s.path, err)
		}
		batches = append(batches, bs...)
	}
	return batches, true, nil
}

// Record batch v2 header: baseOffset int64, batchLength int32,
// partitionLeaderEpoch int32, magic int8, crc uint32, attributes int16,
// lastOffsetDelta int32, … (61 bytes in all).
const batchHeaderLen = 61

// parseBatches splits one segment's bytes into batch headers; it stops at a
// batch cut short or at zeroes (a preallocated or torn tail).
func parseBatches(b []byte) ([][4]int64, error) {
	var out [][4]int64
	for pos := 0; pos+batchHeaderLen <= len(b); {
		base := int64(binary.BigEndian.Uint64(b[pos:]))
		length := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
		if length == 0 && base == 0 && len(out) > 0 {
			break // zero tail
		}
		if length < batchHeaderLen-12 {
			break
		}
		end := pos + 12 + length
		if end > len(b) {
			break // torn tail
		}
		epoch := int64(int32(binary.BigEndian.Uint32(b[pos+12:])))
		if magic := b[pos+16]; magic != 2 {
			return out, fmt.Errorf("batch at byte %d (offset %d) has magic %d, not 2", pos, base, magic)
		}
		crc := int64(binary.BigEndian.Uint32(b[pos+17:]))
		lastDelta := int64(int32(binary.BigEndian.Uint32(b[pos+23:])))
		out = append(out, [4]int64{base, base + lastDelta, epoch, crc})
		pos = end
	}
	return out, nil
}

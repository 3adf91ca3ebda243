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

// abortedTxnEntryLen is one entry of Kafka's .txnindex: version int16 (0),
// producer id int64, first offset int64, last offset int64, last stable
// offset int64.
const abortedTxnEntryLen = 34

// ReplicaAbortedTxns reads the aborted-transaction indexes (<20-digit base
// offset>.txnindex) of one partition from a stopped node's data directory
// and returns each entry's producer id, first offset and last offset (the
// ABORT marker's), in segment order. ok is false when the node holds no
// copy of the partition. A torn last entry is ignored.
func ReplicaAbortedTxns(dataDir, topic string, partition int32) (txns [][3]int64, ok bool, err error) {
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
		if e.IsDir() || !strings.HasSuffix(name, ".txnindex") || len(name) != 29 {
			continue
		}
		base, perr := strconv.ParseInt(strings.TrimSuffix(name, ".txnindex"), 10, 64)
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
		for pos := 0; pos+abortedTxnEntryLen <= len(b); pos += abortedTxnEntryLen {
			if v := int16(binary.BigEndian.Uint16(b[pos:])); v != 0 {
				return nil, true, fmt.Errorf("%s: entry at byte %d has version %d", s.path, pos, v)
			}
			txns = append(txns, [3]int64{
				int64(binary.BigEndian.Uint64(b[pos+2:])),
				int64(binary.BigEndian.Uint64(b[pos+10:])),
				int64(binary.BigEndian.Uint64(b[pos+18:])),
			})
		}
	}
	return txns, true, nil
}

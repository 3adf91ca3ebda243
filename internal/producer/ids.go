package producer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// IDFileName is the data-dir file holding the producer-id high-water mark.
const IDFileName = "producer-id-block"

// DefaultIDBlockSize is how many ids one durable write reserves (Kafka's
// controller hands brokers blocks of 1000 too).
const DefaultIDBlockSize = 1000

// IDs allocates producer ids that are never reused, even across restarts:
// ids are reserved in blocks; before the first id of a block is handed out
// the block's end is written durably to IDFileName, and after a restart
// allocation resumes at that end (the unused rest of the last block is
// skipped). Safe for concurrent use.
//
// The file is two lines of text: the format version (1) and the next id
// that has not been reserved.
type IDs struct {
	mu       sync.Mutex
	fs       vfs.FS
	path     string
	block    int64
	next     int64 // next id to hand out
	reserved int64 // ids < reserved are durably reserved
	// source, when set, hands out blocks instead of the file (a cluster's
	// controller): first id and count.
	source func() (int64, int64, error)
}

// NewBlockIDs returns an allocator that takes its blocks from source (the
// cluster's controller, which records every block it hands out in the
// metadata log, so no two brokers ever hand out the same id).
func NewBlockIDs(source func() (first, count int64, err error)) *IDs {
	return &IDs{source: source}
}

// OpenIDs opens (or creates) the allocator persisted in dataDir. block <= 0
// means DefaultIDBlockSize. A file that cannot be parsed is an error rather
// than a reason to start over (that could reuse ids).
func OpenIDs(fsys vfs.FS, dataDir string, block int64) (*IDs, error) {
	if block <= 0 {
		block = DefaultIDBlockSize
	}
	a := &IDs{fs: fsys, path: filepath.Join(dataDir, IDFileName), block: block}
	data, err := vfs.ReadFile(fsys, a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return a, nil
	case err != nil:
		return nil, fmt.Errorf("producer ids: %w", err)
	}
	next, err := parseIDFile(data)
	if err != nil {
		return nil, fmt.Errorf("producer ids: %s: %w", a.path, err)
	}
	a.next, a.reserved = next, next
	return a, nil
}

func parseIDFile(data []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 || lines[0] != "1" {
		return 0, errors.New("unrecognised producer-id file (want version 1 and one id)")
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad next producer id %q", lines[1])
	}
	return n, nil
}

// Next returns a new producer id. It fails only when the reservation cannot
// be made durable (the caller answers KAFKA_STORAGE_ERROR or similar) or the
// id space is exhausted.
func (a *IDs) Next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.reserved && a.source != nil {
		first, count, err := a.source()
		if err != nil {
			return 0, fmt.Errorf("producer ids: %w", err)
		}
		a.next, a.reserved = first, first+count
	}
	if a.next >= a.reserved {
		if a.next > math.MaxInt64-a.block {
			return 0, errors.New("producer ids: id space exhausted")
		}
		end := a.next + a.block
		content := []byte("1\n" + strconv.FormatInt(end, 10) + "\n")
		if err := vfs.WriteFileAtomic(a.fs, a.path, content, 0o644); err != nil {
			return 0, fmt.Errorf("producer ids: reserving block: %w", err)
		}
		a.reserved = end
	}
	id := a.next
	a.next++
	return id, nil
}

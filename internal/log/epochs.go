package log

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// epochEntry says: records from StartOffset on were appended in Epoch.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader-epoch cache, persisted in the partition's
// leader-epoch-checkpoint file (Kafka's format). Entries are strictly
// increasing in both fields.
type epochCache struct {
	mu      sync.RWMutex
	entries []epochEntry
}

func (c *epochCache) path(dir string) string { return filepath.Join(dir, leaderEpochFile) }

func (c *epochCache) load(fsys vfs.FS, dir string) error {
	lines, err := readCheckpoint(fsys, c.path(dir), 2)
	if err != nil {
		return err
	}
	var es []epochEntry
	for _, l := range lines {
		e, err1 := strconv.ParseInt(l[0], 10, 32)
		o, err2 := strconv.ParseInt(l[1], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("leader-epoch-checkpoint: bad entry %v", l)
		}
		if n := len(es); n > 0 && (int32(e) <= es[n-1].Epoch || o < es[n-1].StartOffset) {
			continue // not monotonic: drop, as Kafka does
		}
		es = append(es, epochEntry{int32(e), o})
	}
	c.mu.Lock()
	c.entries = es
	c.mu.Unlock()
	return nil
}

func (c *epochCache) store(fsys vfs.FS, dir string) error {
	c.mu.RLock()
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	c.mu.RUnlock()
	return writeCheckpoint(fsys, c.path(dir), lines)
}

// latest returns the newest epoch, or -1.
func (c *epochCache) latest() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// assign records that offset starts epoch if epoch is newer than the latest;
// it reports whether the cache changed.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if epoch <= last.Epoch {
			return false
		}
		if offset < last.StartOffset {
			return false
		}
	}
	c.entries = append(c.entries, epochEntry{epoch, offset})
	return true
}

// truncateFromEnd drops entries starting at or after offset.
func (c *epochCache) truncateFromEnd(offset int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart drops entries wholly below offset; the last of them is
// kept with its start moved up to offset.
func (c *epochCache) truncateFromStart(offset int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= offset {
		i++
	}
	if i == 0 {
		return false
	}
	keep := c.entries[i-1]
	if i == 1 && keep.StartOffset == offset {
		return false
	}
	keep.StartOffset = offset
	c.entries = append([]epochEntry{keep}, c.entries[i:]...)
	return true
}

// endOffsetFor answers OffsetForLeaderEpoch with Kafka's rules.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	es := c.entries
	if epoch < 0 {
		return -1, -1
	}
	if len(es) > 0 && es[len(es)-1].Epoch == epoch {
		return epoch, leo
	}
	hi := -1 // first entry with a larger epoch
	for i, e := range es {
		if e.Epoch > epoch {
			hi = i
			break
		}
	}
	if hi < 0 {
		return -1, -1
	}
	if hi == 0 {
		return epoch, es[0].StartOffset
	}
	return es[hi-1].Epoch, es[hi].StartOffset
}

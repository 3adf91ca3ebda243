package compact

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// PassStateFile is the data-dir file holding, per compacted partition, the
// outcome of the cleaner's last passes, so that the status still shows them
// after a restart (cleaner-offset-checkpoint holds only the offset, in
// Apache Kafka's format, which stays as it is). A JSON document, replaced
// atomically after each pass and at shutdown:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"last_pass_ms":...}]}
//
// A missing or unreadable file only loses history: the status then says
// "never" until the next pass.
const PassStateFile = "cleaner-pass-state.json"

const passStateVersion = 1

type passStateDoc struct {
	Version    int              `json:"version"`
	Partitions []passStateEntry `json:"partitions"`
}

type passStateEntry struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// the last successful pass
	LastPassMs   int64 `json:"last_pass_ms,omitempty"`
	DurationMs   int64 `json:"duration_ms,omitempty"`
	BytesRead    int64 `json:"bytes_read,omitempty"`
	BytesWritten int64 `json:"bytes_written,omitempty"`
	Passes       int64 `json:"passes,omitempty"`
	// the last failed pass, if it came after the last successful one
	LastError   string `json:"last_error,omitempty"`
	LastErrorMs int64  `json:"last_error_ms,omitempty"`
	Failures    int    `json:"consecutive_failures,omitempty"`
}

func (e passStateEntry) empty() bool { return e.LastPassMs == 0 && e.LastError == "" }

func readPassState(fsys vfs.FS, dir string) (map[log.TopicPartition]passStateEntry, error) {
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, PassStateFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return parsePassState(data)
}

func parsePassState(data []byte) (map[log.TopicPartition]passStateEntry, error) {
	var doc passStateDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", PassStateFile, err)
	}
	if doc.Version != passStateVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", PassStateFile, doc.Version, passStateVersion)
	}
	m := make(map[log.TopicPartition]passStateEntry, len(doc.Partitions))
	for _, e := range doc.Partitions {
		if e.Topic == "" || e.Partition < 0 || e.LastPassMs < 0 || e.Passes < 0 {
			return nil, fmt.Errorf("%s: bad entry for %q partition %d", PassStateFile, e.Topic, e.Partition)
		}
		m[log.TopicPartition{Topic: e.Topic, Partition: e.Partition}] = e
	}
	return m, nil
}

func formatPassState(m map[log.TopicPartition]passStateEntry) []byte {
	doc := passStateDoc{Version: passStateVersion, Partitions: make([]passStateEntry, 0, len(m))}
	for _, e := range m {
		doc.Partitions = append(doc.Partitions, e)
	}
	sort.Slice(doc.Partitions, func(i, j int) bool {
		a, b := doc.Partitions[i], doc.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	data, _ := json.Marshal(doc) // plain structs: cannot fail
	return append(data, '\n')
}

// passEntryLocked is what st says about the last passes of tp.
func passEntryLocked(tp log.TopicPartition, st *partState) passStateEntry {
	return passStateEntry{
		Topic: tp.Topic, Partition: tp.Partition,
		LastPassMs: st.lastPassMs, DurationMs: st.lastPass.Duration.Milliseconds(),
		BytesRead: st.lastPass.BytesRead, BytesWritten: st.lastPass.BytesWritten, Passes: st.passes,
		LastError: st.lastErr, LastErrorMs: st.lastErrMs, Failures: st.failures,
	}
}

// restorePassState fills the state of the partitions found in the file.
// A failure is history only: no retry backoff is restored.
func (c *Cleaner) restorePassState(m map[log.TopicPartition]passStateEntry) {
	for tp, e := range m {
		st := c.stateLocked(tp)
		st.lastPassMs, st.passes = e.LastPassMs, e.Passes
		st.lastPass.Duration = time.Duration(e.DurationMs) * time.Millisecond
		st.lastPass.BytesRead, st.lastPass.BytesWritten = e.BytesRead, e.BytesWritten
		st.lastErr, st.lastErrMs, st.failures = e.LastError, e.LastErrorMs, e.Failures
	}
}

// flushPassState writes PassStateFile if a pass ended since it was last
// written.
func (c *Cleaner) flushPassState() error {
	c.mu.Lock()
	if !c.psDirty {
		c.mu.Unlock()
		return nil
	}
	snap := make(map[log.TopicPartition]passStateEntry, len(c.state))
	for tp, st := range c.state {
		if e := passEntryLocked(tp, st); !e.empty() {
			snap[tp] = e
		}
	}
	c.psDirty = false
	c.mu.Unlock()
	if err := vfs.WriteFileAtomic(c.opts.FS, filepath.Join(c.opts.DataDir, PassStateFile), formatPassState(snap), 0o644); err != nil {
		c.mu.Lock()
		c.psDirty = true
		c.mu.Unlock()
		return err
	}
	return nil
}

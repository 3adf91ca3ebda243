package broker

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// A cluster node checkpoints its replicated partitions' high watermarks in
// Kafka's replication-offset-checkpoint file in the data directory (version
// line 0, the entry count, then "topic partition offset" lines), every
// replica.high.watermark.checkpoint.interval.ms and at shutdown, through
// vfs.WriteFileAtomic. At start the partition layer takes each partition's
// high watermark from it (capped at the log end) instead of starting from
// the log start offset (internal/replica/checkpoint.go).

const hwCheckpointFile = "replication-offset-checkpoint"

// encodeHWCheckpoint renders hw in Kafka's checkpoint format, sorted.
func encodeHWCheckpoint(hw *log.Offsets) []byte { return hw.Format() }

// decodeHWCheckpoint parses Kafka's checkpoint format (version 0).
func decodeHWCheckpoint(data []byte) (*log.Offsets, error) { return log.ParseOffsets(data, true) }

// loadHWCheckpoint gives the partition layer the checkpointed high
// watermarks (none when the file is missing; a damaged file is logged and
// ignored: high watermarks then come back from the in-sync replicas).
func (c *clusterNode) loadHWCheckpoint(fsys vfs.FS) {
	path := filepath.Join(c.b.dataDir, hwCheckpointFile)
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.logger.Warn("cannot read the high watermark checkpoint", "path", path, "err", err)
		}
		return
	}
	hw, err := decodeHWCheckpoint(data)
	if err != nil {
		c.logger.Warn("ignoring a damaged high watermark checkpoint", "path", path, "err", err)
		return
	}
	c.b.replicas.SetCheckpoint(hw)
}

// hwCheckpointLoop writes the checkpoint every interval and once more when
// ctx ends (shutdown).
func (c *clusterNode) hwCheckpointLoop(ctx context.Context, fsys vfs.FS) {
	ms, err := strconv.ParseInt(strings.TrimSpace(c.b.cfg.Raw["replica.high.watermark.checkpoint.interval.ms"]), 10, 64)
	if err != nil || ms <= 0 {
		ms = 5000
	}
	t := time.NewTicker(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	var last []byte
	write := func() {
		data := encodeHWCheckpoint(c.b.replicas.HighWatermarks())
		if bytes.Equal(data, last) {
			return
		}
		if err := vfs.WriteFileAtomic(fsys, filepath.Join(c.b.dataDir, hwCheckpointFile), data, 0o644); err != nil {
			c.logger.Warn("cannot write the high watermark checkpoint", "err", err)
			return
		}
		last = data
	}
	for {
		select {
		case <-ctx.Done():
			write()
			return
		case <-t.C:
			write()
		}
	}
}

package broker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
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
func encodeHWCheckpoint(hw map[log.TopicPartition]int64) []byte {
	tps := make([]log.TopicPartition, 0, len(hw))
	for tp := range hw {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, hw[tp])
	}
	return b.Bytes()
}

// decodeHWCheckpoint parses Kafka's checkpoint format (version 0).
func decodeHWCheckpoint(data []byte) (map[log.TopicPartition]int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != "0" {
		return nil, fmt.Errorf("unsupported version %q", v)
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("bad entry count %q", c)
	}
	out := make(map[log.TopicPartition]int64, n)
	for i := 0; i < n; i++ {
		l, ok := line()
		f := strings.Fields(l)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("entry %d: %q is not \"topic partition offset\"", i, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("entry %d: %q is not \"topic partition offset\"", i, l)
		}
		out[log.TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

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

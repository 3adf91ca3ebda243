package log

import (
	"errors"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// Block reservation ahead of the active segment's end.
//
// A write that extends a file on ext4 (delayed allocation) pays, per 4 KiB
// block, for reserving space and recording a delayed
// extent; at writeback the blocks are allocated. Blocks allocated ahead
// (fallocate with FALLOC_FL_KEEP_SIZE: the file's size is unchanged, so
// readers, recovery and the on-disk format see nothing) skip that: the write
// finds them mapped. On this project's VM, BenchmarkAppendReserve's appends
// took 0.20-0.24 system CPU seconds per GB with reservations against
// 0.28-0.32 without (docs/performance.md, "Blocks reserved ahead"); the
// allocation itself is then done by fallocate, once per reservation, and
// writeback has fewer blocks to allocate.
//
// A segment reserves only once it holds reserveFrom bytes, and then ahead
// of its end by as much as it holds, at most reserveMax and never past
// segment.bytes: an idle or small partition reserves nothing, and no
// segment holds more than min(its size, reserveMax) of reserved blocks
// past its end. Those are given back when the segment is rolled or the log
// closed (a truncate to its own size), and by any truncation; after a crash,
// by the recovery of the active segment (recover.go), which finds them with
// vfs.BlocksPastEnd. Other filesystems are not asked (vfs.Reserve: ext4
// only).
const (
	reserveFrom = 64 << 10
	reserveMax  = 4 << 20
)

// reserveLocked reserves blocks for the write of pos0..end in the active
// segment s and ahead of it. Failure costs nothing but the reservation: a
// filesystem that cannot reserve is not asked again, and any other error
// (no space) is left to the write, which allocates as it goes.
func (l *Log) reserveLocked(cfg *Config, s *segment, pos0, end int64) {
	if l.m.noReserve.Load() {
		return
	}
	want := end + min(end, reserveMax)
	if want > cfg.SegmentBytes {
		want = max(end, cfg.SegmentBytes)
	}
	err := vfs.Reserve(s.log, pos0, want-pos0)
	if errors.Is(err, errors.ErrUnsupported) {
		if !l.m.noReserve.Swap(true) {
			l.logger().Info("filesystem cannot reserve blocks ahead of writes; writing without", "dir", l.dir, "err", err)
		}
		return
	}
	// Also after an error (no space): part may be allocated, and the next
	// try waits until the end passes want.
	s.reserved = want
	if err != nil {
		l.logger().Debug("block reservation failed", "dir", l.dir, "err", err)
	}
}

// trimReservedLocked gives back the blocks reserved past segment s's end.
func (l *Log) trimReservedLocked(s *segment) {
	size := s.size.Load()
	if s.reserved <= size {
		return
	}
	s.reserved = 0
	if err := s.log.Truncate(size); err != nil {
		l.logger().Warn("cannot give back blocks reserved past the segment's end", "dir", l.dir, "err", err)
	}
}

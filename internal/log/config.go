package log

import (
	"fmt"
	"math"

	"github.com/sluice-broker/sluice/internal/batch"
)

// Config is the typed, per-partition configuration of a log. The broker
// resolves topic and broker configs (Kafka names in the comments) into it.
// Zero values are not defaults: start from DefaultConfig.
type Config struct {
	SegmentBytes       int64 // segment.bytes: roll when the active segment would exceed it
	SegmentMs          int64 // segment.ms: roll a non-empty segment older than this
	SegmentJitterMs    int64 // segment.jitter.ms: a random amount subtracted from SegmentMs per log
	SegmentIndexBytes  int   // segment.index.bytes: roll when the offset or time index would exceed it
	IndexIntervalBytes int   // index.interval.bytes: bytes between offset-index entries

	RetentionMs     int64 // retention.ms, -1 = forever
	RetentionBytes  int64 // retention.bytes, -1 = unbounded
	DeleteRetention bool  // cleanup.policy contains "delete": retention applies
	Compact         bool  // cleanup.policy contains "compact": every record needs a key

	FlushMessages int64 // flush.messages: fsync once this many messages are unflushed (math.MaxInt64 = never forced)
	FlushMs       int64 // flush.ms: fsync data older than this (math.MaxInt64 = never forced)

	MessageTimestampType batch.TimestampType // message.timestamp.type
	MaxMessageBytes      int                 // max.message.bytes: largest batch accepted
	TimestampBeforeMaxMs int64               // message.timestamp.before.max.ms (math.MaxInt64 = unchecked); when set, compressed batches are decoded to find the earliest record
	TimestampAfterMaxMs  int64               // message.timestamp.after.max.ms (math.MaxInt64 = unchecked); checked on the header's maxTimestamp, no decode

	FileDeleteDelayMs int64 // file.delete.delay.ms: deleted segments stay readable (renamed .deleted) this long

	// Compression is compression.type: ProducerCompression ("producer")
	// stores batches as produced; a codec (batch.None for "uncompressed")
	// makes Append re-encode each batch that arrives with another codec.
	Compression batch.Compression
	// CompressionLevel is compression.gzip.level, compression.lz4.level or
	// compression.zstd.level, whichever matches Compression (ignored for
	// the others); 0 means the codec's default. See batch.AppendCompressed.
	CompressionLevel int
}

// ProducerCompression is Config.Compression for compression.type=producer:
// batches keep the codec the producer chose.
const ProducerCompression batch.Compression = -1

// DefaultConfig returns Apache Kafka 4.x's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:         1073741824,
		SegmentMs:            604800000,
		SegmentJitterMs:      0,
		SegmentIndexBytes:    10485760,
		IndexIntervalBytes:   4096,
		RetentionMs:          604800000,
		RetentionBytes:       -1,
		DeleteRetention:      true,
		Compact:              false,
		FlushMessages:        math.MaxInt64,
		FlushMs:              math.MaxInt64,
		MessageTimestampType: batch.CreateTime,
		MaxMessageBytes:      1048588,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  3600000, // Kafka 4.0 default
		FileDeleteDelayMs:    60000,
		Compression:          ProducerCompression,
	}
}

// minSegmentBytes is the smallest segment.bytes we accept (Kafka: 14 bytes
// for topics; we only need room for a header).
const minSegmentBytes = batch.HeaderSize

// Validate reports a config the log cannot work with.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < minSegmentBytes || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("log: segment.bytes %d out of range [%d, %d]", c.SegmentBytes, minSegmentBytes, math.MaxInt32)
	case c.SegmentMs <= 0:
		return fmt.Errorf("log: segment.ms %d must be positive", c.SegmentMs)
	case c.SegmentJitterMs < 0:
		return fmt.Errorf("log: segment.jitter.ms %d must not be negative", c.SegmentJitterMs)
	case c.SegmentIndexBytes < 2*timeIndexEntrySize:
		return fmt.Errorf("log: segment.index.bytes %d too small", c.SegmentIndexBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("log: index.interval.bytes %d must not be negative", c.IndexIntervalBytes)
	case c.RetentionMs < -1:
		return fmt.Errorf("log: retention.ms %d must be >= -1", c.RetentionMs)
	case c.RetentionBytes < -1:
		return fmt.Errorf("log: retention.bytes %d must be >= -1", c.RetentionBytes)
	case c.FlushMessages < 1:
		return fmt.Errorf("log: flush.messages %d must be >= 1", c.FlushMessages)
	case c.FlushMs < 0:
		return fmt.Errorf("log: flush.ms %d must not be negative", c.FlushMs)
	case c.MessageTimestampType != batch.CreateTime && c.MessageTimestampType != batch.LogAppendTime:
		return fmt.Errorf("log: unknown message.timestamp.type %d", c.MessageTimestampType)
	case c.MaxMessageBytes <= 0:
		return fmt.Errorf("log: max.message.bytes %d must be positive", c.MaxMessageBytes)
	case c.TimestampBeforeMaxMs < 0 || c.TimestampAfterMaxMs < 0:
		return fmt.Errorf("log: message.timestamp.before/after.max.ms must not be negative")
	case c.FileDeleteDelayMs < 0:
		return fmt.Errorf("log: file.delete.delay.ms %d must not be negative", c.FileDeleteDelayMs)
	case c.Compression != ProducerCompression && (c.Compression < batch.None || c.Compression > batch.Zstd):
		return fmt.Errorf("log: unknown compression codec %d", c.Compression)
	case c.Compression != ProducerCompression && !batch.ValidLevel(c.Compression, c.CompressionLevel):
		return fmt.Errorf("log: compression level %d is not valid for %s", c.CompressionLevel, c.Compression)
	}
	return nil
}

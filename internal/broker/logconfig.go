package broker

import (
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/log"
)

// logConfig resolves a topic's overrides (on top of the broker config) into
// the typed per-partition log.Config. A resolution error is INVALID_CONFIG.
func (b *Broker) logConfig(overrides map[string]string) (log.Config, error) {
	return logConfigOf(b.conf(), overrides)
}

// logConfigOf resolves overrides on top of the broker configuration bc.
func logConfigOf(bc *config.Broker, overrides map[string]string) (log.Config, error) {
	t, err := bc.Topic(overrides)
	if err != nil {
		return log.Config{}, err
	}
	c := log.DefaultConfig()
	c.SegmentBytes = t.SegmentBytes
	c.SegmentMs = t.SegmentMs
	c.SegmentJitterMs = t.SegmentJitterMs
	c.SegmentIndexBytes = int(t.SegmentIndexBytes)
	c.IndexIntervalBytes = int(t.IndexIntervalBytes)
	c.RetentionMs = t.RetentionMs
	c.RetentionBytes = t.RetentionBytes
	c.DeleteRetention = t.CleanupPolicyDelete
	c.Compact = t.CleanupPolicyCompact
	c.FlushMessages = t.FlushMessages
	c.FlushMs = t.FlushMs
	c.MessageTimestampType = batch.CreateTime
	if t.MessageTimestampType == "LogAppendTime" {
		c.MessageTimestampType = batch.LogAppendTime
	}
	c.MaxMessageBytes = int(t.MaxMessageBytes)
	c.TimestampBeforeMaxMs = t.TimestampBeforeMaxMs
	c.TimestampAfterMaxMs = t.TimestampAfterMaxMs
	c.FileDeleteDelayMs = t.FileDeleteDelayMs
	c.Compression, c.CompressionLevel = compressionConfig(&t)
	return c, nil
}

// compressionConfig resolves compression.type and the matching
// compression.<codec>.level. The config table only lets the six names of
// compression.type through.
func compressionConfig(t *config.Topic) (batch.Compression, int) {
	switch t.CompressionType {
	case "uncompressed":
		return batch.None, 0
	case "gzip":
		return batch.Gzip, t.CompressionGzipLevel
	case "snappy":
		return batch.Snappy, 0
	case "lz4":
		return batch.LZ4, t.CompressionLz4Level
	case "zstd":
		return batch.Zstd, t.CompressionZstdLevel
	}
	return log.ProducerCompression, 0
}

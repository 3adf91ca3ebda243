package broker

import (
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
)

// logConfig resolves a topic's overrides (on top of the broker config) into
// the typed per-partition log.Config. A resolution error is INVALID_CONFIG.
func (b *Broker) logConfig(overrides map[string]string) (log.Config, error) {
	t, err := b.cfg.Topic(overrides)
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
	return c, nil
}

package config

import "strings"

// Topic is the typed effective configuration of one topic, used by the broker
// and the log.
type Topic struct {
	CleanupPolicyCompact, CleanupPolicyDelete bool
	RetentionMs, RetentionBytes               int64
	SegmentBytes, SegmentMs, SegmentJitterMs  int64
	SegmentIndexBytes, IndexIntervalBytes     int32
	DeleteRetentionMs                         int64
	MinCompactionLagMs, MaxCompactionLagMs    int64
	MinCleanableDirtyRatio                    float64
	FlushMessages, FlushMs                    int64
	MaxMessageBytes                           int32
	MessageTimestampType                      string // CreateTime | LogAppendTime
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	FileDeleteDelayMs                         int64
	CompressionType                           string
	CompressionGzipLevel                      int
	CompressionLz4Level                       int
	CompressionZstdLevel                      int
	MinInsyncReplicas                         int32
	Preallocate                               bool
	UncleanLeaderElection                     bool
	RemoteStorageEnable                       bool
}

// Topic validates overrides and resolves the typed effective configuration
// for a topic with those overrides on top of this broker's configuration
// (override > broker property > default). Bad overrides give a *ConfigError.
func (b *Broker) Topic(overrides map[string]string) (Topic, error) {
	if err := ValidateTopicConfigs(overrides); err != nil {
		return Topic{}, err
	}
	r := topicReader{b: b, overrides: overrides}
	var t Topic
	for _, p := range parseList(r.str("cleanup.policy")) {
		switch p {
		case "compact":
			t.CleanupPolicyCompact = true
		case "delete":
			t.CleanupPolicyDelete = true
		}
	}
	t.RetentionMs = r.int("retention.ms")
	t.RetentionBytes = r.int("retention.bytes")
	t.SegmentBytes = r.int("segment.bytes")
	t.SegmentMs = r.int("segment.ms")
	t.SegmentJitterMs = r.int("segment.jitter.ms")
	t.SegmentIndexBytes = int32(r.int("segment.index.bytes"))
	t.IndexIntervalBytes = int32(r.int("index.interval.bytes"))
	t.DeleteRetentionMs = r.int("delete.retention.ms")
	t.MinCompactionLagMs = r.int("min.compaction.lag.ms")
	t.MaxCompactionLagMs = r.int("max.compaction.lag.ms")
	t.MinCleanableDirtyRatio = r.double("min.cleanable.dirty.ratio")
	t.FlushMessages = r.int("flush.messages")
	t.FlushMs = r.int("flush.ms")
	t.MaxMessageBytes = int32(r.int("max.message.bytes"))
	t.MessageTimestampType = r.str("message.timestamp.type")
	t.TimestampBeforeMaxMs = r.int("message.timestamp.before.max.ms")
	t.TimestampAfterMaxMs = r.int("message.timestamp.after.max.ms")
	t.FileDeleteDelayMs = r.int("file.delete.delay.ms")
	t.CompressionType = r.str("compression.type")
	t.CompressionGzipLevel = int(r.int("compression.gzip.level"))
	t.CompressionLz4Level = int(r.int("compression.lz4.level"))
	t.CompressionZstdLevel = int(r.int("compression.zstd.level"))
	t.MinInsyncReplicas = int32(r.int("min.insync.replicas"))
	t.Preallocate = r.bool("preallocate")
	t.UncleanLeaderElection = r.bool("unclean.leader.election.enable")
	t.RemoteStorageEnable = r.bool("remote.storage.enable")
	if r.err != nil {
		return Topic{}, r.err
	}
	return t, nil
}

// topicReader reads resolved, validated topic values; the first failure
// (which would be an internal inconsistency) is kept in err.
type topicReader struct {
	b         *Broker
	overrides map[string]string
	err       error
}

func (r *topicReader) raw(name string) (string, Type) {
	v, ok := r.b.ResolveTopicConfig(name, r.overrides)
	if !ok {
		panic("config: internal lookup of unknown topic config " + name)
	}
	return strings.TrimSpace(v.Value), v.Def.Type
}

func (r *topicReader) fail(name, v string, err error) {
	if r.err == nil {
		r.err = &ConfigError{Name: name, Value: v, Msg: err.Error()}
	}
}

func (r *topicReader) int(name string) int64 {
	v, t := r.raw(name)
	n, err := parseInt(t, v)
	if err != nil {
		r.fail(name, v, err)
	}
	return n
}

func (r *topicReader) double(name string) float64 {
	v, _ := r.raw(name)
	f, err := parseDouble(v)
	if err != nil {
		r.fail(name, v, err)
	}
	return f
}

func (r *topicReader) bool(name string) bool {
	v, _ := r.raw(name)
	x, err := parseBool(v)
	if err != nil {
		r.fail(name, v, err)
	}
	return x
}

func (r *topicReader) str(name string) string {
	v, _ := r.raw(name)
	return v
}

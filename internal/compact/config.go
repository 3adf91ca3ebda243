package compact

import (
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// TopicConfig holds the per-topic compaction knobs (Kafka names in the
// comments). Whether a log is compacted at all comes from its log.Config
// (Compact, i.e. cleanup.policy contains "compact"), read live.
type TopicConfig struct {
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	DeleteRetentionMs      int64   // delete.retention.ms
}

// DefaultTopicConfig returns Apache Kafka's defaults.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      86400000,
	}
}

// FromTopic picks the compaction knobs out of a resolved topic config.
func FromTopic(t config.Topic) TopicConfig {
	return TopicConfig{
		MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,
		MinCompactionLagMs:     t.MinCompactionLagMs,
		MaxCompactionLagMs:     t.MaxCompactionLagMs,
		DeleteRetentionMs:      t.DeleteRetentionMs,
	}
}

// Options configure a Cleaner. Zero values pick the defaults.
type Options struct {
	// FS and DataDir locate cleaner-offset-checkpoint; they must be the
	// log manager's. Required.
	FS      vfs.FS
	DataDir string
	// Manager lists the logs to clean. Required.
	Manager *log.Manager
	// Disabled is log.cleaner.enable=false: no pass runs (status still
	// reports, with the reason "cleaner disabled").
	Disabled bool
	// Threads is log.cleaner.threads (default 1; 0 means 1).
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, shared by the
	// threads (default 128 MiB). Each thread's map is allocated on its first
	// pass and reused.
	DedupeBufferSize int64
	// LoadFactor is how full the map may get (log.cleaner.io.buffer.load.factor,
	// which Kafka also applies to the dedupe buffer; default 0.9).
	LoadFactor float64
	// BackoffMs is log.cleaner.backoff.ms: how long an idle thread waits
	// before looking again (default 15000). A failed pass is retried after
	// BackoffMs, doubling per consecutive failure up to MaxRetryBackoffMs.
	BackoffMs         int64
	MaxRetryBackoffMs int64 // default 10 minutes
	// TopicConfig returns a topic's compaction knobs; default
	// DefaultTopicConfig for every topic.
	TopicConfig func(topic string) TopicConfig
	// Now is the clock (default time.Now); tests pass a fake one.
	Now func() time.Time
	// Logger receives pass summaries and failures; default slog.Default().
	Logger *slog.Logger
	// Registerer, if set, gets the compaction metrics.
	Registerer prometheus.Registerer
}

func (o *Options) setDefaults() {
	if o.Threads <= 0 {
		o.Threads = 1
	}
	if o.DedupeBufferSize <= 0 {
		o.DedupeBufferSize = 128 << 20
	}
	if o.LoadFactor <= 0 || o.LoadFactor > 1 {
		o.LoadFactor = 0.9
	}
	if o.BackoffMs <= 0 {
		o.BackoffMs = 15000
	}
	if o.MaxRetryBackoffMs <= 0 {
		o.MaxRetryBackoffMs = 600000
	}
	if o.TopicConfig == nil {
		o.TopicConfig = func(string) TopicConfig { return DefaultTopicConfig() }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// The log cleaner's place in the broker: started once the logs are open, given
// each topic's live compaction settings, closed before the logs close, and
// its status served next to /metrics at compact.StatusPath.

package broker

import (
	"github.com/sluice-broker/sluice/internal/compact"
)

func (b *Broker) startCleaner() error {
	c, err := compact.New(compact.Options{
		FS:               b.fs,
		DataDir:          b.dataDir,
		Manager:          b.logs,
		Disabled:         !b.cfg.LogCleanerEnable,
		Threads:          b.cfg.LogCleanerThreads,
		DedupeBufferSize: b.cfg.LogCleanerDedupeBufferSize,
		LoadFactor:       b.cfg.LogCleanerIOBufferLoadFactor,
		BackoffMs:        b.cfg.LogCleanerBackoffMs,
		TopicConfig:      b.compactionConfig,
		Logger:           b.logger,
		Registerer:       b.metrics.Registry,
		Now:              b.nowFunc(),
	})
	if err != nil {
		return err
	}
	b.cleaner = c
	c.Start()
	b.onClose(c.Close)
	return nil
}

// compactionConfig resolves a topic's compaction knobs from its current
// overrides, so config changes apply to the next pass without a restart.
func (b *Broker) compactionConfig(topic string) compact.TopicConfig {
	t, ok := b.topics.Get(topic)
	if !ok {
		return compact.DefaultTopicConfig()
	}
	tc, err := b.conf().Topic(t.Configs)
	if err != nil {
		return compact.DefaultTopicConfig()
	}
	return compact.FromTopic(tc)
}

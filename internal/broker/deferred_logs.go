// Partitions loaded on first use: after a clean shutdown the log manager
// enters every partition without reading its directory (internal/log
// deferred.go). Here the broker rebuilds a partition's producer state when
// its log is loaded, resolves each topic's config once at start instead of
// once per partition, and loads the remaining partitions in the background
// once it serves.

package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/producer"
)

// deferredLoadWorkers is how many goroutines load the partitions not used
// yet after a clean start: one, so that the other core serves.
const deferredLoadWorkers = 1

// installDeferredLoading sets the manager's OnLoad hook and memoises
// ConfigFor per topic (every partition of a topic has its topic's config).
func installDeferredLoading(b *Broker, o *log.ManagerOptions) {
	o.OnLoad = func(v log.LoadView) error {
		l := v.Log()
		b.rebuildProducerState(log.TopicPartition{Topic: l.Topic(), Partition: l.Partition()}, v, time.Now().UnixMilli())
		return nil
	}
	if cf := o.ConfigFor; cf != nil {
		var mu sync.Mutex
		byTopic := map[string]log.Config{}
		o.ConfigFor = func(topic string, partition int32) log.Config {
			mu.Lock()
			defer mu.Unlock()
			if c, ok := byTopic[topic]; ok {
				return c
			}
			c := cf(topic, partition)
			byTopic[topic] = c
			return c
		}
	}
}

// rebuildProducerState rebuilds a partition's producer state from its log
// (at start, or when the log is loaded on first use).
func (b *Broker) rebuildProducerState(tp log.TopicPartition, src producer.Source, nowMs int64) {
	s := b.producers.get(tp)
	if s == nil {
		return
	}
	if err := s.RebuildFrom(b.fs, src, nowMs, int64(b.cfg.ProducerIDExpirationMs)); err != nil {
		// Not fatal: the partition still serves; its producers are
		// unknown and may resume at any sequence.
		b.logger.Error("cannot rebuild producer state", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		s.Clear()
		return
	}
	// A rebuild that had to scan the log past its last snapshot (after a
	// crash) snapshots what it found, so that the next crash scans only
	// what comes after: a broker killed more often than it snapshots
	// would otherwise rescan ever more log at every start. Recovery has
	// made the log durable up to its end, so the snapshot never runs
	// ahead of what survives a power loss.
	if _, err := s.SnapshotIfChanged(b.fs, src.Dir()); err != nil {
		b.logger.Error("cannot write producer snapshot", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
}

// noDeferredLoading keeps brokers started while it is set from loading their
// partitions in the background (tests of the first use of a partition not
// loaded yet, which the background loader would otherwise race with).
var noDeferredLoading atomic.Bool

// startDeferredLoading loads, in the background, the partitions a clean
// start left unloaded, and logs when it is done. It stops when the log
// manager closes.
func (b *Broker) startDeferredLoading() {
	if noDeferredLoading.Load() {
		return
	}
	logs := b.logs
	go func() {
		n, d := logs.LoadDeferred(deferredLoadWorkers, nil)
		if n > 0 {
			b.logger.Info("loaded the partitions not used since the start in the background", "partitions", n, "elapsed", d.Round(time.Millisecond))
		}
	}()
}

package broker

import (
	"fmt"
	"slices"

	"github.com/sluice-broker/sluice/internal/topics"
)

// reconcile makes the partition logs on disk agree with the topic metadata at
// start:
//
//   - every partition in the metadata gets its log opened with the topic's
//     resolved config; a missing one is created empty (with a warning);
//   - a partition directory the metadata does not know about is left over
//     from an interrupted CreateTopics, CreatePartitions or DeleteTopics
//     (metadata is always written after creating logs and before deleting
//     them): it is deleted, with a warning;
//   - except when the data directory has no metadata file at all (a directory
//     written by something else, or whose metadata file was removed): then
//     the partition directories are adopted as topics with new ids, default
//     configs and as many partitions as the highest partition number + 1,
//     so no data is ever thrown away because metadata is missing.
func (b *Broker) reconcile() error {
	onDisk := b.logs.Partitions()
	present := make(map[string]map[int32]bool)
	for _, tp := range onDisk {
		if present[tp.Topic] == nil {
			present[tp.Topic] = map[int32]bool{}
		}
		present[tp.Topic][tp.Partition] = true
	}
	if !b.topics.HadMetadata() && len(onDisk) > 0 {
		counts := map[string]int32{}
		for _, tp := range onDisk {
			counts[tp.Topic] = max(counts[tp.Topic], tp.Partition+1)
		}
		names := make([]string, 0, len(counts))
		for name := range counts {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if err := topics.ValidateName(name); err != nil {
				b.logger.Warn("not adopting partition directory with an illegal topic name", "topic", name, "err", err)
				continue
			}
			t, err := b.topics.Create(topics.Topic{Name: name, Partitions: counts[name]})
			if err != nil {
				return fmt.Errorf("sluice: adopting topic %q: %w", name, err)
			}
			b.logger.Warn("adopted topic found on disk without metadata",
				"topic", name, "topic_id", t.ID.String(), "partitions", t.Partitions)
		}
	}

	for _, tp := range onDisk {
		t, ok := b.topics.Get(tp.Topic)
		if ok && tp.Partition < t.Partitions {
			continue
		}
		b.logger.Warn("deleting partition directory unknown to the topic metadata (left by an interrupted admin operation)",
			"topic", tp.Topic, "partition", tp.Partition)
		if err := b.logs.Delete(tp.Topic, tp.Partition); err != nil {
			return fmt.Errorf("sluice: deleting orphan partition %s-%d: %w", tp.Topic, tp.Partition, err)
		}
	}

	for _, t := range b.topics.List() {
		cfg, err := b.logConfig(t.Configs)
		if err != nil {
			return fmt.Errorf("sluice: topic %q has an invalid stored config: %w", t.Name, err)
		}
		for p := int32(0); p < t.Partitions; p++ {
			existed := present[t.Name][p]
			if !existed && b.clusterCfg != nil {
				continue // a cluster node holds only its replicas (publish creates them)
			}
			_, err := b.logs.Open(t.Name, p, cfg)
			if err != nil {
				return fmt.Errorf("sluice: opening %s-%d: %w", t.Name, p, err)
			}
			if !existed {
				b.logger.Warn("partition in metadata had no log on disk; created it empty", "topic", t.Name, "partition", p)
			}
		}
	}
	return nil
}

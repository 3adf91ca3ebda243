package broker

import (
	"maps"
	"slices"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
)

// publish makes this broker's local state follow the metadata image: the
// topic registry holds the image's topics (same ids, partition counts and
// configs); every partition with a replica here has its log, and its state
// (leader, epochs, replicas, in-sync set) in the partition layer; partitions
// and topics gone from the image (or moved away) are removed and their data
// deleted. Data partitions are handled before the internal topics' (whose
// coordinators, loading, may write transaction markers to data partitions).
// Runs on the cluster's publish goroutine only, one image at a time; it
// takes no adminMu (admin handlers hold it while they wait for publish):
// on a cluster node only publish changes the registry and the logs.
func (b *Broker) publish(im *metadata.Image) {
	b.publishACLs(im)          // cluster_security.go
	b.publishGroupConfigs(im)  // cluster_group_configs.go
	b.publishBrokerConfigs(im) // dynamic_configs.go
	self := b.self()
	for _, t := range b.topics.List() {
		it, ok := im.Topics[t.Name]
		if ok && topics.ID(it.ID) == t.ID {
			continue
		}
		delete(b.pubCfgs, t.Name)
		b.logger.Info("topic removed by the cluster metadata", "topic", t.Name, "topic_id", t.ID.String())
		purge, err := b.detachTopicLocal(t.Name)
		if err != nil {
			b.logger.Error("removing topic failed", "topic", t.Name, "err", err)
			continue
		}
		b.purges.start(t.Name, purge) // cluster_purge.go: removing files holds up no image

	}
	list := im.SortedTopics()
	for _, internal := range []bool{false, true} {
		for _, it := range list {
			if topics.IsInternal(it.Name) != internal {
				continue
			}
			b.publishTopic(im, it, self)
		}
	}
}

func (b *Broker) publishTopic(im *metadata.Image, it *metadata.Topic, self int32) {
	count := int32(len(it.Partitions))
	t, ok := b.topics.Get(it.Name)
	var err error
	switch {
	case !ok:
		t, err = b.topics.Create(topics.Topic{Name: it.Name, ID: topics.ID(it.ID), Partitions: count, Configs: maps.Clone(it.Configs)})
	case t.Partitions != count || !maps.Equal(t.Configs, it.Configs):
		t, err = b.topics.Update(it.Name, func(nt *topics.Topic) error {
			nt.Partitions = count
			nt.Configs = maps.Clone(it.Configs)
			return nil
		})
	}
	if err != nil {
		b.logger.Error("cannot record topic from the cluster metadata", "topic", it.Name, "err", err)
		return
	}
	cfg, err := b.publishedLogConfig(it.Name, t.Configs)
	if err != nil {
		b.logger.Error("topic has an invalid config in the cluster metadata", "topic", it.Name, "err", err)
		return
	}
	for i, ip := range it.Partitions {
		p := int32(i)
		l := b.logs.Get(it.Name, p)
		if !ip.HasReplica(self) {
			if l != nil {
				b.replicas.Remove(it.Name, p)
				if err := b.logs.Delete(it.Name, p); err != nil {
					b.logger.Error("cannot delete a partition moved away", "topic", it.Name, "partition", p, "err", err)
				}
			}
			continue
		}
		if l == nil {
			if l, err = b.logs.Create(it.Name, p, cfg); err != nil {
				b.logger.Error("cannot create a partition log", "topic", it.Name, "partition", p, "err", err)
				continue
			}
		} else if l.Config() != cfg {
			if err := l.SetConfig(cfg); err != nil {
				b.logger.Error("applying topic config to partition failed", "topic", it.Name, "partition", p, "err", err)
			}
		}
		st := replica.State{Leader: ip.Leader, LeaderEpoch: ip.LeaderEpoch, PartitionEpoch: ip.PartitionEpoch,
			Replicas: ip.Replicas, ISR: ip.ISR, MinISR: b.hwMinISR(t, len(ip.Replicas))} // elr_hw.go
		if cur := b.replicas.Get(it.Name, p); cur != nil && sameState(cur.State(), st) {
			continue
		}
		if _, err := b.replicas.Apply(l, st); err != nil {
			b.logger.Error("cannot apply partition state", "topic", it.Name, "partition", p, "err", err)
		}
	}
}

// publishedCfg is a topic's log config as publish last resolved it, from
// the broker configuration conf and the topic's overrides.
type publishedCfg struct {
	conf      *config.Broker
	overrides map[string]string
	cfg       log.Config
}

// publishedLogConfig is logConfig, remembered per topic until the broker
// configuration (a dynamic config change swaps it) or the topic's overrides
// change: publish runs for every image, and resolving every topic's configs
// each time made a metadata change cost time in proportion to the number of
// topics. Runs on the publish goroutine only.
func (b *Broker) publishedLogConfig(topic string, overrides map[string]string) (log.Config, error) {
	conf := b.conf()
	if pc, ok := b.pubCfgs[topic]; ok && pc.conf == conf && maps.Equal(pc.overrides, overrides) {
		return pc.cfg, nil
	}
	cfg, err := logConfigOf(conf, overrides)
	if err != nil {
		return cfg, err
	}
	if b.pubCfgs == nil {
		b.pubCfgs = map[string]publishedCfg{}
	}
	b.pubCfgs[topic] = publishedCfg{conf: conf, overrides: maps.Clone(overrides), cfg: cfg}
	return cfg, nil
}

func sameState(a, b replica.State) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) && a.MinISR == b.MinISR
}

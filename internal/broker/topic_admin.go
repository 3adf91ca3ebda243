package broker

import (
	"errors"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/topics"
)

// maxPartitionsPerTopic bounds one topic's partition count: every partition
// is a directory with open files, so an absurd count is refused with
// INVALID_PARTITIONS rather than exhausting file descriptors. (Kafka has no
// such per-topic cap.)
const maxPartitionsPerTopic = 10000

// checkNewTopicName validates a name for creation: legal characters and
// length (INVALID_TOPIC_EXCEPTION), and no collision with an existing topic
// that differs only by '.' vs '_' (Kafka refuses those too).
func (b *Broker) checkNewTopicName(name string) error {
	if err := topics.ValidateName(name); err != nil {
		return &Error{Code: kerr.InvalidTopicException.Code, Msg: err.Error()}
	}
	if _, ok := b.topics.Get(name); ok {
		return errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	if topics.HasCollisionChars(name) {
		u := topics.UnifyCollisionChars(name)
		for _, t := range b.topics.List() {
			if topics.UnifyCollisionChars(t.Name) == u {
				return errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, t.Name)
			}
		}
	}
	return nil
}

// validateTopicConfigs checks overrides against the config table and that
// they resolve into a usable log config; failures are INVALID_CONFIG.
func (b *Broker) validateTopicConfigs(overrides map[string]*string) (map[string]string, log.Config, error) {
	if err := config.ValidateTopicOverrides(overrides); err != nil {
		return nil, log.Config{}, err
	}
	plain := make(map[string]string, len(overrides))
	for k, v := range overrides {
		plain[k] = *v
	}
	cfg, err := b.logConfig(plain)
	if err != nil {
		return nil, log.Config{}, asInvalidConfig(err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, log.Config{}, asInvalidConfig(err)
	}
	return plain, cfg, nil
}

func asInvalidConfig(err error) error {
	var ce *config.ConfigError
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Code: config.ErrCodeInvalidConfig, Msg: err.Error()}
}

// createTopic creates a topic with all its partition logs, or nothing: if any
// log cannot be created, the ones created are deleted again; the metadata is
// written only after every log exists (and the logs are deleted if writing
// it fails). A crash in between leaves orphan directories that reconcile
// removes at the next start. Caller holds adminMu.
func (b *Broker) createTopic(name string, partitions int32, rf int16, overrides map[string]string, cfg log.Config, assign [][]int32) (*topics.Topic, error) {
	if b.cluster != nil {
		return b.cluster.createTopic(name, partitions, rf, overrides, assign)
	}
	return b.createTopicLocal(name, partitions, overrides, cfg)
}

// createTopicLocal is createTopic on a single node.
func (b *Broker) createTopicLocal(name string, partitions int32, overrides map[string]string, cfg log.Config) (*topics.Topic, error) {
	created := make([]int32, 0, partitions)
	rollback := func() {
		for _, p := range created {
			if err := b.logs.Delete(name, p); err != nil {
				b.logger.Error("create topic rollback: cannot delete partition", "topic", name, "partition", p, "err", err)
			}
		}
	}
	for p := int32(0); p < partitions; p++ {
		if _, err := b.logs.Create(name, p, cfg); err != nil {
			rollback()
			b.logger.Error("create topic failed", "topic", name, "partition", p, "err", err)
			return nil, &Error{Code: storageCode(err), Msg: fmt.Sprintf("creating partition %d of %s: %v", p, name, err)}
		}
		created = append(created, p)
	}
	t, err := b.topics.Create(topics.Topic{Name: name, Partitions: partitions, Configs: overrides})
	if err != nil {
		rollback()
		if errors.Is(err, topics.ErrExists) {
			return nil, errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
		}
		b.logger.Error("create topic: writing metadata failed", "topic", name, "err", err)
		return nil, &Error{Code: kerr.KafkaStorageError.Code, Msg: err.Error()}
	}
	if err := b.assignPartitions(name, 0, partitions); err != nil {
		return nil, &Error{Code: kerr.KafkaStorageError.Code, Msg: err.Error()}
	}
	b.logger.Info("topic created", "topic", name, "topic_id", t.ID.String(), "partitions", partitions, "configs", overrides)
	return t, nil
}

// storageCode is the code for a failure to create or delete logs.
func storageCode(err error) int16 {
	if c := errorCode(err); c != kerr.UnknownServerError.Code {
		return c
	}
	return kerr.KafkaStorageError.Code
}

// deleteTopic removes a topic: metadata first (so it is gone for clients
// even if deleting data fails half-way), then every group's committed
// offsets for it, then each partition's log is detached (its directory
// renamed, so the name can be re-created at once). On a single node the
// returned purge removes the data; callers run it after releasing adminMu,
// so that other clients' metadata requests (which may auto-create) and
// admin requests do not wait for file removal. A crash in between leaves
// orphan directories that the next start deletes. On a cluster node the
// controller decides and publish removes everything; purge waits until
// this broker's data is gone.
// Caller holds adminMu.
func (b *Broker) deleteTopic(name string) (purge func(), err error) {
	if b.cluster != nil {
		if err := b.cluster.deleteTopic(name); err != nil {
			return nil, err
		}
		return b.purges.waiter(name), nil // the data removal publish started (cluster_purge.go)
	}
	return b.detachTopicLocal(name)
}

// deleteTopicLocal removes a topic's metadata and data from this broker (a
// single node's DeleteTopics; a cluster node publishing a removal).
func (b *Broker) deleteTopicLocal(name string) error {
	purge, err := b.detachTopicLocal(name)
	if err != nil {
		return err
	}
	purge()
	return nil
}

// detachTopicLocal is deleteTopicLocal up to the removal of the data, which
// the returned purge does.
func (b *Broker) detachTopicLocal(name string) (purge func(), err error) {
	t, err := b.topics.Delete(name)
	if err != nil {
		if errors.Is(err, topics.ErrNotFound) {
			return nil, &Error{Code: kerr.UnknownTopicOrPartition.Code}
		}
		return nil, &Error{Code: kerr.KafkaStorageError.Code, Msg: err.Error()}
	}
	b.unassignPartitions(name, 0, t.Partitions)
	if b.groups != nil {
		b.groups.OnTopicsDeleted(name)
	}
	b.metrics.TopicDeleted(name)
	failed := func(p int32, err error) {
		b.logger.Error("delete topic: cannot delete partition data (it will be removed at next start)",
			"topic", name, "partition", p, "err", err)
	}
	type detached struct {
		p     int32
		purge func() error
	}
	var purges []detached
	for p := int32(0); p < t.Partitions; p++ {
		if b.logs.Get(name, p) == nil {
			continue
		}
		purge, err := b.logs.Detach(name, p)
		if err != nil {
			failed(p, err)
			continue
		}
		purges = append(purges, detached{p, purge})
	}
	b.logger.Info("topic deleted", "topic", name, "topic_id", t.ID.String())
	return func() {
		for _, d := range purges {
			if err := d.purge(); err != nil {
				failed(d.p, err)
			}
		}
	}, nil
}

// addPartitions grows a topic to count partitions: logs first (rolled back
// on failure), then metadata. Caller holds adminMu.
func (b *Broker) addPartitions(t *topics.Topic, count int32) error {
	if b.cluster != nil {
		return b.cluster.addPartitions(t.Name, count)
	}
	cfg, err := b.logConfig(t.Configs)
	if err != nil {
		return asInvalidConfig(err)
	}
	var created []int32
	rollback := func() {
		for _, p := range created {
			if err := b.logs.Delete(t.Name, p); err != nil {
				b.logger.Error("create partitions rollback: cannot delete partition", "topic", t.Name, "partition", p, "err", err)
			}
		}
	}
	for p := t.Partitions; p < count; p++ {
		if _, err := b.logs.Create(t.Name, p, cfg); err != nil {
			rollback()
			return &Error{Code: storageCode(err), Msg: fmt.Sprintf("creating partition %d of %s: %v", p, t.Name, err)}
		}
		created = append(created, p)
	}
	if _, err := b.topics.Update(t.Name, func(nt *topics.Topic) error {
		nt.Partitions = count
		return nil
	}); err != nil {
		rollback()
		return &Error{Code: kerr.KafkaStorageError.Code, Msg: err.Error()}
	}
	if err := b.assignPartitions(t.Name, t.Partitions, count); err != nil {
		return &Error{Code: kerr.KafkaStorageError.Code, Msg: err.Error()}
	}
	b.logger.Info("partitions created", "topic", t.Name, "from", t.Partitions, "to", count)
	return nil
}

// setTopicConfigs replaces a topic's overrides (already validated, cfg being
// their resolved log config): metadata first, then applied live to every
// partition. Caller holds adminMu.
func (b *Broker) setTopicConfigs(name string, overrides map[string]string, cfg log.Config) error {
	if b.cluster != nil {
		return b.cluster.setTopicConfigs(name, overrides)
	}
	t, err := b.topics.Update(name, func(nt *topics.Topic) error {
		nt.Configs = maps.Clone(overrides)
		return nil
	})
	if err != nil {
		if errors.Is(err, topics.ErrNotFound) {
			return &Error{Code: kerr.UnknownTopicOrPartition.Code}
		}
		return &Error{Code: kerr.KafkaStorageError.Code, Msg: err.Error()}
	}
	for p := int32(0); p < t.Partitions; p++ {
		if l := b.logs.Get(name, p); l != nil {
			if err := l.SetConfig(cfg); err != nil {
				b.logger.Error("applying topic config to partition failed", "topic", name, "partition", p, "err", err)
			}
		}
	}
	b.logger.Info("topic config changed", "topic", name, "configs", overrides)
	return nil
}

// resolveOverrides validates a complete override map (string values).
func (b *Broker) resolveOverrides(overrides map[string]string) (log.Config, error) {
	ptrs := make(map[string]*string, len(overrides))
	for k, v := range overrides {
		ptrs[k] = &v
	}
	_, cfg, err := b.validateTopicConfigs(ptrs)
	return cfg, err
}

// The transaction coordinator's place in the broker: a start hook starts the
// txn.Coordinator over the compacted __transaction_state topic (replaying every
// partition and finishing transactions found half-completed) and closes it on
// shutdown. As in Kafka, the topic (transaction.state.log.num.partitions
// partitions) is created when first needed — at the first FindCoordinator for a
// transactional id, or the coordinator's first write — so a broker never used for
// transactions does not carry it. The coordinator reaches partitions through
// txnMarkers: markers for __consumer_offsets partitions go through the group
// coordinator (which applies the pending transactional offsets they decide),
// every other marker is appended to the partition log directly.
//
// The hook must run after the producer-state hook (producer ids) and the group
// coordinator's hook; start hooks run in file-name order, which this file's
// name guarantees (and startTxnCoordinator checks).
package broker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/txn"
)

func (b *Broker) startTxnCoordinator() error {
	if b.producerIDs == nil || b.groups == nil {
		return errors.New("sluice: transaction coordinator started before producer ids or the group coordinator")
	}
	n, err := b.openTxnStateTopic()
	if err != nil {
		return err
	}
	c := b.cfg
	b.txns = txn.New(txn.Options{
		Config: txn.Config{
			NumPartitions:  n,
			MaxTimeoutMs:   int32(min(c.TransactionMaxTimeoutMs, 1<<31-1)),
			IDExpiration:   time.Duration(c.TransactionalIDExpirationMs) * time.Millisecond,
			AbortInterval:  time.Duration(c.TransactionAbortTimedOutCleanupIntervalMs) * time.Millisecond,
			ExpireInterval: time.Duration(c.TransactionRemoveExpiredCleanupIntervalMs) * time.Millisecond,

			NoProduceVerification: strings.EqualFold(strings.TrimSpace(c.Raw["transaction.partition.verification.enable"]), "false"),
			OwnLoadedOnly:         b.clusterCfg != nil,
		},
		Storage:    txnStateStorage{b},
		Partitions: txnMarkers{b: b},
		IDs:        b.producerIDs,
		Logger:     b.logger,
		Now:        b.nowFunc(),
		// From transaction.version 1 on, __transaction_state values are
		// written in Kafka's flexible version 1.
		TransactionVersion: func() int16 { return b.featureLevel(features.TransactionVersion) },
	})
	if err := b.txns.Start(); err != nil {
		return err
	}
	// Loaded while a metadata change is applied: the markers of
	// transactions found half-completed are written in the background.
	b.replicas.Listen(internalPartitionListener(txn.TransactionStateTopic, b.txns.LoadPartitionCompletingInBackground, b.txns.UnloadPartition))
	if err := b.loadLedPartitions(txn.TransactionStateTopic, b.txns.LoadPartition); err != nil {
		return err
	}
	b.onClose(func() error { b.txns.Close(); return nil })
	return nil
}

// openTxnStateTopic opens the partitions of an existing __transaction_state and returns
// its partition count (an existing topic keeps its count, since transactional ids are
// placed by hashing on it); without the topic it returns the configured count.
func (b *Broker) openTxnStateTopic() (int32, error) {
	if _, ok := b.topics.Get(txn.TransactionStateTopic); ok {
		return b.ensureTxnStateTopic()
	}
	if n := b.cfg.TransactionStateLogNumPartitions; n > 0 {
		return n, nil
	}
	return 50, nil
}

// ensureTxnStateTopic creates __transaction_state (compacted) when missing and returns
// its partition count.
func (b *Broker) ensureTxnStateTopic() (int32, error) {
	if b.cluster != nil || b.clusterCfg != nil {
		// A cluster node: the topic is created through the controller when a
		// client first looks for a coordinator (FindCoordinator).
		return b.internalTopicPartitions(txn.TransactionStateTopic, b.cfg.TransactionStateLogNumPartitions), nil
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if t, ok := b.topics.Get(txn.TransactionStateTopic); ok {
		for p := int32(0); p < t.Partitions; p++ {
			if b.logs.Get(txn.TransactionStateTopic, p) == nil {
				cfg, err := b.logConfig(t.Configs)
				if err != nil {
					return 0, err
				}
				if _, err := b.logs.Open(txn.TransactionStateTopic, p, cfg); err != nil {
					return 0, err
				}
			}
		}
		return t.Partitions, nil
	}
	n := b.cfg.TransactionStateLogNumPartitions
	if n <= 0 {
		n = 50
	}
	overrides := map[string]string{"cleanup.policy": "compact"}
	if b.cfg.TransactionStateLogSegmentBytes > 0 {
		overrides["segment.bytes"] = fmt.Sprint(b.cfg.TransactionStateLogSegmentBytes)
	}
	cfg, err := b.logConfig(overrides)
	if err != nil {
		return 0, err
	}
	if _, err := b.createTopic(txn.TransactionStateTopic, n, 1, overrides, cfg, nil); err != nil {
		return 0, fmt.Errorf("sluice: creating %s: %w", txn.TransactionStateTopic, err)
	}
	return n, nil
}

// txnStateStorage is txn.Storage over the __transaction_state partition logs.
type txnStateStorage struct{ b *Broker }

func (s txnStateStorage) Append(p int32, batch []byte) error {
	part := s.b.replicas.Get(txn.TransactionStateTopic, p)
	if part == nil {
		if _, err := s.b.ensureTxnStateTopic(); err != nil {
			return err
		}
		if part = s.b.replicas.Get(txn.TransactionStateTopic, p); part == nil {
			return fmt.Errorf("%s-%d does not exist", txn.TransactionStateTopic, p)
		}
	}
	_, err := part.AppendReplicated(batch, log.AppendOptions{Coordinator: true}, coordinatorWriteTimeout)
	return err
}

func (s txnStateStorage) Replay(p int32, fn func([]byte) error) error {
	return replayLog(s.b.replicas.Get(txn.TransactionStateTopic, p), fn)
}

// txnMarkers is txn.Partitions over the partition logs and the group
// coordinator. On a cluster node, a marker for a partition led by another
// broker is sent to that broker (WriteTxnMarkers), unless local is set: a
// WriteTxnMarkers request itself is answered from this broker's partitions
// only (NOT_LEADER_OR_FOLLOWER otherwise), so markers never bounce between
// brokers with different views.
type txnMarkers struct {
	b     *Broker
	local bool
}

func (t txnMarkers) WriteMarker(tp txn.TopicPartition, m batch.Marker) error {
	if c := t.b.cluster; c != nil && !t.local {
		if p := t.b.replicas.Get(tp.Topic, tp.Partition); p == nil || p.State().Leader != t.b.self() {
			return c.writeRemoteMarker(tp, m)
		}
	}
	var err error
	if _, _, code := t.b.partition(tp.Topic, tp.Partition); code == kerr.NotLeaderForPartition.Code {
		return &Error{Code: code, Msg: fmt.Sprintf("%s-%d is not led by this broker", tp.Topic, tp.Partition)}
	}
	if tp.Topic == group.OffsetsTopic {
		if _, _, code := t.b.partition(tp.Topic, tp.Partition); code != 0 {
			return fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, txn.ErrPartitionGone)
		}
		err = t.b.groups.WriteTxnMarker(tp.Partition, m)
	} else {
		part, topic, code := t.b.partition(tp.Topic, tp.Partition)
		if code != 0 {
			return fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, txn.ErrPartitionGone)
		}
		err = appendMarkerReplicated(part, m, int(t.b.minInsyncReplicas(topic)))
	}
	if err == nil {
		return nil
	}
	var ke interface{ KafkaCode() int16 }
	if errors.As(err, &ke) {
		switch ke.KafkaCode() {
		case kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code, kerr.TransactionCoordinatorFenced.Code:
			return fmt.Errorf("%s-%d: %w: %w", tp.Topic, tp.Partition, txn.ErrMarkerFenced, err)
		}
	}
	if errors.Is(err, log.ErrClosed) {
		if _, _, code := t.b.partition(tp.Topic, tp.Partition); code != 0 {
			return fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, txn.ErrPartitionGone)
		}
	}
	return err
}

// ensureLocalTxnStateTopic creates __transaction_state on a single node when
// a transactional id first needs it (FindCoordinator, or an InitProducerId
// sent straight to this broker); its partitions are loaded by the
// transaction coordinator as this broker becomes their leader. It reports
// false when the topic could not be created. A cluster node creates it
// through the controller instead (coordinatorFor).
func (b *Broker) ensureLocalTxnStateTopic() bool {
	if b.cluster != nil || b.clusterCfg != nil {
		return true
	}
	if _, ok := b.topics.Get(txn.TransactionStateTopic); ok {
		return true
	}
	if _, err := b.ensureTxnStateTopic(); err != nil {
		b.logger.Error("txn: creating the transaction state topic", "err", err)
		return false
	}
	return true
}

// InitProducerId (key 22), v0–v5, and the broker's idempotent-producer
// state.
//
// Without a transactional id (idempotent producers) every request gets a
// fresh producer id with epoch 0, as Kafka does: the id and epoch a client
// may send (v3+, KIP-360) are not needed to bump an idempotent producer.
// Ids come from producer.IDs, reserved in durable blocks in the data
// directory so that no id is ever handed out twice, even across restarts;
// if the reservation cannot be written the answer is KAFKA_STORAGE_ERROR
// (retriable).
//
// With a transactional id the transaction coordinator answers
// (txn.Coordinator.InitProducerID): a new id gets a fresh producer id, an
// existing one an epoch bump fencing its previous producer (after aborting
// its ongoing transaction: CONCURRENT_TRANSACTIONS, retried by the client);
// v3+ may name the current id and epoch to resume (KIP-360).
// PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH below v4, as Kafka does.
//
// Per-partition producer state (sequence windows) lives in producer.State
// objects installed in every partition log as its ProducerGuard. On start
// each is rebuilt from the partition's newest producer snapshot
// (%020d.snapshot, Kafka's layout) plus the batch headers after it; on
// shutdown a snapshot is written at every log's end, so a clean restart
// replays nothing; partitions whose state changed are also snapshotted every
// minute, so a rebuild after a crash scans little. Producers idle for
// producer.id.expiration.ms are forgotten every
// producer.id.expiration.check.interval.ms.
package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/producer"
	"github.com/sluice-broker/sluice/internal/tpindex"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.InitProducerID, (*Broker).handleInitProducerID) }

func (b *Broker) handleInitProducerID(_ context.Context, r *wire.Request, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// Authorization as Kafka: WRITE on the transactional id; without one
	// (idempotent producer) IDEMPOTENT_WRITE on the cluster or WRITE on at
	// least one topic.
	if b.authz != nil {
		if req.TransactionalID != nil && !b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, *req.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
		if req.TransactionalID == nil && !b.allowedQuiet(r, authz.OpIdempotentWrite, authz.ResourceCluster, authz.ClusterName) &&
			!b.authz.AuthorizeAny(authzRequest(r), authz.OpWrite, authz.ResourceTopic) {
			b.allowedCluster(r, authz.OpIdempotentWrite) // the audit line
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
	}
	if req.TransactionalID != nil {
		if *req.TransactionalID != "" && !b.ensureLocalTxnStateTopic() {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		expectedID, expectedEpoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			expectedID, expectedEpoch = req.ProducerID, req.ProducerEpoch
		}
		id, epoch, code := b.txns.InitProducerID(*req.TransactionalID, req.TransactionTimeoutMillis, expectedID, expectedEpoch)
		resp.ErrorCode = fencedForVersion(code, req.Version, 4)
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = id, epoch
		}
		return resp, nil
	}
	id, err := b.producerIDs.Next()
	if err != nil {
		b.logger.Error("cannot allocate a producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// producerStates maps every open partition to its producer state. The
// log manager's guard factory fills it (a partition created again after a
// delete gets a fresh state).
type producerStates struct {
	mu sync.Mutex
	ix *tpindex.Index[producer.State] // by topic and partition: 100,000 are put at a start
}

func (p *producerStates) put(tp log.TopicPartition, s *producer.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ix == nil {
		ix := tpindex.New[producer.State]()
		p.ix = &ix
	}
	p.ix.Set(tp.Topic, tp.Partition, s)
}

func (p *producerStates) get(tp log.TopicPartition) *producer.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ix == nil {
		return nil
	}
	return p.ix.Get(tp.Topic, tp.Partition)
}

// partitionProducers is a partition's producer state.
type partitionProducers struct {
	tp log.TopicPartition
	s  *producer.State
}

// all lists every partition's state (for snapshots and expiration).
func (p *producerStates) all() []partitionProducers {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ix == nil {
		return nil
	}
	out := make([]partitionProducers, 0, p.ix.Len())
	p.ix.Sorted(func(topic string, partition int32, s *producer.State) {
		out = append(out, partitionProducers{log.TopicPartition{Topic: topic, Partition: partition}, s})
	})
	return out
}

// installProducerGuards gives every log the manager opens or creates a
// producer guard.
func installProducerGuards(b *Broker, o *log.ManagerOptions) {
	o.ProducerGuard = func(topic string, partition int32) log.ProducerGuard {
		s := producer.NewState()
		b.producers.put(log.TopicPartition{Topic: topic, Partition: partition}, s)
		return producer.NewGuard(s)
	}
}

// startProducerState opens the id allocator, rebuilds every partition's
// producer state, and arranges for snapshots at shutdown and periodic
// expiration.
func (b *Broker) startProducerState() error {
	if b.clusterCfg != nil {
		// A cluster's producer ids come in blocks recorded by the controller.
		b.producerIDs = producer.NewBlockIDs(func() (int64, int64, error) {
			if b.cluster == nil {
				return 0, 0, errors.New("the cluster node is not started")
			}
			return b.cluster.producerIDBlock()
		})
	} else {
		ids, err := producer.OpenIDs(b.fs, b.dataDir, producer.DefaultIDBlockSize)
		if err != nil {
			return err
		}
		b.producerIDs = ids
	}
	expiration := int64(b.cfg.ProducerIDExpirationMs)
	now := time.Now().UnixMilli()
	for _, tp := range b.logs.Partitions() {
		l := b.logs.Get(tp.Topic, tp.Partition)
		if l == nil || l.Deferred() {
			continue // a log loaded on first use rebuilds its state then (deferred_logs.go)
		}
		b.rebuildProducerState(tp, l, now)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	expireEvery := time.Duration(b.cfg.ProducerIDExpirationCheckIntervalMs) * time.Millisecond
	if expireEvery <= 0 {
		expireEvery = 10 * time.Minute
	}
	go func() {
		defer close(done)
		t := time.NewTicker(min(expireEvery, producerSnapshotInterval))
		defer t.Stop()
		lastExpire := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				if now.Sub(lastExpire) >= expireEvery {
					b.expireProducers(now.UnixMilli(), expiration)
					lastExpire = now
				}
				b.snapshotChangedProducers()
			}
		}
	}()
	b.onClose(func() error {
		close(stop)
		<-done
		b.snapshotProducers()
		return nil
	})
	return nil
}

// producerSnapshotInterval is how often partitions whose producer state
// changed get a new snapshot, bounding the log a rebuild after a crash scans
// (Kafka snapshots when a segment rolls).
const producerSnapshotInterval = time.Minute

// snapshotChangedProducers writes a snapshot for every partition whose
// producer state changed since its last one.
func (b *Broker) snapshotChangedProducers() {
	for _, ps := range b.producers.all() {
		tp, s := ps.tp, ps.s
		l := b.logs.Get(tp.Topic, tp.Partition)
		if l == nil || !l.Loaded() {
			continue // not loaded since a clean start: its state is not rebuilt yet
		}
		if _, err := s.SnapshotIfChanged(b.fs, l.Dir()); err != nil {
			b.logger.Error("cannot write producer snapshot", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
}

func (b *Broker) expireProducers(nowMs, expirationMs int64) {
	for _, ps := range b.producers.all() {
		ps.s.Expire(nowMs, expirationMs)
	}
}

// snapshotProducers writes a producer snapshot at the end of every open log
// (called at shutdown, when no appends run any more).
func (b *Broker) snapshotProducers() {
	// Each snapshot written costs fsyncs: write snapshotWorkers at once.
	type job struct {
		tp log.TopicPartition
		s  *producer.State
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < snapshotWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				l := b.logs.Get(j.tp.Topic, j.tp.Partition)
				if l == nil || !l.Loaded() || (j.s.Len() == 0 && l.LogEndOffset() == l.LogStartOffset()) {
					// An empty log needs no snapshot: its rebuild replays
					// nothing. A log not loaded since a clean start keeps
					// the snapshot it has (its state here was never rebuilt).
					continue
				}
				if err := j.s.WriteSnapshot(b.fs, l.Dir(), l.LogEndOffset()); err != nil {
					b.logger.Error("cannot write producer snapshot", "topic", j.tp.Topic, "partition", j.tp.Partition, "err", err)
				}
			}
		}()
	}
	for _, ps := range b.producers.all() {
		work <- job{ps.tp, ps.s}
	}
	close(work)
	wg.Wait()
}

// snapshotWorkers is how many producer snapshots shutdown writes at once.
const snapshotWorkers = 16

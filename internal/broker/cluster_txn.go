package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/txn"
)

// Transactional produce across brokers. A partition leader admits a
// transactional batch only if the producer added the partition to its
// ongoing transaction (Kafka's partition verification); when the
// transactional id is coordinated by another broker, the leader asks it over
// the peer listener. The coordinator's admission is a lease: until the
// leader reports the append done (or the lease times out), the
// transaction's markers wait, so no batch admitted while the transaction was
// ongoing can land after the marker that ends it (a hanging transaction).

// txnLeaseTimeout bounds how long a lost "done" report holds markers back.
const txnLeaseTimeout = 15 * time.Second

type txnProduceRequest struct {
	TransactionalID string `json:"transactional_id"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	// Add: a transaction version 2 append (the partition joins the
	// transaction, txn.Coordinator.BeginProduceAdd).
	Add bool `json:"add,omitempty"`
}

type txnProduceResponse struct {
	Lease uint64 `json:"lease"`
}

type txnProduceDone struct {
	Lease uint64 `json:"lease"`
}

// txnLeases are the admissions this coordinator granted to other brokers.
type txnLeases struct {
	mu   sync.Mutex
	next atomic.Uint64
	open map[uint64]func()
}

func (l *txnLeases) grant(release func()) uint64 {
	id := l.next.Add(1)
	l.mu.Lock()
	if l.open == nil {
		l.open = map[uint64]func(){}
	}
	l.open[id] = release
	l.mu.Unlock()
	time.AfterFunc(txnLeaseTimeout, func() { l.end(id) })
	return id
}

func (l *txnLeases) end(id uint64) {
	l.mu.Lock()
	release := l.open[id]
	delete(l.open, id)
	l.mu.Unlock()
	if release != nil {
		release()
	}
}

// txnCoordinator is the broker coordinating transactional id tid (the
// leader of its __transaction_state partition), NoLeader if none.
func (c *clusterNode) txnCoordinator(tid string) int32 {
	n := c.b.internalTopicPartitions(txn.TransactionStateTopic, c.b.cfg.TransactionStateLogNumPartitions)
	ip, ok := c.store.Image().Partition(txn.TransactionStateTopic, txn.PartitionFor(tid, n))
	if !ok {
		return metadata.NoLeader
	}
	return ip.Leader
}

// coordinatesTxn reports whether this broker coordinates tid.
func (c *clusterNode) coordinatesTxn(tid string) bool {
	return c.txnCoordinator(tid) == c.cfg.nodeID
}

// registerTxnHandlers serves other brokers' admissions.
func (c *clusterNode) registerTxnHandlers() {
	c.srv.Handle("txn-produce-begin", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var req txnProduceRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: err.Error()}
		}
		if !c.coordinatesTxn(req.TransactionalID) {
			return nil, &controller.Error{Code: kerr.NotCoordinator.Code, Msg: "not the coordinator of " + req.TransactionalID}
		}
		tp := txn.TopicPartition{Topic: req.Topic, Partition: req.Partition}
		begin := c.b.txns.BeginProduce
		if req.Add {
			begin = c.b.txns.BeginProduceAdd
		}
		rel, code := begin(req.ProducerID, req.ProducerEpoch, tp)
		if code != 0 {
			return nil, &controller.Error{Code: code, Msg: kerr.ErrorForCode(code).Error()}
		}
		return txnProduceResponse{Lease: c.leases.grant(rel)}, nil
	})
	c.srv.Handle("txn-produce-done", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var req txnProduceDone
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, &controller.Error{Code: kerr.InvalidRequest.Code, Msg: err.Error()}
		}
		c.leases.end(req.Lease)
		return struct{}{}, nil
	})
}

// beginRemoteTxnProduce asks tid's coordinator to admit the append.
func (c *clusterNode) beginRemoteTxnProduce(tid string, pid int64, epoch int16, topic string, partition int32, add bool) (func(), error) {
	coord := c.txnCoordinator(tid)
	addr, ok := c.peers.Addr(uint64(coord))
	if coord == metadata.NoLeader || !ok {
		// The producer retries NOT_ENOUGH_REPLICAS; its coordinator is
		// moving.
		return nil, errorf(kerr.NotEnoughReplicas, "the transaction coordinator of %s is not available", tid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var resp txnProduceResponse
	err := c.peers.Call(ctx, addr, "txn-produce-begin", txnProduceRequest{TransactionalID: tid, ProducerID: pid,
		ProducerEpoch: epoch, Topic: topic, Partition: partition, Add: add}, &resp)
	var re *peer.RemoteError
	switch {
	case errors.As(err, &re):
		var code int16
		fmt.Sscan(re.Code, &code)
		if code == kerr.NotCoordinator.Code || code == 0 {
			return nil, errorf(kerr.NotEnoughReplicas, "transaction coordinator of %s moved: %s", tid, re.Message)
		}
		e, _ := kerr.ErrorForCode(code).(*kerr.Error)
		if e == nil {
			e = kerr.UnknownServerError
		}
		return nil, errorf(e, "transactional produce to %s-%d by producer %d (epoch %d) refused by coordinator %d: %s",
			topic, partition, pid, epoch, coord, re.Message)
	case err != nil:
		return nil, errorf(kerr.NotEnoughReplicas, "transaction coordinator %d of %s unreachable: %v", coord, tid, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = c.peers.Call(ctx, addr, "txn-produce-done", txnProduceDone{Lease: resp.Lease}, nil)
			}()
		})
	}, nil
}

// FindCoordinator (key 10), v0–v6: the coordinator of a group (key type 0) is the leader
// of its __consumer_offsets partition, that of a transactional id (key type 1) the leader
// of its __transaction_state partition, that of a share partition (key type 2, v6+,
// "group:topicId:partition") the leader of its __share_group_state partition; v4+ answers
// each of the batched coordinator keys.
// A partition without a live leader is COORDINATOR_NOT_AVAILABLE; an unknown key type
// INVALID_REQUEST. On a single node __consumer_offsets is created at start-up, so there
// is no COORDINATOR_NOT_AVAILABLE window for groups; __transaction_state is created by the
// first FindCoordinator for a transactional id, as Kafka does.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.FindCoordinator, (*Broker).handleFindCoordinator) }

func (b *Broker) handleFindCoordinator(_ context.Context, r *wire.Request, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code, msg := int16(0), (*string)(nil)
	if req.CoordinatorType < 0 || req.CoordinatorType > 2 || (req.CoordinatorType == 2 && req.Version < 6) {
		code = kerr.InvalidRequest.Code
		msg = kmsg.StringPtr("Unknown coordinator type.")
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		if code == 0 {
			if req.CoordinatorType == 0 && req.CoordinatorKey == "" {
				resp.ErrorCode = kerr.InvalidGroupID.Code
				return resp, nil
			}
			if c := b.coordinatorKeyDenied(r, req.CoordinatorType, req.CoordinatorKey); c != 0 {
				resp.ErrorCode = c
			} else if cb, ok := b.coordinatorFor(r, req.CoordinatorType, req.CoordinatorKey); ok {
				resp.NodeID, resp.Host, resp.Port = cb.id, cb.host, cb.port
			} else {
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		switch {
		case code != 0:
			c.ErrorCode, c.ErrorMessage = code, msg
		case req.CoordinatorType == 0 && key == "":
			c.ErrorCode = kerr.InvalidGroupID.Code
		case req.CoordinatorType == 2 && !validShareCoordinatorKey(key): // share_coordinator.go
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = kmsg.StringPtr("Invalid share coordinator key (want group:topicId:partition).")
		default:
			if denied := b.coordinatorKeyDenied(r, req.CoordinatorType, key); denied != 0 { // authorize_groups.go
				c.ErrorCode = denied
			} else if cb, ok := b.coordinatorFor(r, req.CoordinatorType, key); ok {
				c.NodeID, c.Host, c.Port = cb.id, cb.host, cb.port
			} else {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

// coordinatorFor returns the broker coordinating key: the live leader of the
// internal partition the key hashes to (groups: __consumer_offsets, keyType 0;
// transactional ids: __transaction_state, keyType 1).
func (b *Broker) coordinatorFor(r *wire.Request, keyType int8, key string) (clusterBroker, bool) {
	var topic string
	var p int32
	switch keyType {
	case 0:
		topic, p = group.OffsetsTopic, group.PartitionFor(key, b.groups.Partitions())
	case 1:
		topic, p = txn.TransactionStateTopic, txn.PartitionFor(key, b.txns.Config().NumPartitions)
	case 2: // share_coordinator.go
		var ok bool
		if topic, p, ok = ShareStateTopic, 0, false; b.shareCoord != nil {
			p, ok = b.shareCoordinatorPartition(key)
		}
		if !ok {
			return clusterBroker{}, false
		}
		if b.image() == nil {
			if _, err := b.ensureShareStateTopic(); err != nil {
				return clusterBroker{}, false
			}
		}
	default:
		return clusterBroker{}, false
	}
	if im := b.image(); im != nil {
		ip, ok := im.Partition(topic, p)
		if !ok {
			if !b.cluster.ensureInternalTopicNow(topic) { // cluster_implicit.go
				return clusterBroker{}, false
			}
			if ip, ok = b.image().Partition(topic, p); !ok {
				return clusterBroker{}, false
			}
		}
		return b.brokerByID(r, ip.Leader)
	}
	part := b.replicas.Get(topic, p)
	if part == nil {
		if keyType != 1 {
			return clusterBroker{}, false
		}
		// __transaction_state is created on the first FindCoordinator for a
		// transactional id, as Kafka does.
		if !b.ensureLocalTxnStateTopic() {
			return clusterBroker{}, false
		}
		if part = b.replicas.Get(topic, p); part == nil {
			return clusterBroker{}, false
		}
	}
	return b.brokerByID(r, part.State().Leader)
}

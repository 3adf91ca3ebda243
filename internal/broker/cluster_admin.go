package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/metadata"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/txn"
)

// On a cluster node, topic changes are decided by the active controller:
// the broker validates the request as on a single node, sends the decision
// to the controller, and answers once the committed change is published
// locally (so that the client's next request here sees it).

// adminTimeout bounds how long an admin request waits for the controller.
const adminTimeout = 30 * time.Second

// asBrokerError turns a controller refusal into the broker's error type.
func asBrokerError(err error) error {
	var ce *controller.Error
	if errors.As(err, &ce) {
		return &Error{Code: ce.Code, Msg: ce.Msg}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: kerr.RequestTimedOut.Code, Msg: "the controller did not answer in time"}
	}
	return &Error{Code: kerr.UnknownServerError.Code, Msg: err.Error()}
}

// decideTopic sends a topic change to the active controller and waits
// until this broker has published it; errors are the broker's.
func decideTopic[Req any](c *clusterNode, method string, local func(context.Context, Req) (controller.TopicResponse, error), req Req) (controller.TopicResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp controller.TopicResponse
	if err := callController(ctx, c, method, local, req, &resp); err != nil {
		return resp, asBrokerError(err)
	}
	if err := c.waitPublished(ctx, resp.Offset); err != nil {
		return resp, asBrokerError(err)
	}
	return resp, nil
}

func (c *clusterNode) createTopic(name string, partitions int32, rf int16, overrides map[string]string, assign [][]int32) (*topics.Topic, error) {
	if rf <= 0 {
		rf = 1
	}
	resp, err := decideTopic(c, "create-topic", c.ctrl.CreateTopic, controller.CreateTopicRequest{Name: name,
		Partitions: partitions, ReplicationFactor: rf, Assignments: assign, Configs: overrides})
	if err != nil {
		return nil, err
	}
	t, ok := c.b.topics.Get(name)
	if !ok || t.ID != topics.ID(resp.TopicID) {
		return nil, errorf(kerr.UnknownServerError, "topic %s was created but is not in this broker's metadata", name)
	}
	c.b.logger.Info("topic created", "topic", name, "topic_id", t.ID.String(), "partitions", partitions, "configs", overrides)
	return t, nil
}

func (c *clusterNode) deleteTopic(name string) error {
	_, err := decideTopic(c, "delete-topic", c.ctrl.DeleteTopic, controller.DeleteTopicRequest{Name: name})
	return err
}

func (c *clusterNode) addPartitions(name string, count int32) error {
	_, err := decideTopic(c, "create-partitions", c.ctrl.CreatePartitions, controller.CreatePartitionsRequest{Name: name, Count: count})
	return err
}

func (c *clusterNode) setTopicConfigs(name string, overrides map[string]string) error {
	if _, err := decideTopic(c, "topic-configs", c.ctrl.SetTopicConfigs,
		controller.SetTopicConfigsRequest{Name: name, Configs: overrides}); err != nil {
		return err
	}
	c.b.logger.Info("topic config changed", "topic", name, "configs", overrides)
	return nil
}

// producerIDBlock asks the controller for a block of producer ids.
func (c *clusterNode) producerIDBlock() (int64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.epoch.Load() == 0 {
		return 0, 0, errors.New("this broker is not registered with the controller yet")
	}
	var resp controller.ProducerIDsResponse
	err := callController(ctx, c, "producer-ids", c.ctrl.AllocateProducerIDs,
		controller.ProducerIDsRequest{BrokerID: c.cfg.nodeID, Epoch: c.epoch.Load()}, &resp)
	if err != nil {
		return 0, 0, err
	}
	return resp.First, resp.Count, nil
}

// internalTopicPartitions is the partition count of an internal topic: as
// created if it exists, else the configured count it will be created with.
func (b *Broker) internalTopicPartitions(name string, configured int32) int32 {
	if t, ok := b.topics.Get(name); ok {
		return t.Partitions
	}
	if configured <= 0 {
		return 50
	}
	return configured
}

// ensureInternalTopic has the controller create an internal topic that does
// not exist yet, in the background (FindCoordinator answers
// COORDINATOR_NOT_AVAILABLE meanwhile, and the client retries, as with
// Kafka).
func (c *clusterNode) ensureInternalTopic(name string) {
	if _, ok := c.store.Image().Topics[name]; ok {
		return
	}
	if !c.creating.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.creating.Store(false)
		if err := c.createInternalTopic(name); err != nil {
			c.logger.Warn("cannot create internal topic yet", "topic", name, "err", err)
		}
	}()
}

// createInternalTopic has the controller create an internal topic; nil
// when it exists already.
func (c *clusterNode) createInternalTopic(name string) error {
	b := c.b
	var n int32
	switch name {
	case group.OffsetsTopic:
		n = b.internalTopicPartitions(name, b.cfg.OffsetsTopicNumPartitions)
	case txn.TransactionStateTopic:
		n = b.internalTopicPartitions(name, b.cfg.TransactionStateLogNumPartitions)
	case ShareStateTopic:
		n = b.internalTopicPartitions(name, b.cfg.ShareStateTopicNumPartitions)
	default:
		return nil
	}
	overrides := map[string]string{"cleanup.policy": "compact"}
	seg := b.cfg.OffsetsTopicSegmentBytes
	if name == txn.TransactionStateTopic {
		seg = b.cfg.TransactionStateLogSegmentBytes
	}
	if seg > 0 {
		overrides["segment.bytes"] = fmt.Sprint(seg)
	}
	rf := b.cfg.OffsetsTopicReplicationFactor
	if name == txn.TransactionStateTopic {
		rf = b.cfg.TxnStateReplicationFactor
	}
	rf = min(rf, int16(max(len(c.voterIDs()), len(c.store.Image().Brokers))))
	if name == ShareStateTopic {
		rf = b.shareStateTopicSettings(overrides, int16(max(len(c.voterIDs()), len(c.store.Image().Brokers)))) // share_coordinator.go
	}
	if live := len(c.store.Image().LiveBrokers()); live < int(rf) {
		c.logger.Info("internal topic waits for enough live brokers", "topic", name, "replication_factor", rf, "live", live)
		return nil
	}
	if _, err := c.createTopic(name, n, rf, overrides, nil); err != nil {
		var be *Error
		if !errors.As(err, &be) || be.Code != kerr.TopicAlreadyExists.Code {
			return err
		}
	}
	return nil
}

// writeRemoteMarker sends a transaction marker to the broker leading tp
// over the peer listener (Kafka's coordinator sends WriteTxnMarkers; the
// peer listener is the cluster's own, so no client principal needs
// ClusterAction). Errors other than ErrPartitionGone and ErrMarkerFenced
// make the coordinator retry.
func (c *clusterNode) writeRemoteMarker(tp txn.TopicPartition, m batch.Marker) error {
	im := c.store.Image()
	ip, ok := im.Partition(tp.Topic, tp.Partition)
	if !ok {
		return fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, txn.ErrPartitionGone)
	}
	if ip.Leader == metadata.NoLeader || ip.Leader == c.cfg.nodeID {
		return fmt.Errorf("%s-%d: no leader to write the transaction marker to yet", tp.Topic, tp.Partition)
	}
	addr, ok := c.peers.Addr(uint64(ip.Leader))
	if !ok {
		return fmt.Errorf("%s-%d: leader %d has no peer address", tp.Topic, tp.Partition, ip.Leader)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp markerResponse
	if err := c.peers.Call(ctx, addr, "write-txn-marker", markerRequest{Topic: tp.Topic, Partition: tp.Partition, Marker: m}, &resp); err != nil {
		return fmt.Errorf("%s-%d: sending the transaction marker to broker %d: %w", tp.Topic, tp.Partition, ip.Leader, err)
	}
	switch resp.Code {
	case 0:
		return nil
	case kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code, kerr.TransactionCoordinatorFenced.Code:
		return fmt.Errorf("%s-%d: %w: %s", tp.Topic, tp.Partition, txn.ErrMarkerFenced, kerr.ErrorForCode(resp.Code))
	}
	return fmt.Errorf("%s-%d: broker %d: %w", tp.Topic, tp.Partition, ip.Leader, kerr.ErrorForCode(resp.Code))
}

type markerRequest struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Marker    batch.Marker `json:"marker"`
}

type markerResponse struct {
	Code int16 `json:"code"`
}

// writeMarkerLocal serves another broker's writeRemoteMarker.
func (c *clusterNode) writeMarkerLocal(_ context.Context, req markerRequest) (markerResponse, error) {
	return markerResponse{Code: c.b.writeMarkerCode(txn.TopicPartition{Topic: req.Topic, Partition: req.Partition}, req.Marker)}, nil
}

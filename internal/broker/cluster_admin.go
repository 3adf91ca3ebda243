package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

func (c *clusterNode) createTopic(name string, partitions int32, overrides map[string]string, assign [][]int32) (*topics.Topic, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	req := controller.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: 1,
		Assignments: assign, Configs: overrides}
	var resp controller.TopicResponse
	if err := callController(ctx, c, "create-topic", c.ctrl.CreateTopic, req, &resp); err != nil {
		return nil, asBrokerError(err)
	}
	if err := c.waitPublished(ctx, resp.Offset); err != nil {
		return nil, asBrokerError(err)
	}
	t, ok := c.b.topics.Get(name)
	if !ok || t.ID != topics.ID(resp.TopicID) {
		return nil, errorf(kerr.UnknownServerError, "topic %s was created but is not in this broker's metadata", name)
	}
	c.b.logger.Info("topic created", "topic", name, "topic_id", t.ID.String(), "partitions", partitions, "configs", overrides)
	return t, nil
}

func (c *clusterNode) deleteTopic(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp controller.TopicResponse
	if err := callController(ctx, c, "delete-topic", c.ctrl.DeleteTopic, controller.DeleteTopicRequest{Name: name}, &resp); err != nil {
		return asBrokerError(err)
	}
	if err := c.waitPublished(ctx, resp.Offset); err != nil {
		return asBrokerError(err)
	}
	return nil
}

func (c *clusterNode) addPartitions(name string, count int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp controller.TopicResponse
	if err := callController(ctx, c, "create-partitions", c.ctrl.CreatePartitions,
		controller.CreatePartitionsRequest{Name: name, Count: count}, &resp); err != nil {
		return asBrokerError(err)
	}
	if err := c.waitPublished(ctx, resp.Offset); err != nil {
		return asBrokerError(err)
	}
	return nil
}

func (c *clusterNode) setTopicConfigs(name string, overrides map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var resp controller.TopicResponse
	if err := callController(ctx, c, "topic-configs", c.ctrl.SetTopicConfigs,
		controller.SetTopicConfigsRequest{Name: name, Configs: overrides}, &resp); err != nil {
		return asBrokerError(err)
	}
	if err := c.waitPublished(ctx, resp.Offset); err != nil {
		return asBrokerError(err)
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
		b := c.b
		var n int32
		switch name {
		case group.OffsetsTopic:
			n = b.internalTopicPartitions(name, b.cfg.OffsetsTopicNumPartitions)
		case txn.TransactionStateTopic:
			n = b.internalTopicPartitions(name, b.cfg.TransactionStateLogNumPartitions)
		default:
			return
		}
		overrides := map[string]string{"cleanup.policy": "compact"}
		seg := b.cfg.OffsetsTopicSegmentBytes
		if name == txn.TransactionStateTopic {
			seg = b.cfg.TransactionStateLogSegmentBytes
		}
		if seg > 0 {
			overrides["segment.bytes"] = fmt.Sprint(seg)
		}
		if _, err := c.createTopic(name, n, overrides, nil); err != nil {
			var be *Error
			if !errors.As(err, &be) || be.Code != kerr.TopicAlreadyExists.Code {
				c.logger.Warn("cannot create internal topic yet", "topic", name, "err", err)
			}
		}
	}()
}

// writeRemoteMarker sends a transaction marker to the broker leading tp
// (Kafka's WriteTxnMarkers, as Kafka's coordinator does). Errors other than
// ErrPartitionGone and ErrMarkerFenced make the coordinator retry.
func (c *clusterNode) writeRemoteMarker(tp txn.TopicPartition, m batch.Marker) error {
	im := c.store.Image()
	ip, ok := im.Partition(tp.Topic, tp.Partition)
	if !ok {
		return fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, txn.ErrPartitionGone)
	}
	if ip.Leader == metadata.NoLeader || ip.Leader == c.cfg.nodeID {
		return fmt.Errorf("%s-%d: no leader to write the transaction marker to yet", tp.Topic, tp.Partition)
	}
	reg, ok := im.Broker(ip.Leader)
	if !ok {
		return fmt.Errorf("%s-%d: leader %d is not registered", tp.Topic, tp.Partition, ip.Leader)
	}
	ep, ok := reg.Endpoint(c.b.listenerName(nil))
	if !ok {
		return fmt.Errorf("%s-%d: leader %d has no %s listener", tp.Topic, tp.Partition, ip.Leader, c.b.listenerName(nil))
	}
	cl, err := c.brokerClient(net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
	if err != nil {
		return err
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch
	mk.Committed = m.Type == batch.ControlCommit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = tp.Topic, []int32{tp.Partition}
	mk.Topics = append(mk.Topics, mt)
	req.Markers = append(req.Markers, mk)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return fmt.Errorf("%s-%d: sending the transaction marker to broker %d: %w", tp.Topic, tp.Partition, ip.Leader, err)
	}
	code := int16(-2)
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				code = rp.ErrorCode
			}
		}
	}
	switch code {
	case 0:
		return nil
	case kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code, kerr.TransactionCoordinatorFenced.Code:
		return fmt.Errorf("%s-%d: %w: %s", tp.Topic, tp.Partition, txn.ErrMarkerFenced, kerr.ErrorForCode(code))
	case -2:
		return fmt.Errorf("%s-%d: broker %d answered no partition", tp.Topic, tp.Partition, ip.Leader)
	}
	return fmt.Errorf("%s-%d: broker %d: %w", tp.Topic, tp.Partition, ip.Leader, kerr.ErrorForCode(code))
}

// brokerClient returns a client for the broker at addr (kept for reuse).
func (c *clusterNode) brokerClient(addr string) (*kgo.Client, error) {
	c.clientsMu.Lock()
	defer c.clientsMu.Unlock()
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("sluice-broker-"+strconv.Itoa(int(c.cfg.nodeID))))
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[string]*kgo.Client{}
	}
	c.clients[addr] = cl
	return cl, nil
}

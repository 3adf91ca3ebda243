package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// UnregisterRequest removes a broker's registration (Kafka's
// UnregisterBroker, decommissioning).
type UnregisterRequest struct {
	BrokerID int32 `json:"broker_id"`
}

// UnregisterResponse is the offset at which the removal was applied.
type UnregisterResponse struct {
	Offset uint64 `json:"offset"`
}

// Unregister removes broker id's registration as Kafka's controller does:
// BROKER_ID_NOT_REGISTERED when there is none; otherwise the broker leaves
// every leadership and in-sync set (as when it is fenced) and its
// registration is removed. Its replicas stay in the partitions' replica
// lists (offline) until they are reassigned. Like Kafka, this does not
// refuse a broker that is still running: it registers again with its next
// heartbeat, so operators stop it first (docs/cluster.md).
func (c *Controller) Unregister(ctx context.Context, req UnregisterRequest) (UnregisterResponse, error) {
	im, err := c.begin()
	if err != nil {
		return UnregisterResponse{}, err
	}
	defer c.mu.Unlock()
	b, ok := im.Broker(req.BrokerID)
	if !ok {
		return UnregisterResponse{}, errorf(kerr.BrokerIDNotRegistered, "Broker ID %d is not currently registered", req.BrokerID)
	}
	// The partition changes are computed as if the broker were fenced.
	fenced := *im
	fenced.Brokers = map[int32]*metadata.BrokerRegistration{}
	for id, r := range im.Brokers {
		if id != req.BrokerID {
			fenced.Brokers[id] = r
		}
	}
	recs := leaveBroker(&fenced, req.BrokerID)
	recs = append(recs, metadata.Record{Type: metadata.UnregisterBroker, BrokerID: req.BrokerID})
	off, err := c.commit(ctx, recs...)
	if err != nil {
		return UnregisterResponse{}, err
	}
	c.hbMu.Lock()
	delete(c.heartbeats, req.BrokerID)
	c.hbMu.Unlock()
	c.cfg.Logger.Warn("controller: broker unregistered", "broker", req.BrokerID, "epoch", b.Epoch, "was_fenced", b.Fenced,
		"partitions_changed", len(recs)-1)
	return UnregisterResponse{Offset: off}, nil
}

package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// RegisterRequest registers a broker (each process start).
type RegisterRequest struct {
	Broker metadata.BrokerRegistration `json:"broker"`
	// PreviousBrokerEpoch is the epoch the broker's last clean shutdown
	// recorded (-1: it was not clean); nil: not known (elr_unclean.go).
	PreviousBrokerEpoch *int64 `json:"previous_broker_epoch,omitempty"`
	// Local: the broker of the controller's own process registers (never
	// sent over the network). Another incarnation of its id is then a
	// previous process of this node, dead since this one holds the node's
	// data directory: no session of it is waited out.
	Local bool `json:"-"`
	// KeepLeaderships (with Local): the broker has published no image yet
	// and will publish none before its unfencing. The partitions it leads
	// as their only in-sync replica are then left to the unfencing, which
	// renews them (returnBroker) in the same batch that unfences it,
	// instead of the registration taking them away and the unfencing
	// giving them back: after a crash of a node that leads 100,000
	// partitions, one batch of 100,000 changes instead of two.
	KeepLeaderships bool `json:"-"`
}

// RegisterResponse gives the new broker epoch; the broker is caught up with
// the metadata once it has applied Offset.
type RegisterResponse struct {
	Epoch  int64  `json:"epoch"`
	Offset uint64 `json:"offset"`
	// KeptLeaderships: the request's KeepLeaderships was honoured (a
	// registration by the controller of the broker's own process, whose
	// metadata store the broker shares: it holds the metadata up to
	// Offset already). The broker's first heartbeat says it has Offset,
	// and the broker publishes images from its unfencing on.
	KeptLeaderships bool `json:"-"`
}

// Register records a broker's registration: a new broker epoch, fenced until
// its heartbeats show it caught up. A live registration of another
// incarnation is refused (DUPLICATE_BROKER_REGISTRATION) until its session
// expires; a returning broker first loses the leaderships it held.
func (c *Controller) Register(ctx context.Context, req RegisterRequest) (RegisterResponse, error) {
	im, err := c.begin()
	if err != nil {
		return RegisterResponse{}, err
	}
	defer c.mu.Unlock()
	reg := req.Broker
	if old, ok := im.Broker(reg.ID); ok && !old.Fenced && old.Incarnation != reg.Incarnation && !req.Local {
		c.hbMu.Lock()
		last := c.heartbeats[reg.ID]
		c.hbMu.Unlock()
		if c.cfg.Now().Sub(last) <= c.cfg.SessionTimeout {
			return RegisterResponse{}, errorf(kerr.DuplicateBrokerRegistration,
				"another process registered as broker %d (incarnation %s) and its session has not expired", reg.ID, old.Incarnation)
		}
	}
	keep := req.Local && req.KeepLeaderships
	recs := []metadata.Record{{Type: metadata.RegisterBroker, Broker: &reg}}
	if old, ok := im.Broker(reg.ID); ok {
		// (leaveBroker's slice has room for the registration first.)
		recs = slices.Insert(leaveBrokerKeeping(im, reg.ID, keep), 0, recs[0])
		if uncleanShutdown(im, old, req) {
			recs = c.afterUncleanShutdown(im, reg.ID, recs)
			defer func() { c.elrUnclean = nil }()
		}
	}
	off, err := c.commit(ctx, recs...)
	if err != nil {
		return RegisterResponse{}, err
	}
	c.touch(reg.ID)
	nb, _ := c.cfg.Store.Image().Broker(reg.ID)
	c.cfg.Logger.Info("controller: broker registered", "broker", reg.ID, "epoch", nb.Epoch, "rack", reg.Rack)
	return RegisterResponse{Epoch: nb.Epoch, Offset: off, KeptLeaderships: keep}, nil
}

func (c *Controller) touch(id int32) {
	now := c.cfg.Now()
	c.hbMu.Lock()
	c.heartbeats[id] = now
	c.hbMu.Unlock()
	c.heard(id, now) // liveness.go
}

// HeartbeatRequest is a broker's periodic heartbeat.
type HeartbeatRequest struct {
	BrokerID       int32  `json:"broker_id"`
	Epoch          int64  `json:"epoch"`
	MetadataOffset uint64 `json:"metadata_offset"`
	// WantFence asks to be fenced now (controlled shutdown).
	WantFence bool `json:"want_fence,omitempty"`
}

// HeartbeatResponse says whether the broker is fenced.
type HeartbeatResponse struct {
	Fenced bool `json:"fenced"`
	// MetadataOffset is the offset of the controller's image when it
	// answered: a broker whose session had lapsed acts as a leader again
	// only once it has applied it (every leadership moved away meanwhile).
	MetadataOffset uint64 `json:"metadata_offset,omitempty"`
}

// Heartbeat keeps a broker's session; a fenced broker that has applied its
// own registration is unfenced and leads again the partitions waiting for
// it. A heartbeat of an unknown epoch gets STALE_BROKER_EPOCH: the broker
// must register again.
func (c *Controller) Heartbeat(ctx context.Context, req HeartbeatRequest) (HeartbeatResponse, error) {
	im, err := c.begin()
	if err != nil {
		return HeartbeatResponse{}, err
	}
	defer c.mu.Unlock()
	b, ok := im.Broker(req.BrokerID)
	if !ok || b.Epoch != req.Epoch {
		return HeartbeatResponse{}, errorf(kerr.StaleBrokerEpoch, "broker %d epoch %d is not registered", req.BrokerID, req.Epoch)
	}
	c.touch(req.BrokerID)
	switch {
	case req.WantFence && !b.Fenced:
		recs := slices.Insert(leaveBroker(im, b.ID), 0, metadata.Record{Type: metadata.FenceBroker, BrokerID: b.ID, Epoch: b.Epoch})
		if _, err := c.commit(ctx, recs...); err != nil {
			return HeartbeatResponse{}, err
		}
		c.cfg.Logger.Info("controller: broker fenced for controlled shutdown", "broker", b.ID)
		return HeartbeatResponse{Fenced: true, MetadataOffset: im.Offset}, nil
	case !req.WantFence && b.Fenced && req.MetadataOffset >= uint64(b.Epoch):
		recs := slices.Insert(returnBroker(im, b.ID), 0, metadata.Record{Type: metadata.UnfenceBroker, BrokerID: b.ID, Epoch: b.Epoch})
		off, err := c.commit(ctx, recs...)
		if err != nil {
			return HeartbeatResponse{}, err
		}
		c.cfg.Logger.Info("controller: broker unfenced", "broker", b.ID, "epoch", b.Epoch, "leaderships_returned", len(recs)-1)
		// The unfencing's own offset: a broker that kept its leaderships
		// publishes from there (RegisterResponse.KeptLeaderships).
		return HeartbeatResponse{Fenced: false, MetadataOffset: off}, nil
	}
	return HeartbeatResponse{Fenced: b.Fenced, MetadataOffset: im.Offset}, nil
}

// CreateTopicRequest creates one topic (already validated by the broker:
// name, configs). Assignments, when given, place the replicas explicitly
// (one list per partition); otherwise Partitions and ReplicationFactor do.
type CreateTopicRequest struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Assignments       [][]int32         `json:"assignments,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
	ValidateOnly      bool              `json:"validate_only,omitempty"`
}

// TopicResponse answers topic changes: the topic's id and the offset at
// which the change was applied.
type TopicResponse struct {
	TopicID metadata.ID `json:"topic_id"`
	Offset  uint64      `json:"offset"`
	// Partitions is the topic's placement after the change.
	Partitions []metadata.Partition `json:"partitions"`
}

// CreateTopic places and creates a topic.
func (c *Controller) CreateTopic(ctx context.Context, req CreateTopicRequest) (TopicResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicResponse{}, err
	}
	defer c.mu.Unlock()
	if _, ok := im.Topics[req.Name]; ok {
		return TopicResponse{}, errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", req.Name)
	}
	parts, err := c.place(im, req.Partitions, req.ReplicationFactor, req.Assignments, len(im.Topics))
	if err != nil {
		return TopicResponse{}, err
	}
	t := &metadata.Topic{Name: req.Name, ID: newTopicID(im), Configs: maps.Clone(req.Configs), Partitions: parts}
	if req.ValidateOnly {
		return TopicResponse{TopicID: t.ID, Partitions: parts}, nil
	}
	off, err := c.commit(ctx, metadata.Record{Type: metadata.CreateTopic, Topic: t})
	if err != nil {
		return TopicResponse{}, err
	}
	return TopicResponse{TopicID: t.ID, Offset: off, Partitions: parts}, nil
}

// place assigns count new partitions over the live brokers: replica lists
// given explicitly are checked, otherwise placeReplicas (placement.go)
// chooses them, over racks when brokers have broker.rack.
func (c *Controller) place(im *metadata.Image, count int32, rf int16, explicit [][]int32, start int) ([]metadata.Partition, error) {
	live := im.LiveBrokers()
	if len(explicit) > 0 {
		parts := make([]metadata.Partition, len(explicit))
		for i, reps := range explicit {
			if len(reps) == 0 {
				return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d has no replicas", i)
			}
			if len(reps) > c.cfg.MaxReplicationFactor {
				return nil, c.rfError(len(reps), len(live))
			}
			seen := map[int32]bool{}
			for _, r := range reps {
				if seen[r] {
					return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d lists broker %d twice", i, r)
				}
				seen[r] = true
				if _, ok := im.Broker(r); !ok {
					return nil, errorf(kerr.BrokerNotAvailable, "broker %d in the assignment of partition %d is not registered", r, i)
				}
			}
			leader := metadata.NoLeader
			for _, r := range reps {
				if im.IsLive(r) {
					leader = r
					break
				}
			}
			parts[i] = metadata.Partition{Replicas: slices.Clone(reps), ISR: slices.Clone(reps), Leader: leader}
		}
		return parts, nil
	}
	if count <= 0 {
		return nil, errorf(kerr.InvalidPartitions, "Number of partitions must be larger than 0.")
	}
	if rf <= 0 {
		return nil, errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0.")
	}
	if int(rf) > c.cfg.MaxReplicationFactor || int(rf) > len(live) {
		return nil, c.rfError(int(rf), len(live))
	}
	parts := make([]metadata.Partition, count)
	for p, reps := range placeReplicas(live, count, rf, start) { // placement.go
		parts[p] = metadata.Partition{Replicas: reps, ISR: slices.Clone(reps), Leader: reps[0]}
	}
	return parts, nil
}

func (c *Controller) rfError(rf, live int) error {
	if rf > c.cfg.MaxReplicationFactor {
		return errorf(kerr.InvalidReplicationFactor,
			"Replication factor: %d larger than %d: this Sluice cluster does not replicate partitions yet (replication factor 1 only).",
			rf, c.cfg.MaxReplicationFactor)
	}
	return errorf(kerr.InvalidReplicationFactor, "Replication factor: %d larger than available brokers: %d.", rf, live)
}

// DeleteTopicRequest deletes a topic by name.
type DeleteTopicRequest struct {
	Name string `json:"name"`
}

// DeleteTopic removes a topic.
func (c *Controller) DeleteTopic(ctx context.Context, req DeleteTopicRequest) (TopicResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicResponse{}, err
	}
	defer c.mu.Unlock()
	t, ok := im.Topics[req.Name]
	if !ok {
		return TopicResponse{}, &Error{Code: kerr.UnknownTopicOrPartition.Code}
	}
	off, err := c.commit(ctx, metadata.Record{Type: metadata.RemoveTopic, TopicName: t.Name, TopicID: t.ID})
	if err != nil {
		return TopicResponse{}, err
	}
	return TopicResponse{TopicID: t.ID, Offset: off}, nil
}

// CreatePartitionsRequest grows a topic to Count partitions.
type CreatePartitionsRequest struct {
	Name         string    `json:"name"`
	Count        int32     `json:"count"`
	Assignments  [][]int32 `json:"assignments,omitempty"`
	ValidateOnly bool      `json:"validate_only,omitempty"`
}

// CreatePartitions adds partitions, placed like a new topic's with the
// topic's replication factor.
func (c *Controller) CreatePartitions(ctx context.Context, req CreatePartitionsRequest) (TopicResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicResponse{}, err
	}
	defer c.mu.Unlock()
	t, ok := im.Topics[req.Name]
	if !ok {
		return TopicResponse{}, &Error{Code: kerr.UnknownTopicOrPartition.Code}
	}
	parts, err := c.newPartitions(im, t, req, len(im.Topics)) // batch.go
	if err != nil {
		return TopicResponse{}, err
	}
	if req.ValidateOnly {
		return TopicResponse{TopicID: t.ID, Partitions: append(slices.Clone(t.Partitions), parts...)}, nil
	}
	off, err := c.commit(ctx, metadata.Record{Type: metadata.AddPartitions, TopicName: t.Name, TopicID: t.ID, Partitions: parts})
	if err != nil {
		return TopicResponse{}, err
	}
	return TopicResponse{TopicID: t.ID, Offset: off}, nil
}

// SetTopicConfigsRequest replaces a topic's overrides (validated by the
// broker).
type SetTopicConfigsRequest struct {
	Name    string            `json:"name"`
	Configs map[string]string `json:"configs"`
}

// SetTopicConfigs replaces a topic's config overrides.
func (c *Controller) SetTopicConfigs(ctx context.Context, req SetTopicConfigsRequest) (TopicResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicResponse{}, err
	}
	defer c.mu.Unlock()
	t, ok := im.Topics[req.Name]
	if !ok {
		return TopicResponse{}, &Error{Code: kerr.UnknownTopicOrPartition.Code}
	}
	off, err := c.commit(ctx, metadata.Record{Type: metadata.SetTopicConfigs, TopicName: t.Name, TopicID: t.ID, Configs: req.Configs})
	if err != nil {
		return TopicResponse{}, err
	}
	return TopicResponse{TopicID: t.ID, Offset: off}, nil
}

// ProducerIDsRequest asks for a block of producer ids.
type ProducerIDsRequest struct {
	BrokerID int32 `json:"broker_id"`
	Epoch    int64 `json:"epoch"`
}

// ProducerIDsResponse is a block of producer ids.
type ProducerIDsResponse struct {
	First int64 `json:"first"`
	Count int64 `json:"count"`
}

// AllocateProducerIDs hands out the next block, recorded in the metadata so
// that no id is ever handed out twice.
func (c *Controller) AllocateProducerIDs(ctx context.Context, req ProducerIDsRequest) (ProducerIDsResponse, error) {
	im, err := c.begin()
	if err != nil {
		return ProducerIDsResponse{}, err
	}
	defer c.mu.Unlock()
	if b, ok := im.Broker(req.BrokerID); !ok || b.Epoch != req.Epoch {
		return ProducerIDsResponse{}, errorf(kerr.StaleBrokerEpoch, "broker %d epoch %d is not registered", req.BrokerID, req.Epoch)
	}
	first := im.NextProducerID
	if _, err := c.commit(ctx, metadata.Record{Type: metadata.ProducerIDs, FirstProducerID: first, ProducerIDCount: c.cfg.ProducerIDBlock}); err != nil {
		return ProducerIDsResponse{}, err
	}
	return ProducerIDsResponse{First: first, Count: c.cfg.ProducerIDBlock}, nil
}

// AlterPartitionRequest is a leader's proposal of a new in-sync set
// (Kafka's AlterPartition), made under the leader and partition epochs it
// knows.
type AlterPartitionRequest struct {
	BrokerID       int32       `json:"broker_id"`
	BrokerEpoch    int64       `json:"broker_epoch"`
	Topic          string      `json:"topic"`
	TopicID        metadata.ID `json:"topic_id"`
	Partition      int32       `json:"partition"`
	LeaderEpoch    int32       `json:"leader_epoch"`
	PartitionEpoch int32       `json:"partition_epoch"`
	ISR            []int32     `json:"isr"`
}

// AlterPartitionResponse is the partition's state after the change.
type AlterPartitionResponse struct {
	Partition metadata.Partition `json:"partition"`
	Offset    uint64             `json:"offset"`
}

// AlterPartition commits a leader's new in-sync set, as Kafka's controller
// does: only from the current leader (broker epoch, leader epoch), only
// against the current partition epoch (INVALID_UPDATE_VERSION otherwise,
// so stale proposals are refused), with the leader in the set, every
// member a replica, and every added member a live broker.
func (c *Controller) AlterPartition(ctx context.Context, req AlterPartitionRequest) (AlterPartitionResponse, error) {
	im, err := c.begin()
	if err != nil {
		return AlterPartitionResponse{}, err
	}
	defer c.mu.Unlock()
	t, ok := im.Topics[req.Topic]
	if !ok || t.ID != req.TopicID || req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
		return AlterPartitionResponse{}, &Error{Code: kerr.UnknownTopicOrPartition.Code}
	}
	p := t.Partitions[req.Partition]
	if b, ok := im.Broker(req.BrokerID); !ok || b.Epoch != req.BrokerEpoch || b.Fenced {
		return AlterPartitionResponse{}, errorf(kerr.StaleBrokerEpoch, "broker %d epoch %d is not a live registration", req.BrokerID, req.BrokerEpoch)
	}
	switch {
	case p.Leader != req.BrokerID:
		return AlterPartitionResponse{}, errorf(kerr.NotLeaderForPartition, "broker %d does not lead %s-%d", req.BrokerID, req.Topic, req.Partition)
	case req.LeaderEpoch != p.LeaderEpoch:
		return AlterPartitionResponse{}, errorf(kerr.FencedLeaderEpoch, "leader epoch %d, current %d", req.LeaderEpoch, p.LeaderEpoch)
	case req.PartitionEpoch != p.PartitionEpoch:
		return AlterPartitionResponse{}, errorf(kerr.InvalidUpdateVersion, "partition epoch %d, current %d", req.PartitionEpoch, p.PartitionEpoch)
	case !slices.Contains(req.ISR, req.BrokerID):
		return AlterPartitionResponse{}, errorf(kerr.InvalidRequest, "the leader must be in its in-sync set")
	}
	for _, r := range req.ISR {
		if !slices.Contains(p.Replicas, r) {
			return AlterPartitionResponse{}, errorf(kerr.InvalidRequest, "broker %d is not a replica", r)
		}
		if !slices.Contains(p.ISR, r) && !im.IsLive(r) {
			return AlterPartitionResponse{}, errorf(kerr.IneligibleReplica, "broker %d is fenced and cannot join the in-sync set", r)
		}
	}
	np := p
	np.ISR = slices.Clone(req.ISR)
	np.PartitionEpoch++
	off, err := c.commit(ctx, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
		Partition: req.Partition, Change: &np})
	if err != nil {
		return AlterPartitionResponse{}, err
	}
	return AlterPartitionResponse{Partition: np, Offset: off}, nil
}

// ElectRequest asks for a leader election of one partition: the preferred
// replica (the first), or unclean (any live replica, when no in-sync one
// leads).
type ElectRequest struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Unclean   bool   `json:"unclean,omitempty"`
}

// ElectResponse is the election's outcome as a Kafka error code (0: a
// new leader was elected).
type ElectResponse struct {
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// ElectLeader runs Kafka's ElectLeaders for one partition.
func (c *Controller) ElectLeader(ctx context.Context, req ElectRequest) (ElectResponse, error) {
	im, err := c.begin()
	if err != nil {
		return ElectResponse{}, err
	}
	defer c.mu.Unlock()
	resp, rec := c.elect(im, req)
	if rec == nil {
		return resp, nil
	}
	if _, err := c.commit(ctx, *rec); err != nil {
		return ElectResponse{}, err
	}
	return resp, nil
}

// elect decides one partition's election against im: the answer, and the
// record to commit (nil: none). Caller holds mu.
func (c *Controller) elect(im *metadata.Image, req ElectRequest) (ElectResponse, *metadata.Record) {
	t, ok := im.Topics[req.Topic]
	if !ok || req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
		return ElectResponse{Code: kerr.UnknownTopicOrPartition.Code}, nil
	}
	p := t.Partitions[req.Partition]
	np := p
	if !req.Unclean {
		pref := p.Replicas[0]
		switch {
		case p.Leader == pref:
			return ElectResponse{Code: kerr.ElectionNotNeeded.Code}, nil
		case !im.IsLive(pref) || !slices.Contains(p.ISR, pref):
			return ElectResponse{Code: kerr.PreferredLeaderNotAvailable.Code,
				Message: fmt.Sprintf("preferred replica %d is not a live in-sync replica", pref)}, nil
		}
		np.Leader = pref
	} else {
		if p.Leader != metadata.NoLeader && im.IsLive(p.Leader) {
			return ElectResponse{Code: kerr.ElectionNotNeeded.Code}, nil
		}
		// A live in-sync replica first (a clean election), else any live
		// replica.
		np.Leader = electFrom(im, p.Replicas, p.ISR)
		if np.Leader == metadata.NoLeader && len(p.ISR) == 0 {
			np.Leader = electFrom(im, p.Replicas, p.ELR) // KIP-966: an eligible leader replica is clean
		}
		if np.Leader == metadata.NoLeader {
			for _, r := range p.Replicas {
				if im.IsLive(r) {
					np.Leader = r
					break
				}
			}
		}
		if np.Leader == metadata.NoLeader {
			return ElectResponse{Code: kerr.EligibleLeadersNotAvailable.Code, Message: "no replica is live"}, nil
		}
		if slices.Contains(p.ISR, np.Leader) {
			np.ISR = slices.Clone(p.ISR)
		} else if slices.Contains(p.ELR, np.Leader) {
			np.ISR = []int32{np.Leader}
		} else {
			c.cfg.Logger.Warn("controller: UNCLEAN leader election: a replica outside the in-sync set leads; records acknowledged by the old in-sync set may be lost",
				"topic", req.Topic, "partition", req.Partition, "leader", np.Leader, "isr", p.ISR)
			np.ISR = []int32{np.Leader}
		}
	}
	np.LeaderEpoch++
	np.PartitionEpoch++
	return ElectResponse{}, &metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
		Partition: req.Partition, Change: &np}
}

// preferredLeaders returns the changes that give every partition whose
// preferred replica (the first) is a live in-sync replica but not its
// leader back to it (auto.leader.rebalance.enable).
func preferredLeaders(im *metadata.Image) []metadata.Record {
	var out []metadata.Record
	for _, t := range im.SortedTopics() {
		for i, p := range t.Partitions {
			pref := p.Replicas[0]
			if p.Leader == pref || !im.IsLive(pref) || !slices.Contains(p.ISR, pref) {
				continue
			}
			np := p
			np.Leader = pref
			np.LeaderEpoch++
			np.PartitionEpoch++
			out = append(out, metadata.Record{Type: metadata.ChangePartition, TopicName: t.Name, TopicID: t.ID,
				Partition: int32(i), Change: &np})
		}
	}
	return out
}

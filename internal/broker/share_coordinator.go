// The share coordinator (KIP-932): the leader of each __share_group_state partition
// owns the state of the share partitions whose coordinator key ("group:topicId:partition")
// hashes to it, writes it there as Kafka's ShareSnapshot and ShareUpdate records
// (internal/share/coordinator.go) and serves InitializeShareGroupState (83),
// ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87) for it. FindCoordinator's share key type (2) finds it.
//
// The share-partition leaders are its clients: a broker that starts to lead a topic
// partition reads the state of its share partitions from the coordinator before using
// them, and persists every change with a write. When the coordinator is this broker the
// call is local; otherwise the request, encoded in Kafka's wire format, goes to the
// coordinator's broker over the cluster's peer transport ("share-state"), so that no
// client principal needs ClusterAction. The Kafka-protocol RPCs need ClusterAction on
// the cluster, as with Kafka.
package broker

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.InitializeShareGroupState, func(b *Broker, _ context.Context, r *wire.Request, req *kmsg.InitializeShareGroupStateRequest) (kmsg.Response, error) {
		return b.handleShareStateRPC(r, req), nil
	})
	register(kmsg.ReadShareGroupState, func(b *Broker, _ context.Context, r *wire.Request, req *kmsg.ReadShareGroupStateRequest) (kmsg.Response, error) {
		return b.handleShareStateRPC(r, req), nil
	})
	register(kmsg.WriteShareGroupState, func(b *Broker, _ context.Context, r *wire.Request, req *kmsg.WriteShareGroupStateRequest) (kmsg.Response, error) {
		return b.handleShareStateRPC(r, req), nil
	})
	register(kmsg.DeleteShareGroupState, func(b *Broker, _ context.Context, r *wire.Request, req *kmsg.DeleteShareGroupStateRequest) (kmsg.Response, error) {
		return b.handleShareStateRPC(r, req), nil
	})
	register(kmsg.ReadShareGroupStateSummary, func(b *Broker, _ context.Context, r *wire.Request, req *kmsg.ReadShareGroupStateSummaryRequest) (kmsg.Response, error) {
		return b.handleShareStateRPC(r, req), nil
	})
}

// startShareCoordinator creates the coordinator and makes it follow the leadership
// of the __share_group_state partitions (called by startShareGroups).
func (b *Broker) startShareCoordinator() error {
	per, _ := strconv.Atoi(strings.TrimSpace(b.cfg.Raw["share.coordinator.snapshot.update.records.per.snapshot"]))
	b.shareCoord = &share.Coordinator{
		Append:      b.appendShareState,
		AppendBatch: b.appendShareStateBatch,
		Partitions:  func() int32 { return b.internalTopicPartitions(ShareStateTopic, b.cfg.ShareStateTopicNumPartitions) },
		PerSnapshot: per,
		NowMs:       func() int64 { return b.now().UnixMilli() },
	}
	b.replicas.Listen(internalPartitionListener(ShareStateTopic, b.loadShareState, b.shareCoord.UnloadPartition))
	// A share partition whose topic partition this broker stops leading is
	// dropped from memory: its next leader reads it from the coordinator.
	b.replicas.Listen(func(e replica.Event) error {
		if e.Kind == replica.BecameLeader || strings.HasPrefix(e.Partition.Topic(), "__") {
			return nil
		}
		if t, ok := b.topics.Get(e.Partition.Topic()); ok {
			b.shares.Forget([16]byte(t.ID), e.Partition.Index())
		}
		return nil
	})
	return b.loadLedPartitions(ShareStateTopic, b.loadShareState)
}

// loadShareState replays partition p of __share_group_state into the coordinator;
// on a single node the share partitions come back into the manager at once (so that
// their groups are known, empty, after a restart).
func (b *Broker) loadShareState(p int32) error {
	err := b.shareCoord.LoadPartition(p, func(apply func(key, value []byte) error) error {
		return replayLog(b.replicas.Get(ShareStateTopic, p), func(buf []byte) error {
			for len(buf) > 0 {
				h, err := batch.ParseHeader(buf)
				if err != nil || h.TotalSize() > len(buf) {
					return nil
				}
				one := buf[:h.TotalSize()]
				buf = buf[h.TotalSize():]
				if h.IsControl() {
					continue
				}
				recs, err := batch.Records(one, 0)
				if err != nil {
					return fmt.Errorf("%s-%d: %w", ShareStateTopic, p, err)
				}
				for _, r := range recs {
					if err := apply(r.Key, r.Value); err != nil {
						b.logger.Warn("share: skipping bad state record", "partition", p, "offset", h.BaseOffset, "err", err)
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if b.cluster == nil && b.clusterCfg == nil {
		for _, s := range b.shareCoord.Snapshots(p) {
			b.shares.Restore(s)
		}
	}
	return nil
}

// appendShareState writes one coordinator record to partition p of the state topic
// and waits for its in-sync replicas.
func (b *Broker) appendShareState(p int32, key, value []byte) error {
	part := b.replicas.Get(ShareStateTopic, p)
	if part == nil || part.Role() != replica.Leader {
		return fmt.Errorf("%s-%d is not led here", ShareStateTopic, p)
	}
	rec := batch.NewBatch(0, time.Now().UnixMilli(), batch.KV{Key: key, Value: value})
	_, err := part.AppendReplicated(rec, log.AppendOptions{Coordinator: true}, coordinatorWriteTimeout)
	return err
}

// appendShareStateBatch writes several coordinator records to partition p of
// the state topic as one batch and waits for its in-sync replicas.
func (b *Broker) appendShareStateBatch(p int32, keys, values [][]byte) error {
	part := b.replicas.Get(ShareStateTopic, p)
	if part == nil || part.Role() != replica.Leader {
		return fmt.Errorf("%s-%d is not led here", ShareStateTopic, p)
	}
	kvs := make([]batch.KV, len(keys))
	for i := range keys {
		kvs[i] = batch.KV{Key: keys[i], Value: values[i]}
	}
	rec := batch.NewBatch(0, time.Now().UnixMilli(), kvs...)
	_, err := part.AppendReplicated(rec, log.AppendOptions{Coordinator: true}, coordinatorWriteTimeout)
	return err
}

// shareStateTopicSettings are the replication factor and overrides the cluster
// creates __share_group_state with (share.coordinator.state.topic.*).
func (b *Broker) shareStateTopicSettings(overrides map[string]string, maxRF int16) int16 {
	rf := int16(3)
	if v, err := strconv.Atoi(strings.TrimSpace(b.cfg.Raw["share.coordinator.state.topic.replication.factor"])); err == nil && v > 0 {
		rf = int16(v)
	}
	rf = min(rf, maxRF)
	isr := int16(2)
	if v, err := strconv.Atoi(strings.TrimSpace(b.cfg.Raw["share.coordinator.state.topic.min.isr"])); err == nil && v > 0 {
		isr = int16(v)
	}
	overrides["min.insync.replicas"] = strconv.Itoa(int(max(1, min(isr, rf))))
	if b.cfg.ShareStateTopicSegmentBytes > 0 {
		overrides["segment.bytes"] = strconv.Itoa(int(b.cfg.ShareStateTopicSegmentBytes))
	}
	return rf
}

// --- the share-partition leader's side ------------------------------------------

// errShareCoordinatorNotAvailable: the state topic or its leader is not there yet.
var errShareCoordinatorNotAvailable = errors.New("share coordinator not available")

// shareStateTarget is the share coordinator a share-state request goes to:
// this broker's own (local) or broker id's.
type shareStateTarget struct {
	id    int32
	local bool
}

// shareStateRouter returns the function that finds the share coordinator of
// a key (the leader of its __share_group_state partition) from one look at
// the metadata: the state topic is found (or created) once for all the keys
// routed with it.
func (b *Broker) shareStateRouter() (func(share.Key) (shareStateTarget, error), error) {
	if im := b.image(); im != nil {
		t, ok := im.Topics[ShareStateTopic]
		if !ok {
			if !b.cluster.ensureInternalTopicNow(ShareStateTopic) { // cluster_implicit.go
				return nil, errShareCoordinatorNotAvailable
			}
			im = b.image()
			if t, ok = im.Topics[ShareStateTopic]; !ok {
				return nil, errShareCoordinatorNotAvailable
			}
		}
		n, self := int32(len(t.Partitions)), b.self()
		return func(k share.Key) (shareStateTarget, error) {
			ip, ok := im.Partition(ShareStateTopic, k.StatePartition(n))
			if !ok || ip.Leader == metadata.NoLeader {
				return shareStateTarget{}, errShareCoordinatorNotAvailable
			}
			return shareStateTarget{id: ip.Leader, local: ip.Leader == self}, nil
		}, nil
	}
	n, err := b.ensureShareStateTopic()
	if err != nil {
		return nil, err
	}
	return func(k share.Key) (shareStateTarget, error) {
		if p := k.StatePartition(n); !b.shareCoord.Leads(p) {
			// A state topic just created: its partitions are empty.
			if err := b.loadShareState(p); err != nil {
				return shareStateTarget{}, err
			}
		}
		return shareStateTarget{local: true}, nil
	}, nil
}

// shareStateCall sends a share-state request about k to its coordinator.
func (b *Broker) shareStateCall(k share.Key, req kmsg.Request) (kmsg.Response, error) {
	route, err := b.shareStateRouter()
	if err != nil {
		return nil, err
	}
	t, err := route(k)
	if err != nil {
		return nil, err
	}
	return b.shareStateSend(t, req)
}

// shareStateSend sends a share-state request to coordinator t.
func (b *Broker) shareStateSend(t shareStateTarget, req kmsg.Request) (kmsg.Response, error) {
	b.shareStateRequests.Add(1)
	if !t.local {
		return b.cluster.shareStateRemote(t.id, req)
	}
	return b.serveShareState(req), nil
}

// shareStateCode turns a per-partition error code into an error.
func shareStateCode(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil {
		return fmt.Errorf("share coordinator: %w: %s", err, *msg)
	}
	return fmt.Errorf("share coordinator: %w", err)
}

// readShareState is share.Options.Read: ReadShareGroupState for one share partition.
func (b *Broker) readShareState(k share.Key) (share.Snapshot, bool, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = k.Partition, b.shareLeaderEpoch(k)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := b.shareStateCall(k, req)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	resp := raw.(*kmsg.ReadShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return share.Snapshot{}, false, errors.New("share coordinator: malformed ReadShareGroupState response")
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code {
		return share.Snapshot{}, false, nil // no state yet
	}
	if err := shareStateCode(rp.ErrorCode, rp.ErrorMessage); err != nil {
		return share.Snapshot{}, false, err
	}
	s := share.Snapshot{Key: k, StateEpoch: rp.StateEpoch, LeaderEpoch: -1, StartOffset: rp.StartOffset, DeliveryCompleteCount: -1}
	for _, sb := range rp.StateBatches {
		s.Batches = append(s.Batches, share.StateBatch{First: sb.FirstOffset, Last: sb.LastOffset, State: sb.DeliveryState, DeliveryCount: sb.DeliveryCount})
	}
	return s, true, nil
}

// shareLeaderEpoch is the leader epoch of k's topic partition here (-1: unknown),
// sent with the state writes so that the coordinator fences a replaced leader.
func (b *Broker) shareLeaderEpoch(k share.Key) int32 {
	t, ok := b.topicByID(k.TopicID)
	if !ok {
		return -1
	}
	if part := b.replicas.Get(t.Name, k.Partition); part != nil {
		return part.LeaderEpoch()
	}
	return -1
}

// shareStateSummary returns the start offset of share partition k and its lag (the
// records from the start offset to part's high watermark not yet acknowledged or
// archived) from the share coordinator's ReadShareGroupStateSummary; -1, -1 when
// unknown.
func (b *Broker) shareStateSummary(k share.Key, part *replica.Partition) (start, lag int64) {
	hw := int64(-1)
	if part != nil {
		hw = part.HighWatermark()
	}
	return b.shareStateSummaryHW(k, hw)
}

// shareStateSummaryHW is shareStateSummary with the partition's high watermark (-1:
// unknown, and so is the lag).
func (b *Broker) shareStateSummaryHW(k share.Key, hw int64) (start, lag int64) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version, req.GroupID = 1, k.Group
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	p.Partition, p.LeaderEpoch = k.Partition, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := b.shareStateCall(k, req)
	if err != nil {
		return -1, -1
	}
	resp := raw.(*kmsg.ReadShareGroupStateSummaryResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return -1, -1
	}
	rp := resp.Topics[0].Partitions[0]
	lag = -1
	if hw >= 0 && rp.DeliveryCompleteCount >= 0 {
		lag = max(0, hw-rp.StartOffset-int64(rp.DeliveryCompleteCount))
	}
	return rp.StartOffset, lag
}

// shareStateStore is share.Store over the share coordinator: a snapshot value is
// sent as WriteShareGroupState, a nil value as DeleteShareGroupState. It is also a
// share.Initializer: Initialize is InitializeShareGroupState.
type shareStateStore struct{ b *Broker }

// Initialize replaces the state of k with an empty window at start and state epoch
// stateEpoch (share.Manager.ResetStart: AlterShareGroupOffsets).
func (s shareStateStore) Initialize(k share.Key, stateEpoch int32, start int64) error {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = k.Partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := s.b.shareStateCall(k, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.InitializeShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("share coordinator: malformed InitializeShareGroupState response")
	}
	rp := resp.Topics[0].Partitions[0]
	return shareStateCode(rp.ErrorCode, rp.ErrorMessage)
}

func (s shareStateStore) Write(k share.Key, value []byte) error {
	if value == nil {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		p.Partition = k.Partition
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		raw, err := s.b.shareStateCall(k, req)
		if err != nil {
			return err
		}
		rp := raw.(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions[0]
		return shareStateCode(rp.ErrorCode, rp.ErrorMessage)
	}
	snap, err := share.DecodeSnapshotValue(value)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = k.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	// The state epoch is the one the share partition was read or initialized with
	// (share.Partition): the coordinator fences it (FENCED_STATE_EPOCH) once the
	// state was initialized again, and the manager then drops the copy.
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, snap.StateEpoch, s.b.shareLeaderEpoch(k), snap.StartOffset
	p.DeliveryCompleteCount = snap.DeliveryCompleteCount
	for _, sb := range snap.Batches {
		p.StateBatches = append(p.StateBatches, kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			FirstOffset: sb.First, LastOffset: sb.Last, DeliveryState: sb.State, DeliveryCount: sb.DeliveryCount,
		})
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := s.b.shareStateCall(k, req)
	if err != nil {
		return err
	}
	rp := raw.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0]
	return shareStateCode(rp.ErrorCode, rp.ErrorMessage)
}

// shareStateMsg carries a share-state request or response in Kafka's wire format
// over the peer transport.
type shareStateMsg struct {
	Key     int16  `json:"key"`
	Version int16  `json:"version"`
	Body    []byte `json:"body"`
}

// shareStateRemote sends req to broker id's share coordinator.
func (c *clusterNode) shareStateRemote(id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := c.peers.Addr(uint64(id))
	if !ok {
		return nil, fmt.Errorf("%w: broker %d has no peer address", errShareCoordinatorNotAvailable, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out shareStateMsg
	in := shareStateMsg{Key: req.Key(), Version: req.GetVersion(), Body: req.AppendTo(nil)}
	if err := c.peers.Call(ctx, addr, "share-state", in, &out); err != nil {
		return nil, fmt.Errorf("share coordinator on broker %d: %w", id, err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(out.Version)
	if err := resp.ReadFrom(out.Body); err != nil {
		return nil, fmt.Errorf("share coordinator on broker %d: %w", id, err)
	}
	return resp, nil
}

// shareStateLocal serves another broker's shareStateRemote.
func (c *clusterNode) shareStateLocal(_ context.Context, in shareStateMsg) (shareStateMsg, error) {
	req := kmsg.RequestForKey(in.Key)
	switch req.(type) {
	case *kmsg.InitializeShareGroupStateRequest, *kmsg.ReadShareGroupStateRequest, *kmsg.WriteShareGroupStateRequest,
		*kmsg.DeleteShareGroupStateRequest, *kmsg.ReadShareGroupStateSummaryRequest:
	default:
		return shareStateMsg{}, fmt.Errorf("share-state: unexpected API key %d", in.Key)
	}
	req.SetVersion(in.Version)
	if err := req.ReadFrom(in.Body); err != nil {
		return shareStateMsg{}, err
	}
	resp := c.b.serveShareState(req)
	return shareStateMsg{Key: in.Key, Version: resp.GetVersion(), Body: resp.AppendTo(nil)}, nil
}

// --- the coordinator's side -------------------------------------------------------

// handleShareStateRPC serves the share-state RPCs from a client connection: they
// need ClusterAction on the cluster.
func (b *Broker) handleShareStateRPC(r *wire.Request, req kmsg.Request) kmsg.Response {
	if b.authz != nil && !b.allowedCluster(r, authz.OpClusterAction) {
		return b.shareStateAll(req, kerr.ClusterAuthorizationFailed.Code)
	}
	return b.serveShareState(req)
}

// serveShareState answers a share-state request from this broker's coordinator.
func (b *Broker) serveShareState(req kmsg.Request) kmsg.Response {
	if b.shareCoord == nil {
		return b.shareStateAll(req, kerr.CoordinatorNotAvailable.Code)
	}
	c := b.shareCoord
	switch q := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		code := shareGroupIDCode(q.GroupID)
		var reqs []share.InitRequest
		for _, t := range q.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
				reqs = append(reqs, share.InitRequest{Key: share.Key{Group: q.GroupID, TopicID: t.TopicID, Partition: p.Partition},
					StateEpoch: p.StateEpoch, StartOffset: p.StartOffset})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if code != 0 {
			return resp
		}
		// All partitions at once: one replicated batch per state partition.
		codes, i := c.InitializeMany(reqs), 0
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				resp.Topics[ti].Partitions[pi].ErrorCode = codes[i]
				i++
			}
		}
		return resp
	case *kmsg.ReadShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.StartOffset, rp.StateEpoch = p.Partition, -1, 0
				rp.ErrorCode = shareGroupIDCode(q.GroupID)
				if rp.ErrorCode == 0 {
					s, found, code := c.Read(share.Key{Group: q.GroupID, TopicID: t.TopicID, Partition: p.Partition})
					switch {
					case code != 0:
						rp.ErrorCode = code
					case !found:
						rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
						rp.ErrorMessage = kmsg.StringPtr("The share partition has no state.")
					default:
						rp.StateEpoch, rp.StartOffset = s.StateEpoch, s.StartOffset
						for _, sb := range s.Batches {
							rp.StateBatches = append(rp.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
								FirstOffset: sb.First, LastOffset: sb.Last, DeliveryState: sb.State, DeliveryCount: sb.DeliveryCount,
							})
						}
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.WriteShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = shareGroupIDCode(q.GroupID)
				if rp.ErrorCode == 0 {
					s := share.Snapshot{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: -1}
					if q.Version >= 1 {
						s.DeliveryCompleteCount = p.DeliveryCompleteCount
					}
					for _, sb := range p.StateBatches {
						if sb.FirstOffset > sb.LastOffset {
							rp.ErrorCode = kerr.InvalidRequest.Code
						}
						s.Batches = append(s.Batches, share.StateBatch{First: sb.FirstOffset, Last: sb.LastOffset, State: sb.DeliveryState, DeliveryCount: sb.DeliveryCount})
					}
					if rp.ErrorCode == 0 {
						rp.ErrorCode = c.Write(share.Key{Group: q.GroupID, TopicID: t.TopicID, Partition: p.Partition}, s)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = shareGroupIDCode(q.GroupID)
				if rp.ErrorCode == 0 {
					rp.ErrorCode = c.Delete(share.Key{Group: q.GroupID, TopicID: t.TopicID, Partition: p.Partition})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateSummaryRequest:
		resp := q.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.DeliveryCompleteCount = p.Partition, -1, -1, -1
				rp.ErrorCode = shareGroupIDCode(q.GroupID)
				if rp.ErrorCode == 0 {
					s, found, code := c.Read(share.Key{Group: q.GroupID, TopicID: t.TopicID, Partition: p.Partition})
					switch {
					case code != 0:
						rp.ErrorCode = code
					case !found:
						rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
						rp.ErrorMessage = kmsg.StringPtr("The share partition has no state.")
					default:
						rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = s.StateEpoch, s.LeaderEpoch, s.StartOffset
						rp.DeliveryCompleteCount = s.DeliveryCompleteCount
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return nil
}

func shareGroupIDCode(id string) int16 {
	if id == "" {
		return kerr.InvalidRequest.Code
	}
	return 0
}

// shareStateAll answers every partition of req with code.
func (b *Broker) shareStateAll(req kmsg.Request, code int16) kmsg.Response {
	resp := b.serveShareStateWith(req, code)
	return resp
}

// serveShareStateWith builds req's response with code for every partition.
func (b *Broker) serveShareStateWith(req kmsg.Request, code int16) kmsg.Response {
	switch q := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset = p.Partition, code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.WriteShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteShareGroupStateRequest:
		resp := q.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateSummaryRequest:
		resp := q.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return nil
}

// validShareCoordinatorKey reports whether key is "group:topicId:partition".
func validShareCoordinatorKey(key string) bool {
	_, ok := parseShareCoordinatorKey(key)
	return ok
}

func parseShareCoordinatorKey(key string) (share.Key, bool) {
	i := strings.LastIndexByte(key, ':')
	if i <= 0 {
		return share.Key{}, false
	}
	j := strings.LastIndexByte(key[:i], ':')
	if j <= 0 {
		return share.Key{}, false
	}
	p, err := strconv.ParseInt(key[i+1:], 10, 32)
	id, err2 := base64.RawURLEncoding.DecodeString(key[j+1 : i])
	if err != nil || err2 != nil || len(id) != 16 || p < 0 {
		return share.Key{}, false
	}
	return share.Key{Group: key[:j], TopicID: [16]byte(id), Partition: int32(p)}, true
}

// shareCoordinatorPartition parses a share coordinator key "group:topicId:partition"
// (FindCoordinator key type 2) and returns its __share_group_state partition.
func (b *Broker) shareCoordinatorPartition(key string) (int32, bool) {
	k, ok := parseShareCoordinatorKey(key)
	if !ok {
		return 0, false
	}
	return k.StatePartition(b.internalTopicPartitions(ShareStateTopic, b.cfg.ShareStateTopicNumPartitions)), true
}

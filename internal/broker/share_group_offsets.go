// DescribeShareGroupOffsets (key 90), v0–v1; AlterShareGroupOffsets (key 91), v0;
// DeleteShareGroupOffsets (key 92), v0: the share-partition start offsets of share groups
// (KIP-932), as Kafka's kafka-share-groups tool shows (--describe), resets
// (--reset-offsets) and deletes (--delete-offsets) them.
//
// Describe: for each group, the requested partitions, or with null topics every
// partition the group has state for, with the start offset (-1 for a partition the group
// never fetched) and, from v1, the lag: records from the start offset up to the high
// watermark not yet acknowledged or archived (-1 when unknown). As Kafka 4.4's group
// coordinator, the group is not looked up: a group that does not exist (or is not a
// share group) has no state, so it is answered with no topics (null topics) or start
// offsets of -1, not GROUP_ID_NOT_FOUND (ShareGroupDescribe answers that). Alter: the group must have no members (NON_EMPTY_GROUP; a
// missing group is created empty, as Kafka does); each partition's state is replaced by
// an empty window at the given start offset (-1: the high watermark, -2: the log start
// offset); another type of group with the id is GROUP_ID_NOT_FOUND. Delete: the group
// must exist (GROUP_ID_NOT_FOUND: "Group g not found.", or "... is not a share group.")
// and have no members; the state of every
// partition of each topic is deleted. Both wait up to 15 s for a share coordinator that
// is not there yet (share_state_retry.go), as Kafka's persister does, and answer
// COORDINATOR_NOT_AVAILABLE if it does not come.
//
// Authorization, as Kafka: Describe needs DESCRIBE on the group and on each topic; Alter
// READ on the group and on each topic; Delete DELETE on the group and READ on each topic
// (GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED).
package broker

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/share"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.DescribeShareGroupOffsets, (*Broker).handleDescribeShareGroupOffsets)
	register(kmsg.AlterShareGroupOffsets, (*Broker).handleAlterShareGroupOffsets)
	register(kmsg.DeleteShareGroupOffsets, (*Broker).handleDeleteShareGroupOffsets)
}

func (b *Broker) handleDescribeShareGroupOffsets(_ context.Context, r *wire.Request, req *kmsg.DescribeShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if b.authz != nil && b.groupDenied(r, authz.OpDescribe, rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		describe := func(rt *kmsg.DescribeShareGroupOffsetsResponseGroupTopic, id [16]byte, name string, p int32) {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
			part := b.replicas.Get(name, p)
			if part != nil {
				rp.LeaderEpoch = part.LeaderEpoch()
			}
			k := share.Key{Group: rg.GroupID, TopicID: id, Partition: p}
			if sp := b.shares.Lookup(k); sp != nil {
				rp.StartOffset, _ = sp.Offsets()
				if part != nil {
					rp.Lag = sp.Lag(part.HighWatermark())
				}
			} else if b.image() != nil {
				// On a cluster the partition's leader may be another broker: ask
				// the share coordinator (share_coordinator.go).
				// The lag is counted to the high watermark of the
				// partition's leader (share_offsets_leader.go).
				rp.StartOffset, rp.Lag = b.shareStateSummaryHW(k, b.shareLeaderHighWatermark(name, p, part))
				if part == nil {
					rp.LeaderEpoch = b.imageLeaderEpoch(name, p)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if rg.Topics == nil {
			// The partitions this broker holds state for, and those the
			// group initialized (share_init_state.go; Kafka lists these).
			keys := b.shares.InitializedPartitions(rg.GroupID)
			for _, sp := range b.shares.GroupPartitions(rg.GroupID) {
				if !slices.Contains(keys, sp.Key) {
					keys = append(keys, sp.Key)
				}
			}
			slices.SortFunc(keys, func(a, b share.Key) int {
				if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
					return c
				}
				return cmp.Compare(a.Partition, b.Partition)
			})
			byTopic := map[[16]byte]int{}
			for _, k := range keys {
				top, ok := b.topicByID(k.TopicID)
				if !ok || (b.authz != nil && !b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, top.Name)) {
					continue // a deleted topic, or one the principal may not describe
				}
				i, ok := byTopic[k.TopicID]
				if !ok {
					rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
					rt.Topic, rt.TopicID = top.Name, [16]byte(top.ID)
					g.Topics = append(g.Topics, rt)
					i = len(g.Topics) - 1
					byTopic[k.TopicID] = i
				}
				describe(&g.Topics[i], k.TopicID, top.Name, k.Partition)
			}
		}
		for _, qt := range rg.Topics {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = qt.Topic
			top, ok := b.topics.Get(qt.Topic)
			if ok {
				rt.TopicID = [16]byte(top.ID)
			}
			deniedTopic := b.authz != nil && !b.allowed(r, authz.OpDescribe, authz.ResourceTopic, qt.Topic)
			for _, p := range qt.Partitions {
				if deniedTopic || !ok || p < 0 || p >= top.Partitions {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					if deniedTopic {
						rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					}
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				describe(&rt, [16]byte(top.ID), top.Name, p)
			}
			g.Topics = append(g.Topics, rt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, r *wire.Request, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if req.GroupID == "" {
		return fail(kerr.InvalidGroupID, "")
	}
	if b.authz != nil && b.groupDenied(r, authz.OpRead, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed, "")
	}
	if exists, empty := b.shares.GroupState(req.GroupID); exists && !empty {
		return fail(kerr.NonEmptyGroup, "The group has active members: stop them before altering its offsets.")
	}
	if !b.shares.EnsureGroup(req.GroupID) {
		return fail(kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group.")
	}
	for _, qt := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = qt.Topic
		top, ok := b.topics.Get(qt.Topic)
		if ok {
			rt.TopicID = [16]byte(top.ID)
		}
		deniedTopic := b.authz != nil && !b.allowed(r, authz.OpRead, authz.ResourceTopic, qt.Topic)
		for _, qp := range qt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = qp.Partition
			rt.Partitions = append(rt.Partitions, rp)
			last := &rt.Partitions[len(rt.Partitions)-1]
			if deniedTopic {
				last.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !ok || qp.Partition < 0 || qp.Partition >= top.Partitions {
				last.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			if qp.StartOffset < -2 {
				last.ErrorCode = kerr.InvalidRequest.Code
				msg := "The start offset must be an offset, -1 (latest) or -2 (earliest)."
				last.ErrorMessage = &msg
				continue
			}
			// -1 and -2 are resolved by the partition's leader, possibly
			// another broker (share_offsets_leader.go).
			start, code := b.shareStartOffset(top.Name, qp.Partition, qp.StartOffset)
			if code != 0 {
				last.ErrorCode = code
				continue
			}
			k := share.Key{Group: req.GroupID, TopicID: [16]byte(top.ID), Partition: qp.Partition}
			last.ErrorCode, last.ErrorMessage = b.replaceShareState(ctx, k, top.Name, "altering offsets",
				func() error { return b.shares.ResetStart(k, start) })
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, r *wire.Request, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	exists, empty := b.shares.GroupState(req.GroupID)
	switch {
	case req.GroupID == "":
		return fail(kerr.InvalidGroupID, "")
	case b.authz != nil && b.groupDenied(r, authz.OpDelete, req.GroupID):
		return fail(kerr.GroupAuthorizationFailed, "")
	case !exists:
		return fail(kerr.GroupIDNotFound, b.shares.NotFoundMessage(req.GroupID))
	case !empty:
		return fail(kerr.NonEmptyGroup, "The group has active members: stop them before deleting its offsets.")
	}
	for _, qt := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = qt.Topic
		top, ok := b.topics.Get(qt.Topic)
		if b.authz != nil && !b.allowed(r, authz.OpRead, authz.ResourceTopic, qt.Topic) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = [16]byte(top.ID)
		for p := int32(0); p < top.Partitions; p++ {
			k := share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: p}
			// As for AlterShareGroupOffsets: the partition's leader, possibly
			// another broker, reads the state (none: share.auto.offset.reset)
			// at its next use instead of serving and writing the deleted one.
			if code, msg := b.replaceShareState(ctx, k, top.Name, "deleting offsets",
				func() error { return b.shares.DeleteState(k) }); code != 0 {
				rt.ErrorCode, rt.ErrorMessage = code, msg
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups handles DescribeGroups (v0-v6). A group that does not exist (or is a
// KIP-848 consumer group) is reported Dead with no error before v6 and with
// GROUP_ID_NOT_FOUND from v6 on (KIP-1043). Member metadata and assignments are only
// shown in the Stable state, as in Kafka.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrDescribeGroupsResponse()
	r.Version = req.Version
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = -2147483648
		g := c.groups[id]
		switch {
		case c.notCoordinator(id):
			dg.ErrorCode = kerr.NotCoordinator.Code
		case !validGroupID(id):
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil || g.consumer != nil:
			dg.State = stateDead.String()
			if req.Version >= 6 {
				dg.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " not found."
				if g != nil {
					msg = "Group " + id + " is not a classic group."
				}
				dg.ErrorMessage = &msg
			}
		default:
			dg.State = g.state.String()
			dg.ProtocolType = g.protocolType
			if g.state == stateStable {
				dg.Protocol = g.protocol
			}
			for _, mid := range g.sortedMemberIDs() {
				m := g.members[mid]
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID = m.id
				dm.InstanceID = m.instanceID
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				if g.state == stateStable {
					dm.ProtocolMetadata = m.metadataFor(g.protocol)
					dm.MemberAssignment = m.assignment
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		r.Groups = append(r.Groups, dg)
	}
	return r
}

// ListGroups handles ListGroups (v0-v5): states filter (v4+, case-insensitive) and
// types filter (v5+: "classic", "consumer").
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrListGroupsResponse()
	r.Version = req.Version
	if c.closed {
		r.ErrorCode = kerr.NotCoordinator.Code
		return r
	}
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = id
		if g.isStreams() {
			lg.ProtocolType = "streams"
			lg.GroupState = g.consumer.stateName()
			lg.GroupType = "streams"
		} else if g.consumer != nil {
			lg.ProtocolType = "consumer"
			lg.GroupState = g.consumer.stateName()
			lg.GroupType = "consumer"
		} else {
			lg.ProtocolType = g.protocolType
			lg.GroupState = g.state.String()
			lg.GroupType = "classic"
		}
		if !match(req.StatesFilter, lg.GroupState) || !match(req.TypesFilter, lg.GroupType) {
			continue
		}
		r.Groups = append(r.Groups, lg)
	}
	return r
}

// DeleteGroups handles DeleteGroups (v0-v2): only groups without members can be deleted;
// their offsets and metadata are tombstoned.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrDeleteGroupsResponse()
	r.Version = req.Version
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		g := c.groups[id]
		switch {
		case c.notCoordinator(id):
			dg.ErrorCode = kerr.NotCoordinator.Code
		case !validGroupID(id):
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil || (g.consumer == nil && g.state == stateDead):
			dg.ErrorCode = kerr.GroupIDNotFound.Code
		case !g.isEmpty() || (g.consumer == nil && g.state != stateEmpty):
			dg.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			recs := make([]record, 0, len(g.offsets)+len(g.cgRecords)+1)
			for tp := range g.offsets {
				recs = append(recs, record{key: offsetCommitKey(id, tp.topic, tp.partition)})
			}
			// Undecided transactional commits go too (their tombstones drop them on
			// replay), so that a later commit marker does not revive the group.
			pending := c.pendingTxnPartitions(id)
			for _, tp := range pending {
				if _, ok := g.offsets[tp]; !ok {
					recs = append(recs, record{key: offsetCommitKey(id, tp.topic, tp.partition)})
				}
			}
			recs = append(recs, consumerTombstones(g)...)
			recs = append(recs, record{key: groupMetadataKey(id)})
			if err := c.persist(id, recs...); err != nil {
				dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
				break
			}
			for _, tp := range pending {
				c.dropPendingTxnOffsets(id, tp)
			}
			forgetConsumerRecords(g)
			c.dropGroup(g)
		}
		r.Groups = append(r.Groups, dg)
	}
	return r
}

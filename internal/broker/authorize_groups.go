// Authorization of the group APIs, as Apache Kafka's KafkaApis checks them:
//
//   - JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat:
//     READ on the group, else GROUP_AUTHORIZATION_FAILED (ConsumerGroupHeartbeat
//     also needs DESCRIBE on every subscribed topic name, else
//     TOPIC_AUTHORIZATION_FAILED);
//   - OffsetCommit: READ on the group (else every partition
//     GROUP_AUTHORIZATION_FAILED), READ on each topic (else its partitions
//     TOPIC_AUTHORIZATION_FAILED, the others committed);
//   - OffsetFetch: DESCRIBE on the group, DESCRIBE on each topic (named
//     partitions: TOPIC_AUTHORIZATION_FAILED; all offsets: the topics the
//     principal may not describe are left out);
//   - OffsetDelete: DELETE on the group, READ on each topic;
//   - DescribeGroups, ConsumerGroupDescribe: DESCRIBE on each group, and the
//     authorized-operations field when asked;
//   - ListGroups: DESCRIBE on the cluster lists all, else the groups the
//     principal may describe;
//   - DeleteGroups: DELETE on each group.
//
// The coordinator is only called with what is allowed: a denied request
// changes nothing.

package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

// groupDenied reports whether op on group is denied.
func (b *Broker) groupDenied(r *wire.Request, op authz.Operation, group string) bool {
	return !b.allowed(r, op, authz.ResourceGroup, group)
}

// groupReadDenied answers the classic group membership APIs (and
// ConsumerGroupHeartbeat) with GROUP_AUTHORIZATION_FAILED when READ on the
// group is denied; nil when allowed.
func (b *Broker) groupReadDenied(r *wire.Request, req kmsg.Request) kmsg.Response {
	if b.authz == nil {
		return nil
	}
	code := kerr.GroupAuthorizationFailed.Code
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		if b.groupDenied(r, authz.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation = code, -1
			return resp
		}
	case *kmsg.SyncGroupRequest:
		if b.groupDenied(r, authz.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = code
			return resp
		}
	case *kmsg.HeartbeatRequest:
		if b.groupDenied(r, authz.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = code
			return resp
		}
	case *kmsg.LeaveGroupRequest:
		if b.groupDenied(r, authz.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = code
			return resp
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if b.groupDenied(r, authz.OpRead, req.Group) {
			resp.ErrorCode = code
			return resp
		}
		if len(b.deniedTopics(r, authz.OpDescribe, req.SubscribedTopicNames)) > 0 {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("The group has subscribed to topics which are not authorized.")
			return resp
		}
	}
	return nil
}

func (b *Broker) offsetCommitAuthorized(r *wire.Request, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	if b.authz == nil {
		return b.groups.OffsetCommit(req)
	}
	fill := func(resp *kmsg.OffsetCommitResponse, t kmsg.OffsetCommitRequestTopic, code int16) {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if b.groupDenied(r, authz.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			fill(resp, t, kerr.GroupAuthorizationFailed.Code)
		}
		return resp
	}
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	denied := b.deniedTopics(r, authz.OpRead, names)
	if len(denied) == 0 {
		return b.groups.OffsetCommit(req)
	}
	sub := *req
	sub.Topics = nil
	for _, t := range req.Topics {
		if !denied[t.Topic] {
			sub.Topics = append(sub.Topics, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if len(sub.Topics) > 0 {
		resp = b.groups.OffsetCommit(&sub)
	}
	for _, t := range req.Topics {
		if denied[t.Topic] {
			fill(resp, t, kerr.TopicAuthorizationFailed.Code)
		}
	}
	return resp
}

func (b *Broker) offsetFetchAuthorized(r *wire.Request, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	if b.authz == nil {
		return b.groups.OffsetFetch(req)
	}
	if req.Version < 8 {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if b.groupDenied(r, authz.OpDescribe, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp
		}
		if req.Topics == nil { // all offsets: drop what may not be described
			resp = b.groups.OffsetFetch(req)
			kept := resp.Topics[:0]
			for _, t := range resp.Topics {
				if b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, t.Topic) {
					kept = append(kept, t)
				}
			}
			resp.Topics = kept
			return resp
		}
		names := make([]string, len(req.Topics))
		for i, t := range req.Topics {
			names[i] = t.Topic
		}
		denied := b.deniedTopics(r, authz.OpDescribe, names)
		sub := *req
		sub.Topics = []kmsg.OffsetFetchRequestTopic{}
		for _, t := range req.Topics {
			if !denied[t.Topic] {
				sub.Topics = append(sub.Topics, t)
			}
		}
		if len(sub.Topics) > 0 {
			resp = b.groups.OffsetFetch(&sub)
		}
		for _, t := range req.Topics {
			if !denied[t.Topic] {
				continue
			}
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}

	// v8+: several groups, each checked on its own.
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	sub := *req
	sub.Groups = nil
	var deniedGroups []string
	deniedTopics := map[string]map[string]bool{} // group → denied topic names
	for _, g := range req.Groups {
		if b.groupDenied(r, authz.OpDescribe, g.Group) {
			deniedGroups = append(deniedGroups, g.Group)
			continue
		}
		if g.Topics == nil {
			sub.Groups = append(sub.Groups, g)
			continue
		}
		names := make([]string, len(g.Topics))
		for i, t := range g.Topics {
			names[i] = t.Topic
		}
		denied := b.deniedTopics(r, authz.OpDescribe, names)
		deniedTopics[g.Group] = denied
		sg := g
		sg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, t := range g.Topics {
			if !denied[t.Topic] {
				sg.Topics = append(sg.Topics, t)
			}
		}
		sub.Groups = append(sub.Groups, sg)
	}
	if len(sub.Groups) > 0 {
		resp = b.groups.OffsetFetch(&sub)
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		denied, named := deniedTopics[g.Group]
		if !named { // all offsets of the group
			kept := g.Topics[:0]
			for _, t := range g.Topics {
				if b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, t.Topic) {
					kept = append(kept, t)
				}
			}
			g.Topics = kept
			continue
		}
		for _, rg := range req.Groups {
			if rg.Group != g.Group {
				continue
			}
			for _, t := range rg.Topics {
				if !denied[t.Topic] {
					continue
				}
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
			break
		}
	}
	for _, name := range deniedGroups {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (b *Broker) offsetDeleteAuthorized(r *wire.Request, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	if b.authz == nil {
		return b.groups.OffsetDelete(req)
	}
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if b.groupDenied(r, authz.OpDelete, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	denied := b.deniedTopics(r, authz.OpRead, names)
	sub := *req
	sub.Topics = nil
	for _, t := range req.Topics {
		if !denied[t.Topic] {
			sub.Topics = append(sub.Topics, t)
		}
	}
	if len(sub.Topics) > 0 || len(req.Topics) == 0 {
		resp = b.groups.OffsetDelete(&sub)
	}
	for _, t := range req.Topics {
		if !denied[t.Topic] {
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) describeGroupsAuthorized(r *wire.Request, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	if b.authz == nil {
		return b.groups.DescribeGroups(req)
	}
	sub := *req
	sub.Groups = nil
	var denied []string
	for _, g := range req.Groups {
		if b.groupDenied(r, authz.OpDescribe, g) {
			denied = append(denied, g)
		} else {
			sub.Groups = append(sub.Groups, g)
		}
	}
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	if len(sub.Groups) > 0 {
		resp = b.groups.DescribeGroups(&sub)
	}
	for i := range resp.Groups {
		if req.IncludeAuthorizedOperations {
			resp.Groups[i].AuthorizedOperations = b.authorizedOps(r, authz.ResourceGroup, resp.Groups[i].Group)
		}
	}
	for _, g := range denied {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (b *Broker) consumerGroupDescribeAuthorized(r *wire.Request, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	if b.authz == nil {
		return b.groups.ConsumerGroupDescribe(req)
	}
	sub := *req
	sub.Groups = nil
	var denied []string
	for _, g := range req.Groups {
		if b.groupDenied(r, authz.OpDescribe, g) {
			denied = append(denied, g)
		} else {
			sub.Groups = append(sub.Groups, g)
		}
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	if len(sub.Groups) > 0 {
		resp = b.groups.ConsumerGroupDescribe(&sub)
	}
	for i := range resp.Groups {
		if req.IncludeAuthorizedOperations {
			resp.Groups[i].AuthorizedOperations = b.authorizedOps(r, authz.ResourceGroup, resp.Groups[i].Group)
		}
	}
	for _, g := range denied {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		rg.ErrorMessage = kmsg.StringPtr("Group authorization failed.")
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (b *Broker) listGroupsAuthorized(r *wire.Request, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := b.groups.ListGroups(req)
	if b.authz == nil || b.allowedQuiet(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName) {
		return resp
	}
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if b.allowedQuiet(r, authz.OpDescribe, authz.ResourceGroup, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	return resp
}

func (b *Broker) deleteGroupsAuthorized(r *wire.Request, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	if b.authz == nil {
		return b.groups.DeleteGroups(req)
	}
	sub := *req
	sub.Groups = nil
	var denied []string
	for _, g := range req.Groups {
		if b.groupDenied(r, authz.OpDelete, g) {
			denied = append(denied, g)
		} else {
			sub.Groups = append(sub.Groups, g)
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	if len(sub.Groups) > 0 {
		resp = b.groups.DeleteGroups(&sub)
	}
	for _, g := range denied {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// coordinatorKeyDenied is FindCoordinator's check: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED) or on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); 0 when allowed.
func (b *Broker) coordinatorKeyDenied(r *wire.Request, keyType int8, key string) int16 {
	switch {
	case b.authz == nil:
	case keyType == 0 && !b.allowed(r, authz.OpDescribe, authz.ResourceGroup, key):
		return kerr.GroupAuthorizationFailed.Code
	case keyType == 1 && !b.allowed(r, authz.OpDescribe, authz.ResourceTransactionalID, key):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case keyType == 2 && !b.allowedCluster(r, authz.OpClusterAction):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

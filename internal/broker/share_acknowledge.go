// ShareAcknowledge (key 79), v1–v2: acknowledgements of records a share-group member
// acquired with ShareFetch: ACCEPT (1), RELEASE (2, delivered again unless the delivery
// count limit is reached), REJECT (3, archived), GAP (0, no record at the offset) and,
// from v2 with IsRenewAck, RENEW (4, the acquisition lock starts again). The request
// continues (the next epoch) or closes (-1) the member's share session; epoch 0 is
// INVALID_SHARE_SESSION_EPOCH. Acknowledgements are written to __share_group_state
// before the response. Authorization as ShareFetch: READ on the group and on each topic.
package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ShareAcknowledge, (*Broker).handleShareAcknowledge) }

func (b *Broker) handleShareAcknowledge(_ context.Context, r *wire.Request, req *kmsg.ShareAcknowledgeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := derefStr(req.GroupID), derefStr(req.MemberID)
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(b.shares.GroupConfig(group).RecordLockDuration / time.Millisecond)
	}
	fail := func(e *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	switch {
	case group == "":
		return fail(kerr.InvalidRequest, "GroupId must be set.")
	case member == "":
		return fail(kerr.InvalidRequest, "MemberId must be set.")
	case req.ShareSessionEpoch == 0 || req.ShareSessionEpoch < -1:
		return fail(kerr.InvalidShareSessionEpoch, "")
	case b.authz != nil && b.groupDenied(r, authz.OpRead, group):
		return fail(kerr.GroupAuthorizationFailed, "")
	}
	if _, code := b.shares.Session(group, member, req.ShareSessionEpoch, nil, nil); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	renew := req.Version >= 2 && req.IsRenewAck
	for _, rt := range req.Topics {
		at := kmsg.NewShareAcknowledgeResponseTopic()
		at.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			t := b.resolveShareTarget(r, group, rt.TopicID, rp.Partition)
			t.acks = shareAckBatches(rp.AcknowledgementBatches, func(a kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
				return a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
			})
			b.applyShareAcks(t, member, renew)
			ap := kmsg.NewShareAcknowledgeResponseTopicPartition()
			ap.Partition = rp.Partition
			ap.ErrorCode, ap.ErrorMessage = t.ackCode, t.ackMsg
			if t.code != 0 {
				ap.ErrorCode = t.code
			}
			ap.CurrentLeader.LeaderID, ap.CurrentLeader.LeaderEpoch = -1, -1
			if t.part != nil {
				ap.CurrentLeader.LeaderID, ap.CurrentLeader.LeaderEpoch = b.nodeID, t.part.LeaderEpoch()
			}
			at.Partitions = append(at.Partitions, ap)
		}
		resp.Topics = append(resp.Topics, at)
	}
	if req.ShareSessionEpoch == -1 {
		b.shares.CloseSession(group, member)
	}
	return resp, nil
}

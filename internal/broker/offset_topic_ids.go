package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

// OffsetCommit v10 and OffsetFetch v10 (Kafka 4.4, KIP-848): topics are named
// by topic id instead of name. The ids are resolved to names here
// (topic_ids.go) and the request goes the v9 way (authorization, the group
// coordinator); the answer names its topics by id again. A topic id the
// broker does not know is UNKNOWN_TOPIC_ID for each of its partitions, as
// Kafka answers it.

// topicIDVersion is the first version of both APIs that names topics by id.
const topicIDVersion = 10

func offsetCommitReqRef(t *kmsg.OffsetCommitRequestTopic) (*[16]byte, *string) {
	return &t.TopicID, &t.Topic
}

func offsetCommitRespRef(t *kmsg.OffsetCommitResponseTopic) (*[16]byte, *string) {
	return &t.TopicID, &t.Topic
}

func (b *Broker) offsetCommitByID(r *wire.Request, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	sub := *req
	sub.Version = topicIDVersion - 1
	var unknown []kmsg.OffsetCommitResponseTopic
	sub.Topics, unknown = resolveTopicIDs(b, req.Topics, offsetCommitReqRef, func(t *kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	resp := b.offsetCommitAuthorized(r, &sub)
	resp.Version = req.Version
	resp.Topics = append(fillTopicIDs(b, resp.Topics, offsetCommitRespRef, false), unknown...)
	return resp
}

func offsetFetchReqRef(t *kmsg.OffsetFetchRequestGroupTopic) (*[16]byte, *string) {
	return &t.TopicID, &t.Topic
}

func offsetFetchRespRef(t *kmsg.OffsetFetchResponseGroupTopic) (*[16]byte, *string) {
	return &t.TopicID, &t.Topic
}

func (b *Broker) offsetFetchByID(r *wire.Request, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	sub := *req
	sub.Version = topicIDVersion - 1
	sub.Groups = make([]kmsg.OffsetFetchRequestGroup, len(req.Groups))
	unknown := make([][]kmsg.OffsetFetchResponseGroupTopic, len(req.Groups))
	for gi, g := range req.Groups {
		sg := g
		if g.Topics != nil {
			sg.Topics, unknown[gi] = resolveTopicIDs(b, g.Topics, offsetFetchReqRef, func(t *kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroupTopic {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.TopicID = t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				return rt
			})
			if sg.Topics == nil {
				sg.Topics = []kmsg.OffsetFetchRequestGroupTopic{} // named topics, none known: not "all topics"
			}
		}
		sub.Groups[gi] = sg
	}
	resp := b.offsetFetchAuthorized(r, &sub)
	resp.Version = req.Version
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		// A topic with no id to name it by is left out: its offsets go with
		// the deleted topic.
		g.Topics = fillTopicIDs(b, g.Topics, offsetFetchRespRef, true)
		for ri, rg := range req.Groups {
			if rg.Group == g.Group {
				g.Topics = append(g.Topics, unknown[ri]...)
			}
		}
	}
	return resp
}

// txnOffsetTopicIDVersion is TxnOffsetCommit's first version naming topics by
// id (KIP-1319); below it v5's transaction-version-2 rules apply, and so they
// do from it.
const txnOffsetTopicIDVersion = 6

func txnOffsetReqRef(t *kmsg.TxnOffsetCommitRequestTopic) (*[16]byte, *string) {
	return &t.TopicID, &t.Topic
}

func txnOffsetRespRef(t *kmsg.TxnOffsetCommitResponseTopic) (*[16]byte, *string) {
	return &t.TopicID, &t.Topic
}

func (b *Broker) txnOffsetCommitByID(ctx context.Context, r *wire.Request, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	sub := *req
	sub.Version = txnOffsetTopicIDVersion - 1
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	sub.Topics, unknown = resolveTopicIDs(b, req.Topics, txnOffsetReqRef, func(t *kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	raw, err := b.handleTxnOffsetCommit(ctx, r, &sub)
	if err != nil || raw == nil {
		return raw, err
	}
	resp := raw.(*kmsg.TxnOffsetCommitResponse)
	resp.Version = req.Version
	resp.Topics = append(fillTopicIDs(b, resp.Topics, txnOffsetRespRef, false), unknown...)
	return resp, nil
}

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

// OffsetCommit v10 and OffsetFetch v10 (Kafka 4.4, KIP-848): topics are named
// by topic id instead of name. The ids are resolved to names here and the
// request goes the v9 way (authorization, the group coordinator); the answer
// names its topics by id again. A topic id the broker does not know is
// UNKNOWN_TOPIC_ID for each of its partitions, as Kafka answers it.

// topicIDVersion is the first version of both APIs that names topics by id.
const topicIDVersion = 10

func (b *Broker) offsetCommitByID(r *wire.Request, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	sub := *req
	sub.Version = topicIDVersion - 1
	sub.Topics = nil
	var unknown []kmsg.OffsetCommitResponseTopic
	for _, t := range req.Topics {
		if tp, ok := b.topicByID(t.TopicID); ok {
			t.Topic = tp.Name
			sub.Topics = append(sub.Topics, t)
			continue
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		unknown = append(unknown, rt)
	}
	resp := b.offsetCommitAuthorized(r, &sub)
	resp.Version = req.Version
	for i := range resp.Topics {
		if tp, ok := b.topics.Get(resp.Topics[i].Topic); ok {
			resp.Topics[i].TopicID = [16]byte(tp.ID)
		}
	}
	resp.Topics = append(resp.Topics, unknown...)
	return resp
}

func (b *Broker) offsetFetchByID(r *wire.Request, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	sub := *req
	sub.Version = topicIDVersion - 1
	sub.Groups = make([]kmsg.OffsetFetchRequestGroup, len(req.Groups))
	unknown := make([][]kmsg.OffsetFetchResponseGroupTopic, len(req.Groups))
	for gi, g := range req.Groups {
		sg := g
		if g.Topics != nil {
			sg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, t := range g.Topics {
			if tp, ok := b.topicByID(t.TopicID); ok {
				t.Topic = tp.Name
				sg.Topics = append(sg.Topics, t)
				continue
			}
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			unknown[gi] = append(unknown[gi], rt)
		}
		sub.Groups[gi] = sg
	}
	resp := b.offsetFetchAuthorized(r, &sub)
	resp.Version = req.Version
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			tp, ok := b.topics.Get(t.Topic)
			if !ok {
				continue // no id to name it by: its offsets go with the deleted topic
			}
			t.TopicID = [16]byte(tp.ID)
			kept = append(kept, t)
		}
		g.Topics = kept
		for ri, rg := range req.Groups {
			if rg.Group == g.Group && ri < len(unknown) {
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

func (b *Broker) txnOffsetCommitByID(ctx context.Context, r *wire.Request, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	sub := *req
	sub.Version = txnOffsetTopicIDVersion - 1
	sub.Topics = nil
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	for _, t := range req.Topics {
		if tp, ok := b.topicByID(t.TopicID); ok {
			t.Topic = tp.Name
			sub.Topics = append(sub.Topics, t)
			continue
		}
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		unknown = append(unknown, rt)
	}
	raw, err := b.handleTxnOffsetCommit(ctx, r, &sub)
	if err != nil || raw == nil {
		return raw, err
	}
	resp := raw.(*kmsg.TxnOffsetCommitResponse)
	resp.Version = req.Version
	for i := range resp.Topics {
		if tp, ok := b.topics.Get(resp.Topics[i].Topic); ok {
			resp.Topics[i].TopicID = [16]byte(tp.ID)
		}
	}
	resp.Topics = append(resp.Topics, unknown...)
	return resp, nil
}

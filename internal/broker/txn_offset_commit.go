// TxnOffsetCommit (key 28), v0–v6 (v6 names topics by id, KIP-1319,
// offset_topic_ids.go): a transactional producer commits a
// group's offsets as part of its transaction (sendOffsetsToTransaction).
// With v5 (transaction version 2, KIP-890 part 2) the group's
// __consumer_offsets partition joins the producer's transaction here (no
// AddOffsetsToTxn), starting it if none is ongoing, and its markers wait
// until the offsets are written. Below v5
// the coordinator first checks that the group's __consumer_offsets partition
// was added to the producer's ongoing transaction (AddOffsetsToTxn; as
// Kafka's transaction verification does: INVALID_PRODUCER_ID_MAPPING,
// INVALID_PRODUCER_EPOCH for a fenced producer, CONCURRENT_TRANSACTIONS while
// it completes, INVALID_TXN_STATE when not added), then validates the group
// and member as Kafka does for transactional commits (v3+ carries the member
// and generation), and writes the offsets to __consumer_offsets as a
// transactional batch of the producer. They take effect when EndTxn's commit
// marker reaches that partition and are dropped on abort; meanwhile OffsetFetch
// with require_stable answers UNSTABLE_OFFSET_COMMIT for them.
package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/txn"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.TxnOffsetCommit, (*Broker).handleTxnOffsetCommit) }

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *wire.Request, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	if req.Version >= txnOffsetTopicIDVersion {
		return b.txnOffsetCommitByID(ctx, r, req) // offset_topic_ids.go
	}
	// Authorization as Kafka: WRITE on the transactional id, READ on the
	// group (else every partition fails with that error), READ on each topic
	// (else its partitions TOPIC_AUTHORIZATION_FAILED, the others committed).
	var denied map[string]bool
	if b.authz != nil {
		code := int16(0)
		if !b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, req.TransactionalID) {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		} else if !b.allowed(r, authz.OpRead, authz.ResourceGroup, req.Group) {
			code = kerr.GroupAuthorizationFailed.Code
		}
		if code == 0 {
			names := make([]string, len(req.Topics))
			for i, t := range req.Topics {
				names[i] = t.Topic
			}
			denied = b.deniedTopics(r, authz.OpRead, names)
		}
		if code != 0 || len(denied) > 0 {
			resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			sub := *req
			sub.Topics = nil
			for _, t := range req.Topics {
				if code == 0 && !denied[t.Topic] {
					sub.Topics = append(sub.Topics, t)
				}
			}
			if len(sub.Topics) > 0 {
				resp = b.txnOffsetCommit(&sub)
			}
			for _, t := range req.Topics {
				if code == 0 && !denied[t.Topic] {
					continue
				}
				c := code
				if c == 0 {
					c = kerr.TopicAuthorizationFailed.Code
				}
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, c
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
	}
	return b.txnOffsetCommit(req), nil
}

func (b *Broker) txnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	release := func() {}
	verify := func() int16 {
		tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, b.groups.Partitions())}
		if c := b.cluster; c != nil && !c.coordinatesTxn(req.TransactionalID) {
			// The transactional id's coordinator is another broker: it
			// admits the commit (and holds its markers until it is
			// written), as for a transactional produce (cluster_txn.go).
			rel, err := c.beginRemoteTxnProduce(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp.Topic, tp.Partition, req.Version >= 5)
			if err != nil {
				code := errorCode(err)
				switch code {
				case kerr.ProducerFenced.Code:
					code = kerr.InvalidProducerEpoch.Code
				case kerr.NotEnoughReplicas.Code:
					code = kerr.CoordinatorLoadInProgress.Code // retriable for TxnOffsetCommit in every client
				}
				return code
			}
			release = rel
			return 0
		}
		if req.Version >= 5 {
			// Transaction version 2: the group's partition joins the
			// transaction here (no AddOffsetsToTxn), and its markers wait
			// until the offsets are written.
			rel, code := b.txns.BeginProduceAdd(req.ProducerID, req.ProducerEpoch, tp)
			if code == kerr.NotEnoughReplicas.Code {
				code = kerr.CoordinatorLoadInProgress.Code // retriable for TxnOffsetCommit
			}
			if code == 0 {
				release = rel
			}
			return code
		}
		code := b.txns.Verify(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp)
		if code == kerr.ProducerFenced.Code {
			code = kerr.InvalidProducerEpoch.Code
		}
		return code
	}
	resp := b.groups.TxnOffsetCommit(req, verify)
	release()
	return resp
}

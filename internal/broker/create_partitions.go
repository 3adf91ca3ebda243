// CreatePartitions (key 37), v0–v3: increases a topic's partition count. New
// partition logs are created first (rolled back on failure), then the
// metadata is updated.
//
// Errors per topic: unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count not
// larger than the current one INVALID_PARTITIONS; an assignment whose length
// is not the number of new partitions, or naming another node,
// INVALID_REPLICA_ASSIGNMENT; a topic listed twice INVALID_REQUEST.
// validate_only checks and changes nothing.
//
// Differences from Kafka: at most 10000 partitions per topic.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.CreatePartitions, (*Broker).handleCreatePartitions) }

func (b *Broker) handleCreatePartitions(_ context.Context, r *wire.Request, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	mq := b.mutationQuota(r, req.Version >= 3, req.ValidateOnly) // client_quotas_enforce.go
	defer mq.finish(resp)
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	// On a cluster node the topics that pass their checks grow together,
	// in one metadata entry (cluster_admin_batch.go).
	errs := make([]error, len(req.Topics))
	var todo []partitionsChange
	var todoIdx []int
	for i := range req.Topics {
		rt := &req.Topics[i]
		var err error
		if count[rt.Topic] > 1 {
			err = errorf(kerr.InvalidRequest, "Duplicate topic in request.")
		} else if !b.allowed(r, authz.OpAlter, authz.ResourceTopic, rt.Topic) {
			err = errTopicAuth
		} else if t, ok := b.topics.Get(rt.Topic); ok {
			err = mq.admit(int(rt.Count - t.Partitions))
		}
		if err == nil && b.cluster != nil {
			if err = b.checkCreatePartitions(rt); err == nil && !req.ValidateOnly {
				pc := partitionsChange{name: rt.Topic, count: rt.Count}
				for _, a := range rt.Assignment {
					pc.assign = append(pc.assign, a.Replicas)
				}
				todo = append(todo, pc)
				todoIdx = append(todoIdx, i)
			}
		} else if err == nil {
			err = b.createPartitionsOne(rt, req.ValidateOnly)
		}
		errs[i] = err
	}
	if len(todo) > 0 {
		for k, err := range b.cluster.addPartitionsBatch(todo) {
			errs[todoIdx[k]] = err
		}
	}
	for i, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if err := errs[i]; err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) createPartitionsOne(rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	if err := b.checkCreatePartitions(rt); err != nil || validateOnly {
		return err
	}
	t, _ := b.topics.Get(rt.Topic)
	return b.addPartitions(t, rt.Count)
}

// checkCreatePartitions validates one topic of a CreatePartitions. Caller
// holds adminMu.
func (b *Broker) checkCreatePartitions(rt *kmsg.CreatePartitionsRequestTopic) error {
	t, ok := b.topics.Get(rt.Topic)
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	switch {
	case rt.Count < t.Partitions:
		return errorf(kerr.InvalidPartitions, "Topic currently has %d partitions, which is higher than the requested %d.", t.Partitions, rt.Count)
	case rt.Count == t.Partitions:
		return errorf(kerr.InvalidPartitions, "Topic already has %d partitions.", t.Partitions)
	case rt.Count > maxPartitionsPerTopic:
		return errorf(kerr.InvalidPartitions, "Number of partitions %d exceeds this broker's limit of %d per topic.", rt.Count, maxPartitionsPerTopic)
	}
	if rt.Assignment != nil {
		if want := int(rt.Count - t.Partitions); len(rt.Assignment) != want {
			return errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", want, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			if err := b.checkReplicas(a.Replicas); err != nil {
				return err
			}
		}
	}
	return nil
}

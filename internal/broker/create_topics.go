// CreateTopics (key 19), v2–v7: creates topics with all their partition logs,
// or nothing (see Broker.createTopic).
//
// Checks, in Kafka's order, each failing only that topic: a name listed twice
// (INVALID_REQUEST), an illegal name or one colliding with an existing topic
// by '.'/'_' (INVALID_TOPIC_EXCEPTION), an internal topic name
// (INVALID_REQUEST), an existing topic (TOPIC_ALREADY_EXISTS), partitions
// (-1 → num.partitions; 0 or < -1 → INVALID_PARTITIONS), replication factor
// (-1 → default.replication.factor; anything but 1 → INVALID_REPLICATION_FACTOR
// on a single node), manual replica assignments (must name only this node,
// partitions 0..n-1 → else INVALID_REPLICA_ASSIGNMENT; with an assignment the
// counts must be -1 → else INVALID_REQUEST), and every config against the
// config table (INVALID_CONFIG naming the config). validate_only runs all of
// that and creates nothing. v5+ successful results carry the resolved configs.
//
// Differences from Kafka: at most 10000 partitions per topic
// (INVALID_PARTITIONS); timeout_ms is ignored because creation is synchronous.

package broker

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.CreateTopics, (*Broker).handleCreateTopics) }

func (b *Broker) handleCreateTopics(_ context.Context, r *wire.Request, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	counts := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		counts[t.Topic]++
	}
	mq := b.mutationQuota(r, req.Version >= 6, req.ValidateOnly) // client_quotas_enforce.go
	defer mq.finish(resp)
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	// Every topic is checked first; the ones to create are then created
	// together (one metadata entry on a cluster node, create_topics_batch.go).
	type item struct {
		t   *topics.Topic
		err error
	}
	items := make([]item, len(req.Topics))
	var todo []*topicCreation
	var todoIdx []int
	pendingNames := map[string]string{} // unified name → a topic of this request being created
	for i := range req.Topics {
		rt := &req.Topics[i]
		if counts[rt.Topic] > 1 {
			items[i].err = errorf(kerr.InvalidRequest, "Found multiple entries for topic '%s' in the request.", rt.Topic)
			continue
		}
		if err := b.createTopicDenied(r, rt.Topic); err != nil { // authorize_admin.go
			items[i].err = err
			continue
		}
		if err := mq.admit(b.partitionsToCreate(rt)); err != nil {
			items[i].err = err
			continue
		}
		tc, err := b.checkCreate(rt)
		if err == nil && topics.HasCollisionChars(rt.Topic) {
			if other, ok := pendingNames[topics.UnifyCollisionChars(rt.Topic)]; ok {
				err = errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", rt.Topic, other)
			}
		}
		switch {
		case err != nil:
			items[i].err = err
		case req.ValidateOnly:
			items[i].t = &topics.Topic{Name: tc.name, Partitions: tc.partitions, Configs: tc.overrides}
		default:
			pendingNames[topics.UnifyCollisionChars(rt.Topic)] = rt.Topic
			todo = append(todo, tc)
			todoIdx = append(todoIdx, i)
		}
	}
	created, errs := b.createTopics(todo)
	for k, i := range todoIdx {
		items[i] = item{created[k], errs[k]}
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		t, err := items[i].t, items[i].err
		if err != nil {
			setCreateErr(&st, err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions = t.Partitions
		st.ReplicationFactor = int16(max(len(b.partitionInfo(t.Name, 0).Replicas), 1))
		if req.ValidateOnly {
			st.ReplicationFactor = validatedRF(rt, b.cfg.DefaultReplicationFactor)
		}
		if req.Version >= 5 && !b.allowedQuiet(r, authz.OpDescribeConfigs, authz.ResourceTopic, t.Name) {
			st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if req.Version >= 5 {
			for _, v := range b.conf().ResolveTopic(t.Configs) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name = v.Name
				if !v.Null && !v.Def.Sensitive {
					c.Value = kmsg.StringPtr(v.Value)
				}
				c.ReadOnly = v.Def.ReadOnly
				c.Source = v.Source
				c.IsSensitive = v.Def.Sensitive
				st.Configs = append(st.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func setCreateErr(st *kmsg.CreateTopicsResponseTopic, err error) {
	st.ErrorCode = errorCode(err)
	st.ErrorMessage = errorMessage(err)
}

// checkCreate validates the creation of one topic and resolves what to
// create. Caller holds adminMu.
func (b *Broker) checkCreate(rt *kmsg.CreateTopicsRequestTopic) (*topicCreation, error) {
	name := rt.Topic
	if err := b.checkNewTopicName(name); err != nil {
		return nil, err
	}
	if topics.IsInternal(name) {
		return nil, errorf(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", name)
	}
	partitions := rt.NumPartitions
	rf := rt.ReplicationFactor
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return nil, errorf(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		seen := make(map[int32]bool, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			if a.Partition < 0 || a.Partition >= int32(len(rt.ReplicaAssignment)) || seen[a.Partition] {
				return nil, errorf(kerr.InvalidReplicaAssignment, "Partitions should be a consecutive 0-based integer sequence, but got partition %d.", a.Partition)
			}
			seen[a.Partition] = true
			if err := b.checkReplicas(a.Replicas); err != nil {
				return nil, err
			}
		}
		partitions = int32(len(rt.ReplicaAssignment))
	} else {
		switch {
		case partitions == -1:
			partitions = b.cfg.NumPartitions
		case partitions <= 0:
			return nil, errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if rf == -1 {
			rf = b.cfg.DefaultReplicationFactor
		}
		switch {
		case rf <= 0:
			return nil, errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		case int(rf) > len(b.liveBrokers(nil)):
			return nil, errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(b.liveBrokers(nil)))
		}
	}
	if partitions > maxPartitionsPerTopic {
		return nil, errorf(kerr.InvalidPartitions, "Number of partitions %d exceeds this broker's limit of %d per topic.", partitions, maxPartitionsPerTopic)
	}

	overrides := make(map[string]*string, len(rt.Configs))
	for _, c := range rt.Configs {
		if _, dup := overrides[c.Name]; dup {
			return nil, errorf(kerr.InvalidRequest, "Duplicate config %s in the request.", c.Name)
		}
		overrides[c.Name] = c.Value
	}
	plain, cfg, err := b.validateTopicConfigs(overrides)
	if err != nil {
		return nil, err
	}
	var assign [][]int32
	if len(rt.ReplicaAssignment) > 0 {
		assign = make([][]int32, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			assign[a.Partition] = a.Replicas
		}
	}
	return &topicCreation{name: name, partitions: partitions, rf: rf, overrides: plain, cfg: cfg, assign: assign}, nil
}

// checkReplicas accepts a manual assignment of live brokers, each named
// once. Until partitions replicate, it must be a single broker: this one.
// validatedRF is the replication factor a validate-only creation reports.
func validatedRF(rt *kmsg.CreateTopicsRequestTopic, def int16) int16 {
	switch {
	case len(rt.ReplicaAssignment) > 0:
		return int16(len(rt.ReplicaAssignment[0].Replicas))
	case rt.ReplicationFactor == -1:
		return def
	}
	return rt.ReplicationFactor
}

func (b *Broker) checkReplicas(replicas []int32) error {
	if len(replicas) == 0 {
		return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	for i, r := range replicas {
		if !b.isLiveBroker(r) {
			return errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		if slices.Contains(replicas[:i], r) {
			return &Error{Code: kerr.InvalidReplicaAssignment.Code, Msg: fmt.Sprintf("The manual partition assignment includes a duplicate replica: %v.", replicas)}
		}
	}
	return nil
}

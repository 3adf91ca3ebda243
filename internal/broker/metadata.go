// Metadata (key 3), v0–v13 (v13: a top-level ErrorCode, always NONE here): brokers (just this node), cluster id, controller
// (this node) and topics with their partitions. Every partition is led by
// this node with leader epoch 0, replicas = ISR = [this node].
//
// Topics can be requested by name or (v10+) by topic id. A missing topic is
// created when auto.create.topics.enable is true and the request allows it
// (allow_auto_topic_creation, v4+; always allowed before v4), with
// num.partitions partitions and no overrides; names starting with "__" are
// never auto-created. Illegal names get INVALID_TOPIC_EXCEPTION, unknown ones
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when asked by id).
//
// Differences from Kafka: an auto-created topic is created synchronously and
// returned with its partitions in the same response (Kafka answers
// LEADER_NOT_AVAILABLE and the client retries). Kafka only honours topic ids
// in v12+ requests; Sluice resolves them from v10 on.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.Metadata, (*Broker).handleMetadata) }

// Authorized-operation bit sets reported when a client asks for them without
// an authorizer: everything is allowed (as Kafka without one). With one, the
// fields hold what the principal may do (metadataTopicOps).
const (
	allTopicOps = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	// The cluster resource's operations (CREATE, CLUSTER_ACTION,
	// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE);
	// CREATE_TOKENS and DESCRIBE_TOKENS belong to the user resource, and
	// kafka-python cannot even decode them.
	allClusterOps   = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	notRequestedOps = -2147483648
)

func (b *Broker) handleMetadata(_ context.Context, r *wire.Request, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, cb := range b.liveBrokers(r) {
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = cb.id, cb.host, cb.port, cb.rack
		resp.Brokers = append(resp.Brokers, br)
	}
	clusterID := b.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = b.controllerID()
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = allClusterOps
		if b.authz != nil { // authorize.go
			resp.AuthorizedOperations = 0
			if b.allowedQuiet(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName) {
				resp.AuthorizedOperations = b.authorizedOps(r, authz.ResourceCluster, authz.ClusterName)
			}
		}
	}
	defer b.metadataTopicOps(r, req, resp)

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range b.topics.List() {
			if !b.allowedQuiet(r, authz.OpDescribe, authz.ResourceTopic, t.Name) {
				continue // only the topics the principal may describe
			}
			resp.Topics = append(resp.Topics, b.topicMetadata(req, t))
		}
		return resp, nil
	}

	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	seen := make(map[string]bool, len(req.Topics))
	seenID := make(map[topics.ID]bool)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			id := topics.ID(rt.TopicID)
			if seenID[id] {
				continue
			}
			seenID[id] = true
			t, ok := b.topics.ByID(id)
			if id.IsZero() || !ok || req.Version < 10 {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			if !b.allowed(r, authz.OpDescribe, authz.ResourceTopic, t.Name) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, b.topicMetadata(req, t))
			continue
		}
		name := *rt.Topic
		if seen[name] {
			continue
		}
		seen[name] = true
		t, ok := b.topics.Get(name)
		if code := b.metadataTopicDenied(r, name, ok, autoCreate); code != 0 {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			mt.ErrorCode = code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !ok {
			t, ok = b.maybeAutoCreate(name, autoCreate)
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if topics.ValidateName(name) != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.topicMetadata(req, t))
	}
	return resp, nil
}

// maybeAutoCreate creates name with broker defaults if allowed and legal.
func (b *Broker) maybeAutoCreate(name string, allowed bool) (*topics.Topic, bool) {
	if !allowed || topics.ValidateName(name) != nil || len(name) >= 2 && name[:2] == "__" {
		return nil, false
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if t, ok := b.topics.Get(name); ok { // created meanwhile
		return t, true
	}
	if b.checkNewTopicName(name) != nil {
		return nil, false
	}
	cfg, err := b.logConfig(nil)
	if err != nil {
		b.logger.Error("auto-create: broker topic defaults do not resolve", "topic", name, "err", err)
		return nil, false
	}
	t, err := b.createTopic(name, b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor, map[string]string{}, cfg, nil)
	if err != nil {
		b.logger.Warn("auto-create failed", "topic", name, "err", err)
		return nil, false
	}
	return t, true
}

func (b *Broker) topicMetadata(req *kmsg.MetadataRequest, t *topics.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = topics.IsInternal(t.Name)
	if req.IncludeTopicAuthorizedOperations {
		mt.AuthorizedOperations = allTopicOps
	} else {
		mt.AuthorizedOperations = notRequestedOps
	}
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, t.Partitions)
	for p := range mt.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(p)
		pi := b.partitionInfo(t.Name, int32(p))
		mp.Leader, mp.LeaderEpoch = pi.Leader, pi.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = pi.Replicas, pi.ISR, pi.Offline
		if pi.Leader == replica.NoLeader {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions[p] = mp
	}
	return mt
}

// metadataTopicDenied applies Kafka's Metadata checks to a topic requested
// by name: DESCRIBE on it, else TOPIC_AUTHORIZATION_FAILED (whether it
// exists or not); a missing topic that would be auto-created also needs
// CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) metadataTopicDenied(r *wire.Request, name string, exists, autoCreate bool) int16 {
	if b.authz == nil {
		return 0
	}
	if !b.allowed(r, authz.OpDescribe, authz.ResourceTopic, name) {
		return kerr.TopicAuthorizationFailed.Code
	}
	if !exists && autoCreate && topics.ValidateName(name) == nil &&
		!b.allowedQuiet(r, authz.OpCreate, authz.ResourceCluster, authz.ClusterName) &&
		!b.allowed(r, authz.OpCreate, authz.ResourceTopic, name) {
		return kerr.TopicAuthorizationFailed.Code
	}
	return 0
}

// metadataTopicOps fills the topics' authorized-operations fields with what
// the principal may do when asked for and an authorizer is configured.
func (b *Broker) metadataTopicOps(r *wire.Request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if b.authz == nil || !req.IncludeTopicAuthorizedOperations {
		return
	}
	for i := range resp.Topics {
		if mt := &resp.Topics[i]; mt.ErrorCode == 0 && mt.Topic != nil {
			mt.AuthorizedOperations = b.authorizedOps(r, authz.ResourceTopic, *mt.Topic)
		}
	}
}

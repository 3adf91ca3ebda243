// StreamsGroupHeartbeat (key 88) and StreamsGroupDescribe (key 89), v0–v1 (the
// versions Apache Kafka 4.4 serves): the Kafka Streams rebalance protocol
// (KIP-1071, `group.protocol=streams`). The member joins with its topology;
// the coordinator resolves it against the topics, creates the missing
// internal topics (repartition and changelog topics, with the partition
// counts the topology implies) before answering, reports missing source
// topics (MISSING_SOURCE_TOPICS), internal topics it could not create
// (MISSING_INTERNAL_TOPICS) and copartitioned topics that disagree
// (INCORRECTLY_PARTITIONED_TOPICS) as statuses, and assigns active tasks with a
// sticky, balanced assignor (internal/group/streams_group.go). Streams
// groups appear in ListGroups (type "streams"), DeleteGroups, OffsetCommit
// and OffsetFetch (member epochs checked as for consumer groups). With
// streams.version finalized at 0 (UpdateFeatures) the heartbeat answers
// UNSUPPORTED_VERSION. With an authorizer: READ on the group and DESCRIBE on
// the source topics; internal topics are created only with CREATE on them
// (or on the cluster).
//
// Standby replicas of stateful tasks: group.streams.num.standby.replicas
// (default 0). The group configs streams.num.standby.replicas,
// streams.session.timeout.ms, streams.heartbeat.interval.ms,
// streams.task.offset.interval.ms, streams.acceptable.recovery.lag,
// streams.initial.rebalance.delay.ms, streams.assignment.interval.ms and
// streams.rack.aware.assignment.tags override the broker's settings for one
// group (streams_group_configs.go). No warm-up
// tasks are assigned, as by Kafka 4.4's sticky task assignor. Streams groups
// are written to __consumer_offsets (internal/group/streams_persist.go).
//
// Topology descriptions (KIP-1331, v1 of both): a v1 heartbeat answer asks
// for the description when the coordinator has none of the group's topology
// epoch (TopologyDescriptionRequired), the member pushes it with
// StreamsGroupTopologyDescriptionUpdate (streams_topology_description.go),
// and StreamsGroupDescribe v1 returns it with IncludeTopologyDescription, and
// the assignor name ("sticky").
//
// Task offsets and end offsets reported by members are kept, described and
// used for standby placement (internal/group/streams_task_offsets.go); the
// group configs of internal/group/streams_assignment_configs.go delay
// assignments (ASSIGNMENT_DELAYED) and spread standbys over client tags.
//
// Differences from Kafka: Kafka keeps topology descriptions only with a group.streams.topology.description.plugin.class
// configured (without one, StreamsGroupTopologyDescriptionUpdate answers UNSUPPORTED_VERSION
// and describe NOT_STORED), Sluice always, in __consumer_offsets under a record type of its own.
package broker

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/features"
	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.StreamsGroupHeartbeat, (*Broker).handleStreamsGroupHeartbeat)
	register(kmsg.StreamsGroupDescribe, (*Broker).handleStreamsGroupDescribe)
}

func (b *Broker) handleStreamsGroupHeartbeat(_ context.Context, r *wire.Request, req *kmsg.StreamsGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if b.featureLevel(features.StreamsVersion) < 1 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = kmsg.StringPtr("The streams group protocol is disabled (streams.version is 0).")
		return resp, nil
	}
	subs := b.groups.StreamsTopology(req.Group)
	if req.Topology != nil {
		subs = req.Topology.Subtopologies
	}
	if b.authz != nil {
		if b.groupDenied(r, authz.OpRead, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		var sources []string
		for _, s := range subs {
			sources = append(sources, s.SourceTopics...)
		}
		if len(b.deniedTopics(r, authz.OpDescribe, sources)) > 0 {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("The group has source topics which are not authorized.")
			return resp, nil
		}
	}
	if len(subs) > 0 {
		b.createStreamsInternalTopics(r, req.Group, subs)
	}
	return b.groups.StreamsGroupHeartbeat(groupClient(r), req), nil
}

// createStreamsInternalTopics creates the internal topics of a topology
// that do not exist yet and whose partition counts are known (a failure is
// logged; the heartbeat then reports MISSING_INTERNAL_TOPICS).
func (b *Broker) createStreamsInternalTopics(r *wire.Request, groupID string, subs []group.StreamsSubtopology) {
	plan := group.ResolveStreamsTopology(subs, groupTopics{b})
	for _, it := range plan.Internal {
		if _, ok := b.topics.Get(it.Name); ok {
			continue
		}
		if b.authz != nil && b.createTopicDenied(r, it.Name) != nil {
			continue
		}
		if err := b.createStreamsTopic(it); err != nil {
			b.logger.Warn("streams group: cannot create internal topic", "group", groupID, "topic", it.Name, "err", err)
			continue
		}
		b.logger.Info("streams group: created internal topic", "group", groupID, "topic", it.Name, "partitions", it.Partitions)
	}
}

func (b *Broker) createStreamsTopic(it group.StreamsInternalTopic) error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if _, ok := b.topics.Get(it.Name); ok {
		return nil
	}
	if err := b.checkNewTopicName(it.Name); err != nil {
		return err
	}
	overrides := make(map[string]*string, len(it.Configs))
	for k, v := range it.Configs {
		overrides[k] = &v
	}
	plain, cfg, err := b.validateTopicConfigs(overrides)
	if err != nil {
		return err
	}
	rf := it.ReplicationFactor
	if rf <= 0 {
		rf = b.cfg.DefaultReplicationFactor
	}
	_, err = b.createTopic(it.Name, it.Partitions, rf, plain, cfg, nil)
	return err
}

func (b *Broker) handleStreamsGroupDescribe(_ context.Context, r *wire.Request, req *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, error) {
	var allowed []string
	var denied []string
	for _, g := range req.Groups {
		if b.authz != nil && b.groupDenied(r, authz.OpDescribe, g) {
			denied = append(denied, g)
		} else {
			allowed = append(allowed, g)
		}
	}
	sub := *req
	sub.Groups = allowed
	resp := b.groups.StreamsGroupDescribe(&sub)
	for _, g := range denied {
		dg := kmsg.NewStreamsGroupDescribeResponseGroup()
		dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		dg.AuthorizedOperations = -2147483648
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// rawMs reads a millisecond (or plain count) config from the raw properties
// (0: unset, the coordinator's default applies).
func rawMs(raw map[string]string, name string) time.Duration {
	v, err := strconv.ParseInt(strings.TrimSpace(raw[name]), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return time.Duration(v) * time.Millisecond
}

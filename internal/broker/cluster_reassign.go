package broker

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/controller"
)

// Partition reassignment on a cluster node: AlterPartitionReassignments
// sends each partition's target (or its cancellation) to the active
// controller (internal/controller/reassign.go) and answers once the change
// is published here; ListPartitionReassignments answers from this node's
// metadata image.

// reassignCluster asks the controller to reassign one partition (nil
// replicas: cancel its reassignment); allowRF false refuses a target that
// changes the replication factor.
func (c *clusterNode) reassignCluster(topic string, partition int32, replicas []int32, allowRF bool) *Error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	req := controller.ReassignRequest{Topic: topic, Partition: partition, Replicas: replicas, Cancel: replicas == nil,
		KeepReplicationFactor: !allowRF}
	var resp controller.ReassignResponse
	if err := callController(ctx, c, "reassign", c.ctrl.Reassign, req, &resp); err != nil {
		return asBrokerError(err).(*Error)
	}
	if resp.Code != 0 {
		return &Error{Code: resp.Code, Msg: resp.Message}
	}
	if resp.Offset > 0 {
		if err := c.waitPublished(ctx, resp.Offset); err != nil {
			return asBrokerError(err).(*Error)
		}
	}
	return nil
}

// listReassignmentsCluster fills resp with the partitions being reassigned
// (of the named topics and partitions, or all when topics is nil).
func (b *Broker) listReassignmentsCluster(topics []kmsg.ListPartitionReassignmentsRequestTopic, resp *kmsg.ListPartitionReassignmentsResponse) {
	im := b.image()
	add := func(name string, p int32) *kmsg.ListPartitionReassignmentsResponseTopicPartition {
		t, ok := im.Topics[name]
		if !ok || p < 0 || int(p) >= len(t.Partitions) || !t.Partitions[p].Reassigning() {
			return nil
		}
		ip := t.Partitions[p]
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = p
		rp.Replicas = slices.Clone(ip.Replicas)
		rp.AddingReplicas = append([]int32{}, ip.AddingReplicas...)
		rp.RemovingReplicas = append([]int32{}, ip.RemovingReplicas...)
		return &rp
	}
	emit := func(name string, parts []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = name
		for _, p := range parts {
			if rp := add(name, p); rp != nil {
				rt.Partitions = append(rt.Partitions, *rp)
			}
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if topics == nil {
		for _, t := range im.SortedTopics() {
			parts := make([]int32, len(t.Partitions))
			for i := range parts {
				parts[i] = int32(i)
			}
			emit(t.Name, parts)
		}
		return
	}
	for _, t := range topics {
		emit(t.Topic, t.Partitions)
	}
}

// registerReplicationHandlers serves the controller's replication requests
// (reassignment) to the other nodes.
func (c *clusterNode) registerReplicationHandlers() {
	handle(c.srv, "reassign", c.ctrl.Reassign)
	handle(c.srv, "unregister-broker", c.ctrl.Unregister)
}

// uncleanDefault is unclean.leader.election.enable of server.properties.
func uncleanDefault(cfg *config.Broker) bool {
	return strings.EqualFold(strings.TrimSpace(cfg.Raw["unclean.leader.election.enable"]), "true")
}

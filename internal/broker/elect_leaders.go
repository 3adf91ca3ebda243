// ElectLeaders (key 43), v0–v2.
//
// This node leads every partition and is every partition's only (so
// preferred) replica, so no election is ever needed. Answered as Apache
// Kafka's controller answers for partitions that already have their
// preferred leader (preferred elections) or any leader (unclean elections):
//
//   - each named partition gets ELECTION_NOT_NEEDED (84), or
//     UNKNOWN_TOPIC_OR_PARTITION with a message when the topic or partition
//     does not exist; a partition whose log is not open here (it has no
//     leader) gets PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE;
//   - null topics ("all partitions") lists every topic with only the
//     partitions that did not answer ELECTION_NOT_NEEDED — normally none, so
//     every topic with an empty partition list, as Kafka does;
//   - an election type other than 0 (preferred) or 1 (unclean), v1+, gets
//     INVALID_REQUEST at the top level and for every named partition.
//
// Nothing changes; timeout_ms has nothing to wait for.
//
// On a cluster node the active controller elects: PREFERRED gives the
// partition to its first replica when that is a live in-sync replica
// (ELECTION_NOT_NEEDED if it leads, PREFERRED_LEADER_NOT_AVAILABLE if it
// cannot); UNCLEAN, for a partition without a live leader, elects the first
// live in-sync replica, else the first live replica as its leader and sole
// in-sync replica, logged loudly (records only the old in-sync set had are
// lost), whatever unclean.leader.election.enable says, as Kafka's tool
// does. With unclean.leader.election.enable=true the controller does the
// latter by itself (internal/controller/unclean.go).

package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ElectLeaders, (*Broker).handleElectLeaders) }

const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

func (b *Broker) handleElectLeaders(_ context.Context, r *wire.Request, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !b.allowedCluster(r, authz.OpAlter) { // Kafka: ALTER on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	electionType := req.ElectionType
	if req.Version < 1 {
		electionType = electionPreferred
	}
	if electionType != electionPreferred && electionType != electionUnclean {
		msg := fmt.Sprintf("Unknown election type %d", electionType)
		resp.ErrorCode = kerr.InvalidRequest.Code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}

	// Every partition is decided first, then answered (on a cluster node in
	// one controller call, one metadata entry: cluster_admin_batch.go).
	var slots []electSlot
	all := req.Topics == nil
	if all {
		for _, t := range b.topics.List() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Name
			resp.Topics = append(resp.Topics, rt)
			for p := int32(0); p < t.Partitions; p++ {
				slots = append(slots, electSlot{topic: len(resp.Topics) - 1, name: t.Name, partition: p})
			}
		}
	} else {
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			resp.Topics = append(resp.Topics, rt)
			for _, p := range t.Partitions {
				slots = append(slots, electSlot{topic: len(resp.Topics) - 1, name: t.Topic, partition: p})
			}
		}
	}
	b.electLeaders(slots, electionType)
	for _, sl := range slots {
		if all && sl.rp.ErrorCode == kerr.ElectionNotNeeded.Code {
			continue
		}
		resp.Topics[sl.topic].Partitions = append(resp.Topics[sl.topic].Partitions, sl.rp)
	}
	return resp, nil
}

// electSlot is one partition of an ElectLeaders and its answer.
type electSlot struct {
	topic     int // index in the response's topics
	name      string
	partition int32
	rp        kmsg.ElectLeadersResponseTopicPartition
}

// electLeaders answers every slot: on a cluster node with one controller
// call, else (or with a controller of an earlier release) one by one.
func (b *Broker) electLeaders(slots []electSlot, electionType int8) {
	if c := b.cluster; c != nil && len(slots) > 0 {
		req := controller.ElectLeadersRequest{Partitions: make([]controller.ElectRequest, len(slots))}
		for i, sl := range slots {
			req.Partitions[i] = controller.ElectRequest{Topic: sl.name, Partition: sl.partition, Unclean: electionType == electionUnclean}
		}
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		var resp controller.ElectLeadersResponse
		err := callController(ctx, c, "elect-leaders", c.ctrl.ElectLeaders, req, &resp)
		if err == nil && len(resp.Results) != len(slots) {
			err = errorf(kerr.UnknownServerError, "the controller answered %d results for %d partitions", len(resp.Results), len(slots))
		}
		if !errors.Is(err, errNoBatchMethod) {
			for i := range slots {
				sl := &slots[i]
				sl.rp = kmsg.NewElectLeadersResponseTopicPartition()
				sl.rp.Partition = sl.partition
				if err != nil {
					berr := asBrokerError(err)
					sl.rp.ErrorCode, sl.rp.ErrorMessage = errorCode(berr), errorMessage(berr)
					continue
				}
				c.electAnswer(&sl.rp, sl.name, resp.Results[i])
			}
			return
		}
	}
	for i := range slots {
		slots[i].rp = b.electLeader(slots[i].name, slots[i].partition, electionType)
	}
}

// electAnswer fills rp from the controller's answer for topic's partition.
func (c *clusterNode) electAnswer(rp *kmsg.ElectLeadersResponseTopicPartition, topic string, resp controller.ElectResponse) {
	rp.ErrorCode = resp.Code
	if resp.Message != "" {
		rp.ErrorMessage = kmsg.StringPtr(resp.Message)
	} else if resp.Code == kerr.UnknownTopicOrPartition.Code {
		// Kafka's messages, as a single node gives them.
		if _, ok := c.store.Image().Topics[topic]; !ok {
			rp.ErrorMessage = kmsg.StringPtr("No such topic as " + topic)
		} else {
			rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("No such partition as %s-%d", topic, rp.Partition))
		}
	}
}

// electLeader answers one partition.
func (b *Broker) electLeader(topic string, partition int32, electionType int8) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition = partition
	if c := b.cluster; c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		var resp controller.ElectResponse
		err := callController(ctx, c, "elect-leader", c.ctrl.ElectLeader,
			controller.ElectRequest{Topic: topic, Partition: partition, Unclean: electionType == electionUnclean}, &resp)
		if err != nil {
			err = asBrokerError(err)
			rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			return rp
		}
		c.electAnswer(&rp, topic, resp)
		return rp
	}
	t, ok := b.topics.Get(topic)
	switch {
	case !ok:
		rp.ErrorCode, rp.ErrorMessage = kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr("No such topic as "+topic)
	case partition < 0 || partition >= t.Partitions:
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("No such partition as %s-%d", topic, partition))
	case b.replicas.Get(topic, partition) == nil && electionType == electionPreferred:
		rp.ErrorCode = kerr.PreferredLeaderNotAvailable.Code
	case b.replicas.Get(topic, partition) == nil:
		rp.ErrorCode = kerr.EligibleLeadersNotAvailable.Code
	default:
		rp.ErrorCode = kerr.ElectionNotNeeded.Code
	}
	return rp
}

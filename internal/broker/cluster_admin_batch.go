package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/topics"
)

// The topics of one CreateTopics, DeleteTopics or CreatePartitions request
// are checked by the broker one by one (each failing alone, in Kafka's
// order) and the ones that pass go to the active controller in one call,
// which commits them as one metadata entry (internal/controller/batch.go).
// The single-node path changes them one by one.
//
// A controller of an earlier release has no batched methods (it answers
// "unknown-method"): the broker then sends the topics one by one, as that
// release did (a rolling upgrade).

// topicCreation is one checked topic of a CreateTopics.
type topicCreation struct {
	name       string
	partitions int32
	rf         int16
	overrides  map[string]string
	cfg        log.Config
	assign     [][]int32
}

// errNoBatchMethod: the controller is of a release without the batched
// methods.
var errNoBatchMethod = errors.New("the active controller has no batched topic methods")

// batchMethods are the controller methods that callController does not
// retry when the controller does not know them (errNoBatchMethod).
var batchMethods = map[string]bool{"create-topics": true, "delete-topics": true, "create-partitions-batch": true, "elect-leaders": true}

// unknownBatchMethod reports whether err is the quorum leader's answer that
// it does not know the batched method (a controller of an earlier release).
func unknownBatchMethod(method string, err error) bool {
	var re *peer.RemoteError
	return batchMethods[method] && errors.As(err, &re) && re.Code == "unknown-method"
}

// createTopics creates checked topics; created[i] or errs[i] is the outcome
// of todo[i]. Caller holds adminMu.
func (b *Broker) createTopics(todo []*topicCreation) (created []*topics.Topic, errs []error) {
	created, errs = make([]*topics.Topic, len(todo)), make([]error, len(todo))
	if len(todo) == 0 {
		return created, errs
	}
	if b.cluster != nil {
		if b.cluster.createTopicsBatch(todo, created, errs) {
			return created, errs
		}
	}
	for i, tc := range todo {
		created[i], errs[i] = b.createTopic(tc.name, tc.partitions, tc.rf, tc.overrides, tc.cfg, tc.assign)
	}
	return created, errs
}

// decideTopics sends a batched topic change to the active controller and
// waits until this broker has published it. ok is false when the
// controller has no batched methods (send the topics one by one).
func decideTopics[Req any](c *clusterNode, method string, local func(context.Context, Req) (controller.TopicsResponse, error), req Req, n int) (resp controller.TopicsResponse, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := callController(ctx, c, method, local, req, &resp); err != nil {
		if errors.Is(err, errNoBatchMethod) {
			return resp, false, nil
		}
		return resp, true, asBrokerError(err)
	}
	if len(resp.Results) != n {
		return resp, true, errorf(kerr.UnknownServerError, "the controller answered %d results for %d topics", len(resp.Results), n)
	}
	if resp.Offset > 0 {
		if err := c.waitPublished(ctx, resp.Offset); err != nil {
			return resp, true, asBrokerError(err)
		}
	}
	return resp, true, nil
}

// itemErr is a batched result's error as the broker's.
func itemErr(e *controller.ItemError) error {
	if e == nil {
		return nil
	}
	return asBrokerError(e.Err())
}

// createTopicsBatch is createTopics on a cluster node; false when the
// controller has no batched methods.
func (c *clusterNode) createTopicsBatch(todo []*topicCreation, created []*topics.Topic, errs []error) bool {
	req := controller.CreateTopicsRequest{Topics: make([]controller.CreateTopicRequest, len(todo))}
	for i, tc := range todo {
		rf := tc.rf
		if rf <= 0 {
			rf = 1
		}
		req.Topics[i] = controller.CreateTopicRequest{Name: tc.name, Partitions: tc.partitions,
			ReplicationFactor: rf, Assignments: tc.assign, Configs: tc.overrides}
	}
	resp, ok, err := decideTopics(c, "create-topics", c.ctrl.CreateTopics, req, len(todo))
	if !ok {
		return false
	}
	for i, tc := range todo {
		if err != nil {
			errs[i] = err
			continue
		}
		res := resp.Results[i]
		if errs[i] = itemErr(res.Error); errs[i] != nil {
			continue
		}
		t, ok := c.b.topics.Get(tc.name)
		if !ok || t.ID != topics.ID(res.TopicID) {
			errs[i] = errorf(kerr.UnknownServerError, "topic %s was created but is not in this broker's metadata", tc.name)
			continue
		}
		created[i] = t
		c.b.logger.Info("topic created", "topic", tc.name, "topic_id", t.ID.String(), "partitions", tc.partitions, "configs", tc.overrides)
	}
	return true
}

// deleteTopicsBatch deletes checked topics on a cluster node; errs[i] is
// the outcome of names[i] (publish then removes the data, cluster_purge.go).
// Caller holds adminMu.
func (c *clusterNode) deleteTopicsBatch(names []string) []error {
	errs := make([]error, len(names))
	resp, ok, err := decideTopics(c, "delete-topics", c.ctrl.DeleteTopics, controller.DeleteTopicsRequest{Names: names}, len(names))
	for i, name := range names {
		switch {
		case !ok:
			errs[i] = c.deleteTopic(name)
		case err != nil:
			errs[i] = err
		default:
			errs[i] = itemErr(resp.Results[i].Error)
		}
	}
	return errs
}

// partitionsChange is one checked topic of a CreatePartitions.
type partitionsChange struct {
	name  string
	count int32
	// assign holds the replicas of each new partition (nil: placed by the
	// controller).
	assign [][]int32
}

// addPartitionsBatch grows checked topics on a cluster node; errs[i] is the
// outcome of todo[i]. Caller holds adminMu.
func (c *clusterNode) addPartitionsBatch(todo []partitionsChange) []error {
	errs := make([]error, len(todo))
	req := controller.CreatePartitionsBatchRequest{Topics: make([]controller.CreatePartitionsRequest, len(todo))}
	for i, pc := range todo {
		req.Topics[i] = controller.CreatePartitionsRequest{Name: pc.name, Count: pc.count, Assignments: pc.assign}
	}
	resp, ok, err := decideTopics(c, "create-partitions-batch", c.ctrl.CreatePartitionsBatch, req, len(todo))
	for i, pc := range todo {
		switch {
		case !ok:
			errs[i] = c.addPartitions(pc.name, pc.count)
		case err != nil:
			errs[i] = err
		default:
			errs[i] = itemErr(resp.Results[i].Error)
		}
	}
	return errs
}

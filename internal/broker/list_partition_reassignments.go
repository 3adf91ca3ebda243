// ListPartitionReassignments (key 46), v0.
//
// A single node has nothing to move replicas to, so no reassignment is ever
// in progress: the answer is always an empty topic list with no error,
// whether all reassignments are asked for (null topics) or some topics are
// named. Apache Kafka, too, answers named topics that are unknown or not
// reassigning by leaving them out rather than with an error.
// On a cluster node the partitions being reassigned are listed from the
// metadata image: replicas, adding and removing replicas, as Kafka.
// AlterPartitionReassignments is in alter_partition_reassignments.go.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() {
	register(kmsg.ListPartitionReassignments, (*Broker).handleListPartitionReassignments)
}

func (b *Broker) handleListPartitionReassignments(_ context.Context, r *wire.Request, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !b.allowedCluster(r, authz.OpDescribe) { // Kafka: DESCRIBE on the cluster
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(clusterAuthMessage)
		return resp, nil
	}
	if b.cluster != nil {
		b.listReassignmentsCluster(req.Topics, resp)
	}
	return resp, nil
}

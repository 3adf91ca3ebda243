// AlterReplicaLogDirs (key 34), v1–v2 (Apache Kafka 4's range): moves
// replicas of this node between its log directories (kafka-reassign-partitions
// with "log_dirs" in the reassignment file).
//
// A Sluice node has one log directory, its data directory (the one
// DescribeLogDirs lists). Each partition is answered as Kafka's broker answers
// it, in Kafka's order of checks: a topic name too long for Kafka's
// "<topic>-<partition>.<id>-future" directory name is INVALID_TOPIC_EXCEPTION;
// a destination that is not a configured log directory (the absolute path,
// compared exactly) is LOG_DIR_NOT_FOUND; an unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION; a partition this node holds no replica of is
// REPLICA_NOT_AVAILABLE; a replica already in the destination (always the
// case here) is left where it is, with no error. The request needs ALTER on
// the cluster (else CLUSTER_AUTHORIZATION_FAILED for every partition).
package broker

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.AlterReplicaLogDirs, (*Broker).handleAlterReplicaLogDirs) }

// futureDirNameExtra is what Kafka's future replica directory name adds to
// "<topic>-<partition>": "." and a 32-digit id, then "-future".
const futureDirNameExtra = 1 + 32 + len("-future")

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, r *wire.Request, req *kmsg.AlterReplicaLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)

	// The request is a map from partition to destination, as Kafka reads it:
	// a partition named twice is answered once, for the last destination.
	type tp struct {
		topic string
		part  int32
	}
	dest := map[tp]string{}
	var order []tp
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, seen := dest[k]; !seen {
					order = append(order, k)
				}
				dest[k] = d.Dir
			}
		}
	}

	allowed := b.allowedCluster(r, authz.OpAlter) // Kafka: ALTER on the cluster
	errFor := func(k tp) int16 {
		if !allowed {
			return kerr.ClusterAuthorizationFailed.Code
		}
		if len(k.topic)+1+len(strconv.Itoa(int(k.part)))+futureDirNameExtra > 255 {
			return kerr.InvalidTopicException.Code
		}
		if dest[k] != b.dataDir {
			return kerr.LogDirNotFound.Code
		}
		t, ok := b.topics.Get(k.topic)
		if !ok || k.part < 0 || k.part >= t.Partitions {
			return kerr.UnknownTopicOrPartition.Code
		}
		if b.logs.Get(k.topic, k.part) == nil {
			return kerr.ReplicaNotAvailable.Code
		}
		return 0 // already in the destination directory
	}

	index := map[string]int{}
	for _, k := range order {
		i, ok := index[k.topic]
		if !ok {
			i = len(resp.Topics)
			index[k.topic] = i
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = k.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition = k.part
		rp.ErrorCode = errFor(k)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// Authorization of the admin APIs, as Apache Kafka's KafkaApis checks them
// (see also the handlers, which call these helpers):
//
//   - CreateTopics: CREATE on the cluster or on the topic, else
//     TOPIC_AUTHORIZATION_FAILED; the configs in the answer need
//     DESCRIBE_CONFIGS on the topic (else its config error code is
//     TOPIC_AUTHORIZATION_FAILED);
//   - DeleteTopics: DELETE; CreatePartitions: ALTER; DeleteRecords: DELETE;
//   - DescribeConfigs / AlterConfigs / IncrementalAlterConfigs:
//     DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
//     the group (GROUP_AUTHORIZATION_FAILED) or the cluster for broker and
//     broker-logger resources (CLUSTER_AUTHORIZATION_FAILED);
//   - the cluster-wide APIs (DescribeLogDirs, AlterReplicaLogDirs, ElectLeaders,
//     partition reassignments, client quotas, SCRAM credentials): DESCRIBE or ALTER
//     (DESCRIBE_CONFIGS or ALTER_CONFIGS for quotas) on the cluster;
//     ListConfigResources: DESCRIBE_CONFIGS on the cluster.

package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/wire"
)

// errTopicAuth is TOPIC_AUTHORIZATION_FAILED with Kafka's message.
var errTopicAuth = &Error{Code: kerr.TopicAuthorizationFailed.Code, Msg: "Topic authorization failed."}

// createTopicDenied is CreateTopics' check for one topic.
func (b *Broker) createTopicDenied(r *wire.Request, name string) error {
	if b.authz == nil || b.allowedQuiet(r, authz.OpCreate, authz.ResourceCluster, authz.ClusterName) ||
		b.allowed(r, authz.OpCreate, authz.ResourceTopic, name) {
		return nil
	}
	return errTopicAuth
}

// Config resource types not named elsewhere (Kafka's ConfigResource.Type).
const (
	resourceClientMetrics = int8(16)
	resourceGroup         = int8(32)
)

// configResourceDenied is the DescribeConfigs / AlterConfigs check of one
// config resource; nil when allowed (or for a type the handler refuses
// anyway).
func (b *Broker) configResourceDenied(r *wire.Request, op authz.Operation, typ int8, name string) error {
	if b.authz == nil {
		return nil
	}
	switch typ {
	case resourceTopic:
		if !b.allowed(r, op, authz.ResourceTopic, name) {
			return errTopicAuth
		}
	case resourceBroker, resourceBrokerLogger, resourceClientMetrics:
		if !b.allowedCluster(r, op) {
			return errClusterAuth
		}
	case resourceGroup:
		if !b.allowed(r, op, authz.ResourceGroup, name) {
			return &Error{Code: kerr.GroupAuthorizationFailed.Code, Msg: "Group authorization failed."}
		}
	}
	return nil
}

// errClusterAuth is CLUSTER_AUTHORIZATION_FAILED with Kafka's message.
var errClusterAuth = &Error{Code: kerr.ClusterAuthorizationFailed.Code, Msg: clusterAuthMessage}

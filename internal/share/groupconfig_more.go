package share

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The other group configs of Kafka 4.4's GroupConfig: the consumer-group
// (KIP-848) ones, which the group coordinator reads
// (internal/group/consumer_configs.go), the rest of the share-group ones
// (delivery count limit and record-lock limit honoured by the share
// partitions, the renew acknowledgement switch by ShareFetch and
// ShareAcknowledge), the assignor-offload switches (Kafka's coordinator
// threading; accepted and described) and the dead-letter queue of share
// groups (KIP-1191).
const (
	CfgConsumerSessionTimeout     = "consumer.session.timeout.ms"
	CfgConsumerHeartbeatInterval  = "consumer.heartbeat.interval.ms"
	CfgConsumerAssignmentInterval = "consumer.assignment.interval.ms"
	CfgConsumerAssignorOffload    = "consumer.assignor.offload.enable"

	CfgDeliveryCountLimit       = "share.delivery.count.limit"
	CfgPartitionMaxRecordLocks  = "share.partition.max.record.locks"
	CfgRenewAcknowledgeEnable   = "share.renew.acknowledge.enable"
	CfgShareAssignmentInterval  = "share.assignment.interval.ms"
	CfgShareAssignorOffload     = "share.assignor.offload.enable"
	CfgStreamsAssignorOffload   = "streams.assignor.offload.enable"
	CfgDeadLetterQueueTopicName = "errors.deadletterqueue.topic.name"
	CfgDeadLetterQueueCopy      = "errors.deadletterqueue.copy.record.enable"
)

// moreGroupConfigNames are the names above.
var moreGroupConfigNames = []string{CfgConsumerSessionTimeout, CfgConsumerHeartbeatInterval, CfgConsumerAssignmentInterval,
	CfgConsumerAssignorOffload, CfgDeliveryCountLimit, CfgPartitionMaxRecordLocks, CfgRenewAcknowledgeEnable,
	CfgShareAssignmentInterval, CfgShareAssignorOffload, CfgStreamsAssignorOffload, CfgDeadLetterQueueTopicName,
	CfgDeadLetterQueueCopy}

func init() {
	GroupConfigNames = append(GroupConfigNames, moreGroupConfigNames...)
	slices.Sort(GroupConfigNames)
}

// GroupConfigIsBool reports whether a group config is a BOOLEAN.
func GroupConfigIsBool(name string) bool {
	return strings.HasSuffix(name, ".enable")
}

// ParseBool parses a BOOLEAN config value as Kafka does (true or false,
// any case, surrounding blanks ignored).
func ParseBool(value string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// validateMoreGroupConfig checks one value of the configs above against its
// type and the bounds of Kafka's GroupConfig definition (the broker's
// group.*.min/max bounds are checked by the broker); ok is false for a name
// that is not one of them.
func validateMoreGroupConfig(name, value string) (bool, error) {
	atLeast := func(min int64) error {
		n, perr := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if perr != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", value, name)
		}
		if n < min {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least %d", value, name, min)
		}
		return nil
	}
	switch name {
	case CfgConsumerSessionTimeout, CfgConsumerHeartbeatInterval:
		return true, atLeast(1)
	case CfgConsumerAssignmentInterval, CfgShareAssignmentInterval:
		return true, atLeast(0)
	case CfgDeliveryCountLimit:
		return true, atLeast(2)
	case CfgPartitionMaxRecordLocks:
		return true, atLeast(100)
	case CfgConsumerAssignorOffload, CfgRenewAcknowledgeEnable, CfgShareAssignorOffload, CfgStreamsAssignorOffload,
		CfgDeadLetterQueueCopy:
		if _, good := ParseBool(value); !good {
			return true, fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", value, name)
		}
		return true, nil
	case CfgDeadLetterQueueTopicName:
		if value != "" && strings.HasPrefix(value, "__") {
			return true, fmt.Errorf("%s: DLQ topic name must not start with '__'", name)
		}
		return true, nil
	}
	return false, nil
}

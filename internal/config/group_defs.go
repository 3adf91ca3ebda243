package config

// Broker settings that bound or default the group configs of Kafka 4.4's GROUP
// config resource (internal/share/groupconfig.go, internal/broker/group_config_bounds.go):
// a group config outside its broker bounds is INVALID_CONFIG, as in Kafka.

const effectAssignAtOnce = "accepted, no effect (Sluice assigns at the heartbeat that changes the group, as with 0)"

var groupBoundDefs = []Def{
	bdef("group.consumer.assignment.interval.ms", Int, ptr("1000"), vAtLeast(Int, 0), effectAssignAtOnce,
		`Least time between two assignments of a consumer group in Kafka (the consumer.assignment.interval.ms group config overrides it).`),
	bdef("group.consumer.min.assignment.interval.ms", Int, ptr("0"), vAtLeast(Int, 0), "",
		`Lower bound of a consumer group's consumer.assignment.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.consumer.max.assignment.interval.ms", Int, ptr("15000"), vAtLeast(Int, 0), "",
		`Upper bound of a consumer group's consumer.assignment.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.consumer.assignor.offload.enable", Boolean, ptr("true"), vBool(), effectAccepted,
		`Whether Kafka computes consumer-group assignments on a background thread (the consumer.assignor.offload.enable group config overrides it).`),
	bdef("group.share.min.session.timeout.ms", Int, ptr("45000"), vAtLeast(Int, 1), "",
		`Lower bound of a share group's share.session.timeout.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.max.session.timeout.ms", Int, ptr("60000"), vAtLeast(Int, 1), "",
		`Upper bound of a share group's share.session.timeout.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.min.heartbeat.interval.ms", Int, ptr("5000"), vAtLeast(Int, 1), "",
		`Lower bound of a share group's share.heartbeat.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.max.heartbeat.interval.ms", Int, ptr("15000"), vAtLeast(Int, 1), "",
		`Upper bound of a share group's share.heartbeat.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.min.record.lock.duration.ms", Int, ptr("15000"), vBetween(Int, 1000, 30000), "",
		`Lower bound of a share group's share.record.lock.duration.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.max.record.lock.duration.ms", Int, ptr("60000"), vBetween(Int, 30000, 3600000), "",
		`Upper bound of a share group's share.record.lock.duration.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.min.delivery.count.limit", Int, ptr("2"), vBetween(Int, 2, 5), "",
		`Lower bound of a share group's share.delivery.count.limit group config (else INVALID_CONFIG).`),
	bdef("group.share.max.delivery.count.limit", Int, ptr("10"), vBetween(Int, 5, 25), "",
		`Upper bound of a share group's share.delivery.count.limit group config (else INVALID_CONFIG).`),
	bdef("group.share.min.partition.max.record.locks", Int, ptr("100"), vBetween(Int, 100, 2000), "",
		`Lower bound of a share group's share.partition.max.record.locks group config (else INVALID_CONFIG).`),
	bdef("group.share.max.partition.max.record.locks", Int, ptr("4000"), vBetween(Int, 2000, 10000), "",
		`Upper bound of a share group's share.partition.max.record.locks group config (else INVALID_CONFIG).`),
	bdef("group.share.assignment.interval.ms", Int, ptr("1000"), vAtLeast(Int, 0), effectAssignAtOnce,
		`Least time between two assignments of a share group in Kafka (the share.assignment.interval.ms group config overrides it).`),
	bdef("group.share.min.assignment.interval.ms", Int, ptr("0"), vAtLeast(Int, 0), "",
		`Lower bound of a share group's share.assignment.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.max.assignment.interval.ms", Int, ptr("15000"), vAtLeast(Int, 0), "",
		`Upper bound of a share group's share.assignment.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.share.assignor.offload.enable", Boolean, ptr("true"), vBool(), effectAccepted,
		`Whether Kafka computes share-group assignments on a background thread (the share.assignor.offload.enable group config overrides it).`),
	bdef("group.streams.assignor.offload.enable", Boolean, ptr("true"), vBool(), effectAccepted,
		`Whether Kafka computes streams-group task assignments on a background thread (the streams.assignor.offload.enable group config overrides it).`),
	bdef("errors.deadletterqueue.auto.create.topics.enable", Boolean, ptr("false"), vBool(), "",
		`Whether a share group's dead-letter topic (the errors.deadletterqueue.topic.name group config) that does not exist is created when a record is first written to it (default partitions and replication factor, errors.deadletterqueue.group.enable=true, message.timestamp.type=CreateTime); else the record is not written.`),
	bdef("errors.deadletterqueue.topic.name.prefix", String, ptr("dlq."), rule{}, "",
		`The prefix a share group's dead-letter topic name must have ("" allows any name); records for a topic without it are not written.`),
}

// dlqTopicDefs are the topic configs of KIP-1191's dead-letter queues.
var dlqTopicDefs = []Def{
	{
		Name: "errors.deadletterqueue.group.enable", Type: Boolean, Default: ptr("false"), rule: vBool(),
		Doc: `Whether share groups may write their dead letters (records rejected by consumers or past the delivery count limit) to this topic (their errors.deadletterqueue.topic.name group config); false refuses them.`,
	},
}

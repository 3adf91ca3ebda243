package config

// Effect notes for broker configs.
const (
	effectAccepted     = "accepted, no effect"
	effectSingleNode   = "accepted, no effect (single node)"
	effectOneReplica   = "accepted; internal topics always get one replica (single node)"
	effectHousekeeping = "accepted; Sluice rolls and flushes in one housekeeping pass every second (retention: log.retention.check.interval.ms)"
)

const maxInt32 = "2147483647"

// bdef builds a broker def. Dynamic (ReadOnly=false) is the exception and is
// set by the caller.
func bdef(name string, t Type, dflt *string, r rule, effect, doc string) Def {
	return Def{Name: name, Type: t, Default: dflt, rule: r, ReadOnly: true, Effect: effect, Doc: doc}
}

// dynamic marks a broker def as changeable at runtime in Kafka (reported as
// read_only=false by DescribeConfigs).
func dynamic(d Def) Def { d.ReadOnly = false; return d }

func sensitive(d Def) Def { d.Sensitive = true; return d }

// brokerDefs is the table of broker-level configs Sluice accepts, in any
// order (BrokerDefs sorts). It holds every broker synonym of a topic config,
// the broker settings Sluice honours, and the Kafka 4.x names commonly found
// in server.properties files, which are accepted and marked as having no
// effect. Any other name is rejected.
var brokerDefs = []Def{
	// --- identity, storage, network -------------------------------------
	bdef("node.id", Int, ptr("1"), vAtLeast(Int, 0), "",
		`Id of this node. Kafka requires it; Sluice defaults to 1 so a bare start works.`),
	bdef("broker.id", Int, ptr("-1"), vAtLeast(Int, -1), "",
		`Older name for node.id. If only broker.id is set it is used as node.id; if both are set they must match.`),
	bdef("process.roles", List, ptr(""), vListIn(true, "broker", "controller"), "",
		`Roles of this node in a KRaft cluster: broker, controller, or both (combined mode; the default for a cluster node). `+
			`A node in controller.quorum.voters needs the controller role. A broker-only node follows the metadata quorum `+
			`without voting; a controller-only node serves no clients and is never a broker. See docs/cluster.md. `+
			`Without controller.quorum.voters or controller.quorum.bootstrap.servers Sluice is a single node and this is ignored.`),
	bdef("controller.quorum.voters", List, ptr(""), rule{}, "",
		`The metadata quorum's voters, id@host:port each (the host:port of that node's controller listener). `+
			`Set on every node of a cluster, identically; empty means a single-node broker. See docs/cluster.md.`),
	bdef("controller.quorum.bootstrap.servers", List, ptr(""), rule{}, "",
		`Controller listeners (host:port) of some quorum members (KIP-853). A node that is not among `+
			`controller.quorum.voters, or has none set, finds the quorum through them and joins it as an observer; `+
			`a node with the controller role can then be promoted to a voter (AddRaftVoter). Naming only this node's own `+
			`controller listener (Kafka's stock single-node file) runs a single node, as without it. See docs/cluster.md.`),
	bdef("controller.listener.names", List, nil, rule{}, "",
		`Listener names used by the controller. In a cluster, the first one's address in listeners is where this node `+
			`serves the quorum's and the controller's traffic (default: its own address in controller.quorum.voters); `+
			`it serves no client APIs.`),
	bdef("controller.quorum.election.timeout.ms", Int, ptr("1000"), vAtLeast(Int, 100), "",
		`Maximum time without a leader before a voter starts an election (Kafka's default). Sluice's raft ticks every `+
			`tenth of it and elects after a randomised 1-2 timeouts.`),
	bdef("broker.session.timeout.ms", Int, ptr("9000"), vAtLeast(Int, 100), "",
		`A broker that sends no heartbeat to the active controller for this long is fenced: it leaves every leadership until it returns.`),
	bdef("broker.heartbeat.interval.ms", Int, ptr("2000"), vAtLeast(Int, 10), "",
		`How often a broker heartbeats to the active controller.`),
	bdef("inter.broker.listener.name", String, nil, rule{}, "",
		`Listener followers fetch from their leaders on (default: the listener named by security.inter.broker.protocol when that is set, `+
			`else the first listener), secured as that listener is: TLS with this broker's key and trust stores for it, SASL with `+
			`sasl.mechanism.inter.broker.protocol and the username/password of its JAAS login module. See docs/security.md.`),
	bdef("security.inter.broker.protocol", String, ptr("PLAINTEXT"), vIn("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), "",
		`Security protocol used between brokers: when set, the inter-broker listener is the listener of that name. `+
			`Set this or inter.broker.listener.name, not both.`),
	bdef("listener.security.protocol.map", String,
		ptr("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"), vProtocolMap(), "",
		`Map of listener names to security protocols (NAME:PROTOCOL, comma-separated). Every listener named in `+
			`listeners must appear in it; a custom name such as INTERNAL needs an entry (INTERNAL:PLAINTEXT). See docs/security.md.`),
	bdef("metadata.log.dir", String, nil, rule{}, effectAccepted, `Directory for the KRaft metadata log. Sluice keeps its metadata under log.dirs.`),
	bdef("log.dir", String, ptr("./data"), vNonEmptyString(), "",
		`Data directory, used when log.dirs is not set. Kafka's default is /tmp/kafka-logs; Sluice's is ./data.`),
	bdef("log.dirs", String, nil, vListNonEmptyItems(true), "",
		`Comma-separated data directories. If not set, log.dir is used.`),
	bdef("listeners", String, ptr("PLAINTEXT://localhost:9092"), vNonEmptyString(), "",
		`Comma-separated listener URIs (NAME://host:port). Each listener serves the security protocol its name maps to in `+
			`listener.security.protocol.map (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL). An empty host binds every interface; `+
			`"localhost" binds 127.0.0.1 and ::1. --listen or SLUICE_LISTEN replace the whole list with one PLAINTEXT listener. `+
			`Kafka's default binds all interfaces (PLAINTEXT://:9092); Sluice's binds localhost.`),
	bdef("advertised.listeners", String, nil, rule{}, "",
		`Listener addresses given to clients in Metadata, FindCoordinator and DescribeCluster, if different from listeners `+
			`(NAME://host:port, names among those of listeners). A client is answered with the address of the listener it `+
			`connected through. --advertise or SLUICE_ADVERTISE override the address of the first listener.`),
	bdef("socket.request.max.bytes", Int, ptr("104857600"), vAtLeast(Int, 1), "",
		`Largest request frame the broker reads; larger frames close the connection.`),
	bdef("connections.max.idle.ms", Long, ptr("600000"), vInt(Long), "",
		`Connections idle for longer than this are closed.`),
	dynamic(bdef("message.max.bytes", Int, ptr("1048588"), vAtLeast(Int, 0), "",
		`Broker-wide default for max.message.bytes: the largest record batch accepted, after compression.`)),
	bdef("socket.send.buffer.bytes", Int, ptr("102400"), rule{}, "", `SO_SNDBUF of accepted connections; -1 (or any value below 1) leaves the OS default (autotuning).`),
	bdef("socket.receive.buffer.bytes", Int, ptr("102400"), rule{}, "accepted, no effect: SO_RCVBUF is left to the OS's autotuning (cheaper for large produce requests; docs/performance.md)", `SO_RCVBUF for server sockets; -1 uses the OS default.`),
	bdef("socket.listen.backlog.size", Int, ptr("50"), vAtLeast(Int, 1), effectAccepted, `Listen backlog of server sockets.`),
	dynamic(bdef("num.network.threads", Int, ptr("3"), vAtLeast(Int, 1), effectAccepted, `Network threads (Sluice uses goroutines per connection).`)),
	dynamic(bdef("num.io.threads", Int, ptr("8"), vAtLeast(Int, 1), effectAccepted, `Request handler threads (Sluice uses goroutines).`)),
	dynamic(bdef("background.threads", Int, ptr("10"), vAtLeast(Int, 1), effectAccepted, `Background task threads.`)),
	bdef("queued.max.requests", Int, ptr("500"), vAtLeast(Int, 1), effectAccepted, `Queued requests before network threads stop reading.`),
	bdef("queued.max.request.bytes", Long, ptr("-1"), rule{}, effectAccepted, `Queued request bytes before reading stops; -1 is unlimited.`),
	dynamic(bdef("max.connections", Int, ptr(maxInt32), vAtLeast(Int, 0), "",
		`Maximum connections to the broker; at the limit a listener stops accepting until one closes (the inter-broker `+
			`listener excepted). listener.name.<listener>.max.connections limits one listener. Also dynamic (broker-wide `+
			`value only): a change applies to new connections.`)),
	dynamic(bdef("max.connections.per.ip", Int, ptr(maxInt32), vAtLeast(Int, 0), "",
		`Maximum connections from one IP address; one more is closed at once. Also dynamic: a change applies to new connections.`)),
	bdef("max.connections.per.ip.overrides", String, ptr(""), rule{}, "",
		`Per-IP or per-host limits replacing max.connections.per.ip: host:count or ip:count, comma-separated. Read at start-up.`),
	bdef("max.connection.creation.rate", Int, ptr(maxInt32), vAtLeast(Int, 0), "",
		`Maximum new connections per second, measured over the quota windows; above it the listener waits before `+
			`serving the next one. listener.name.<listener>.max.connection.creation.rate limits one listener. Read at start-up.`),
	bdef("quota.window.num", Int, ptr("11"), vAtLeast(Int, 1), "",
		`Number of samples client quotas and connection rates are measured over.`),
	bdef("quota.window.size.seconds", Int, ptr("1"), vAtLeast(Int, 1), "",
		`Length of one quota sample, in seconds.`),
	bdef("request.timeout.ms", Int, ptr("30000"), vAtLeast(Int, 0), effectAccepted, `Timeout of inter-broker requests.`),
	bdef("fetch.max.bytes", Int, ptr("57671680"), vAtLeast(Int, 1024), "", `Broker-side cap on the bytes returned by one fetch.`),
	bdef("max.incremental.fetch.session.cache.slots", Int, ptr("1000"), vAtLeast(Int, 0), "", `Incremental fetch sessions (KIP-227) the broker keeps; the least recently used is evicted past this.`),
	bdef("broker.rack", String, nil, rule{}, "", `Rack of this broker, reported in Metadata and DescribeCluster; new partitions' replicas are spread over racks; with replica.selector.class, consumers in this rack (client.rack) fetch from this broker's replicas.`),
	bdef("replica.high.watermark.checkpoint.interval.ms", Long, ptr("5000"), vAtLeast(Long, 1), "",
		`How often a cluster node writes its replicated partitions' high watermarks to replication-offset-checkpoint in the data directory (also at shutdown); a restarted node starts from them.`),
	dynamic(bdef("leader.replication.throttled.rate", Long, ptr("9223372036854775807"), vAtLeast(Long, 0), "",
		`Replication throttle of a cluster node as a leader (bytes/s): what it sends to followers of the partitions its topics list in leader.replication.throttled.replicas (partition:thisBroker, or *) stays under this rate. kafka-reassign-partitions --throttle sets it dynamically on the brokers of a move and --verify removes it.`)),
	dynamic(bdef("follower.replication.throttled.rate", Long, ptr("9223372036854775807"), vAtLeast(Long, 0), "",
		`Replication throttle of a cluster node as a follower (bytes/s): what it fetches for the partitions its topics list in follower.replication.throttled.replicas (partition:thisBroker, or *) stays under this rate. kafka-reassign-partitions --throttle sets it dynamically on the brokers of a move and --verify removes it.`)),
	dynamic(bdef("replica.alter.log.dirs.io.max.bytes.per.second", Long, ptr("9223372036854775807"), vAtLeast(Long, 0), effectAccepted,
		`Throttle of moves between log directories (kafka-reassign-partitions clears it); Sluice has one data directory.`)),
	bdef("replica.selector.class", String, nil, vIn("", "org.apache.kafka.common.replica.RackAwareReplicaSelector"), "",
		`Follower fetching (KIP-392): with Kafka's org.apache.kafka.common.replica.RackAwareReplicaSelector, a leader answers a consumer's Fetch that names its rack (client.rack) with preferred_read_replica, an in-sync replica in that rack, and the consumer fetches from it (up to that replica's high watermark). Unset: consumers fetch from the leader. Other selector classes are refused.`),
	bdef("auto.leader.rebalance.enable", Boolean, ptr("true"), vBool(), "",
		`On a cluster, the controller moves leadership back to each partition's preferred replica (the first) when it is live and in sync, every leader.imbalance.check.interval.seconds.`),
	bdef("leader.imbalance.per.broker.percentage", Int, ptr("10"), rule{}, effectAccepted, `Allowed leader imbalance per broker, in percent. Sluice rebalances every partition not led by its preferred replica.`),
	bdef("leader.imbalance.check.interval.seconds", Long, ptr("300"), vAtLeast(Long, 1), "", `Frequency of the leader rebalance check (auto.leader.rebalance.enable).`),
	bdef("replica.lag.time.max.ms", Long, ptr("30000"), rule{}, "",
		`On a cluster, a follower that has not caught up with its leader's log end within this time leaves the in-sync set.`),
	bdef("replica.fetch.max.bytes", Int, ptr("1048576"), vAtLeast(Int, 0), "",
		`Bytes per partition a follower asks its leader for in one Fetch. The leader still sends a partition's first batch if it is larger (KIP-74), so replication never stalls on a large batch.`),
	bdef("replica.fetch.response.max.bytes", Int, ptr("10485760"), vAtLeast(Int, 0), "",
		`Bytes a follower asks its leader for in one Fetch, over all partitions (the first batch is sent whatever its size, KIP-74). Each answer is read whole into one buffer, so this and the largest batch bound a follower's buffer per leader.`),
	bdef("replica.fetch.min.bytes", Int, ptr("1"), rule{}, "",
		`Bytes a leader waits for, up to replica.fetch.wait.max.ms, before it answers a follower's Fetch.`),
	bdef("replica.fetch.wait.max.ms", Int, ptr("500"), rule{}, "",
		`Longest a leader holds a follower's Fetch while less than replica.fetch.min.bytes is there to send. It must not exceed replica.lag.time.max.ms or replica.socket.timeout.ms, as Kafka requires: other values are refused at start, on a single node too.`),
	bdef("replica.socket.timeout.ms", Int, ptr("30000"), rule{}, "",
		`Timeout of a follower's requests to its leader; on expiry the follower drops the connection and dials again. A value of 0 or less means the default, 30 s.`),
	dynamic(bdef("num.replica.fetchers", Int, ptr("1"), rule{}, "accepted; a follower has one fetcher per leader",
		`Follower fetcher threads per source broker.`)),
	bdef("default.replication.factor", Int, ptr("1"), vBetween(Int, 1, 32767), "",
		`Replication factor of topics created without one (auto-created topics, or CreateTopics with -1).`),
	bdef("num.partitions", Int, ptr("1"), vAtLeast(Int, 1), "",
		`Partition count of topics created without one (auto-created topics, or CreateTopics with -1).`),
	bdef("auto.create.topics.enable", Boolean, ptr("true"), vBool(), "",
		`Create a topic when a client asks for metadata of, or produces to, a topic that does not exist.`),
	bdef("delete.topic.enable", Boolean, ptr("true"), vBool(), "",
		`Allow DeleteTopics. When false, deletion fails with TOPIC_DELETION_DISABLED.`),
	bdef("create.topic.policy.class.name", Class, nil, rule{}, effectAccepted, `Java create-topic policy class.`),
	bdef("alter.config.policy.class.name", Class, nil, rule{}, effectAccepted, `Java alter-configs policy class.`),
	bdef("authorizer.class.name", String, ptr(""), vAuthorizer(), "",
		`Authorizer of the broker. Empty: no authorization (every principal may do everything; the ACL APIs answer `+
			`SECURITY_DISABLED). Kafka's `+"`org.apache.kafka.metadata.authorizer.StandardAuthorizer`"+` or the older `+
			"`kafka.security.authorizer.AclAuthorizer`"+` turn on Sluice's authorizer, which has StandardAuthorizer's semantics `+
			`for both; ACLs are kept in acls.json in the data directory. See docs/security.md.`),
	bdef("super.users", String, ptr(""), vSuperUsers(), "",
		`Principals allowed every operation whatever the ACLs, separated by semicolons (User:admin;User:CN=broker,O=Example).`),
	bdef("allow.everyone.if.no.acl.found", Boolean, ptr("false"), vBool(), "",
		`With an authorizer: allow a request on a resource that no ACL matches at all (whatever its principal). `+
			`Kafka's default, false, denies it.`),
	bdef("unstable.api.versions.enable", Boolean, ptr("false"), vBool(), effectAccepted, `Advertise unstable API versions.`),

	// --- log defaults: broker synonyms of topic configs --------------------
	dynamic(bdef("log.cleanup.policy", List, ptr("delete"), vListIn(false, "compact", "delete"), "",
		`Default cleanup.policy: "delete", "compact" or both.`)),
	dynamic(bdef("compression.type", String, ptr("producer"), vIn("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "",
		`Default compression.type.`)),
	dynamic(bdef("compression.gzip.level", Int, ptr("-1"), vGzipLevel(), "", `Default compression.gzip.level.`)),
	dynamic(bdef("compression.lz4.level", Int, ptr("9"), vBetween(Int, 1, 17), "", `Default compression.lz4.level.`)),
	dynamic(bdef("compression.zstd.level", Int, ptr("3"), vBetween(Int, -131072, 22), "", `Default compression.zstd.level.`)),
	dynamic(bdef("log.cleaner.delete.retention.ms", Long, ptr("86400000"), vAtLeast(Long, 0), "", `Default delete.retention.ms.`)),
	dynamic(bdef("log.segment.delete.delay.ms", Long, ptr("60000"), vAtLeast(Long, 0), "", `Default file.delete.delay.ms.`)),
	dynamic(bdef("log.flush.interval.messages", Long, i64(maxInt64), vAtLeast(Long, 1), "", `Default flush.messages.`)),
	dynamic(bdef("log.flush.interval.ms", Long, nil, vAtLeast(Long, 0), "",
		`Default flush.ms. If not set, log.flush.scheduler.interval.ms is used.`)),
	bdef("log.flush.scheduler.interval.ms", Long, i64(maxInt64), vAtLeast(Long, 0), effectHousekeeping,
		`How often the flusher checks whether a log is due for flush.ms; also the fallback default of flush.ms.`),
	bdef("log.flush.offset.checkpoint.interval.ms", Int, ptr("60000"), vAtLeast(Int, 0), "", `Recovery point checkpoint interval: the housekeeping pass writes recovery-point-offset-checkpoint at most this often, and only when a partition's recovery point moved (0: on every pass); a suffix truncation and a clean shutdown write it at once.`),
	bdef("log.flush.start.offset.checkpoint.interval.ms", Int, ptr("60000"), vAtLeast(Int, 0), "", `Log start offset checkpoint interval: the housekeeping pass writes log-start-offset-checkpoint at most this often, and only when a partition's log start offset moved (0: on every pass); DeleteRecords and a clean shutdown write it at once.`),
	dynamic(bdef("log.index.interval.bytes", Int, ptr("4096"), vAtLeast(Int, 0), "", `Default index.interval.bytes.`)),
	dynamic(bdef("log.index.size.max.bytes", Int, ptr("10485760"), vAtLeast(Int, 4), "", `Default segment.index.bytes.`)),
	dynamic(bdef("log.local.retention.bytes", Long, ptr("-2"), vAtLeast(Long, -2), effectNoTiered, `Default local.retention.bytes.`)),
	dynamic(bdef("log.local.retention.ms", Long, ptr("-2"), vAtLeast(Long, -2), effectNoTiered, `Default local.retention.ms.`)),
	bdef("remote.log.storage.system.enable", Boolean, ptr("false"), vRemoteStorage(), "only false is accepted (no tiered storage)",
		`Enable tiered storage on the broker.`),
	dynamic(bdef("log.cleaner.max.compaction.lag.ms", Long, i64(maxInt64), vAtLeast(Long, 1), "", `Default max.compaction.lag.ms.`)),
	dynamic(bdef("log.cleaner.min.compaction.lag.ms", Long, ptr("0"), vAtLeast(Long, 0), "", `Default min.compaction.lag.ms.`)),
	dynamic(bdef("log.cleaner.min.cleanable.ratio", Double, ptr("0.5"), vDoubleBetween(0, 1), "", `Default min.cleanable.dirty.ratio.`)),
	dynamic(bdef("log.message.timestamp.type", String, ptr("CreateTime"), vIn("CreateTime", "LogAppendTime"), "", `Default message.timestamp.type.`)),
	dynamic(bdef("log.message.timestamp.before.max.ms", Long, i64(maxInt64), vAtLeast(Long, 0), "", `Default message.timestamp.before.max.ms.`)),
	dynamic(bdef("log.message.timestamp.after.max.ms", Long, ptr("3600000"), vAtLeast(Long, 0), "", `Default message.timestamp.after.max.ms.`)),
	dynamic(bdef("min.insync.replicas", Int, ptr("1"), vAtLeast(Int, 1), "", `Default min.insync.replicas.`)),
	dynamic(bdef("log.preallocate", Boolean, ptr("false"), vBool(), effectAccepted, `Default preallocate.`)),
	dynamic(bdef("log.retention.bytes", Long, ptr("-1"), vInt(Long), "", `Default retention.bytes; negative means unlimited.`)),
	dynamic(bdef("log.retention.ms", Long, nil, vAtLeast(Long, -1), "",
		`Default retention.ms; -1 means unlimited. Takes precedence over log.retention.minutes and log.retention.hours.`)),
	bdef("log.retention.minutes", Int, nil, vInt(Int), "",
		`Default retention in minutes, used when log.retention.ms is not set; negative means unlimited.`),
	bdef("log.retention.hours", Int, ptr("168"), vInt(Int), "",
		`Default retention in hours, used when neither log.retention.ms nor log.retention.minutes is set; negative means unlimited.`),
	dynamic(bdef("log.segment.bytes", Int, ptr("1073741824"), vAtLeast(Int, 1048576), "", `Default segment.bytes (at least 1 MiB).`)),
	dynamic(bdef("log.roll.ms", Long, nil, vAtLeast(Long, 1), "", `Default segment.ms. Takes precedence over log.roll.hours.`)),
	bdef("log.roll.hours", Int, ptr("168"), vAtLeast(Int, 1), "", `Default segment roll time in hours, used when log.roll.ms is not set.`),
	dynamic(bdef("log.roll.jitter.ms", Long, nil, vAtLeast(Long, 0), "", `Default segment.jitter.ms. Takes precedence over log.roll.jitter.hours.`)),
	bdef("log.roll.jitter.hours", Int, ptr("0"), vAtLeast(Int, 0), "", `Default segment jitter in hours, used when log.roll.jitter.ms is not set.`),
	dynamic(bdef("unclean.leader.election.enable", Boolean, ptr("false"), vBool(), effectClusterOnly, `Default unclean.leader.election.enable: read by the active controller (its own node's dynamic config, else the cluster-wide dynamic default, else its server.properties) for topics without the override.`)),
	bdef("log.retention.check.interval.ms", Long, ptr("300000"), vAtLeast(Long, 1), "",
		`How often the broker checks logs for segments to delete under retention.ms / retention.bytes (and segments below the log start offset after DeleteRecords); the first check runs 30 s after start (or after the interval, if shorter). Records past retention stay readable until the next check.`),
	dynamic(bdef("num.recovery.threads.per.data.dir", Int, ptr("2"), vAtLeast(Int, 1), effectAccepted, `Log recovery threads per data directory.`)),
	bdef("log.dir.failure.timeout.ms", Long, ptr("30000"), vAtLeast(Long, 1), effectAccepted, `Time before a failed log directory shuts the broker down.`),

	// --- log cleaner ---------------------------------------------------------
	bdef("log.cleaner.enable", Boolean, ptr("true"), vBool(), "",
		`Run the log cleaner. Without it compacted topics (including __consumer_offsets) grow without bound.`),
	dynamic(bdef("log.cleaner.threads", Int, ptr("1"), vAtLeast(Int, 0), "", `Number of concurrent cleaner workers.`)),
	dynamic(bdef("log.cleaner.dedupe.buffer.size", Long, ptr("134217728"), vAtLeast(Long, 0), "",
		`Memory, across all cleaner workers, for the key-to-offset map used to deduplicate.`)),
	dynamic(bdef("log.cleaner.io.buffer.size", Int, ptr("524288"), vAtLeast(Int, 0), effectAccepted, `Memory, across all cleaner workers, for read and write buffers.`)),
	dynamic(bdef("log.cleaner.io.buffer.load.factor", Double, ptr("0.9"), vDoubleBetween(0, 1), "",
		`How full the dedupe map may get. Higher cleans more per pass at the cost of more hash collisions.`)),
	dynamic(bdef("log.cleaner.backoff.ms", Long, ptr("15000"), vAtLeast(Long, 0), "", `Pause of a cleaner worker when no log needs cleaning.`)),
	dynamic(bdef("log.cleaner.io.max.bytes.per.second", Double, ptr("1.7976931348623157E308"), vDouble(), effectAccepted,
		`Throttle on the cleaner's combined read and write rate.`)),

	// --- group coordinator and offsets ---------------------------------------
	bdef("offsets.topic.num.partitions", Int, ptr("50"), vAtLeast(Int, 1), "",
		`Partitions of __consumer_offsets. Do not change it once the topic exists.`),
	bdef("offsets.topic.replication.factor", Short, ptr("3"), vAtLeast(Short, 1), "",
		`Replication factor of __consumer_offsets. A single node gives it one replica; a cluster min(this, the number of voters), `+
			`created once that many brokers are live (FindCoordinator answers COORDINATOR_NOT_AVAILABLE until then).`),
	bdef("offsets.topic.segment.bytes", Int, ptr("104857600"), vAtLeast(Int, 1), "",
		`Segment size of __consumer_offsets; kept small so compaction and loading stay fast.`),
	bdef("offsets.topic.compression.codec", Int, ptr("0"), vBetween(Int, 0, 4), effectAccepted, `Compression codec id for __consumer_offsets.`),
	bdef("offsets.load.buffer.size", Int, ptr("5242880"), vAtLeast(Int, 1), effectAccepted, `Read batch size when loading __consumer_offsets.`),
	bdef("offsets.commit.timeout.ms", Int, ptr("5000"), vAtLeast(Int, 1), effectAccepted, `Replication wait of offset commits.`),
	bdef("offset.metadata.max.bytes", Int, ptr("4096"), vInt(Int), "",
		`Largest metadata string accepted with a committed offset; larger commits fail with OFFSET_METADATA_TOO_LARGE.`),
	bdef("offsets.retention.minutes", Int, ptr("10080"), vAtLeast(Int, 1), "",
		`How long committed offsets of an empty group (or of a standalone consumer, since its last commit) are kept.`),
	bdef("offsets.retention.check.interval.ms", Long, ptr("600000"), vAtLeast(Long, 1), "", `How often expired offsets are looked for.`),
	bdef("group.initial.rebalance.delay.ms", Int, ptr("3000"), vAtLeast(Int, 0), "",
		`How long a new classic group waits for more members before its first rebalance.`),
	bdef("group.min.session.timeout.ms", Int, ptr("6000"), vInt(Int), "",
		`Smallest session timeout a classic-group member may ask for (else INVALID_SESSION_TIMEOUT).`),
	bdef("group.max.session.timeout.ms", Int, ptr("1800000"), vInt(Int), "",
		`Largest session timeout a classic-group member may ask for (else INVALID_SESSION_TIMEOUT).`),
	bdef("group.max.size", Int, ptr(maxInt32), vAtLeast(Int, 1), "", `Most members a classic group may have (else GROUP_MAX_SIZE_REACHED).`),
	bdef("group.coordinator.rebalance.protocols", List, ptr("classic,consumer,streams"), vRebalanceProtocols(), effectAccepted,
		`Group protocols the coordinator accepts: "classic" (JoinGroup/SyncGroup), "consumer" (KIP-848 ConsumerGroupHeartbeat), "streams" (KIP-1071 StreamsGroupHeartbeat) and "share". classic cannot be disabled.`),
	bdef("group.coordinator.threads", Int, ptr("1"), vAtLeast(Int, 1), effectAccepted, `Group coordinator threads.`),
	bdef("group.coordinator.append.linger.ms", Int, ptr("10"), vAtLeast(Int, 0), effectAccepted, `Coordinator write batching delay.`),
	bdef("group.consumer.session.timeout.ms", Int, ptr("45000"), vAtLeast(Int, 1), "",
		`Session timeout of members of consumer-protocol (KIP-848) groups.`),
	bdef("group.consumer.min.session.timeout.ms", Int, ptr("45000"), vAtLeast(Int, 1), "", `Lower bound of a consumer group's consumer.session.timeout.ms group config (else INVALID_CONFIG).`),
	bdef("group.consumer.max.session.timeout.ms", Int, ptr("60000"), vAtLeast(Int, 1), "", `Upper bound of a consumer group's consumer.session.timeout.ms group config (else INVALID_CONFIG).`),
	bdef("group.consumer.heartbeat.interval.ms", Int, ptr("5000"), vAtLeast(Int, 1), "",
		`Heartbeat interval given to members of consumer-protocol groups.`),
	bdef("group.consumer.min.heartbeat.interval.ms", Int, ptr("5000"), vAtLeast(Int, 1), "", `Lower bound of a consumer group's consumer.heartbeat.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.consumer.max.heartbeat.interval.ms", Int, ptr("15000"), vAtLeast(Int, 1), "", `Upper bound of a consumer group's consumer.heartbeat.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.consumer.max.size", Int, ptr(maxInt32), vAtLeast(Int, 1), effectAccepted, `Most members a consumer-protocol group may have.`),
	bdef("group.consumer.assignors", List,
		ptr("org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
		vListNonEmptyItems(true), "",
		`Server-side assignors of consumer-protocol groups, by short name (uniform, range) or Kafka class name; the first is the default.`),
	bdef("group.streams.session.timeout.ms", Int, ptr("45000"), vAtLeast(Int, 1), "",
		`Session timeout of members of streams groups (KIP-1071, group.protocol=streams).`),
	bdef("group.streams.heartbeat.interval.ms", Int, ptr("5000"), vAtLeast(Int, 1), "",
		`Heartbeat interval given to members of streams groups.`),
	bdef("group.streams.num.standby.replicas", Int, ptr("0"), vAtLeast(Int, 0), "",
		`Standby replicas of each stateful task in streams groups, placed on other processes than the task's active owner.`),
	bdef("group.streams.min.session.timeout.ms", Int, ptr("45000"), vAtLeast(Int, 1), "",
		`Lower bound of a streams group's streams.session.timeout.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.max.session.timeout.ms", Int, ptr("60000"), vAtLeast(Int, 1), "",
		`Upper bound of a streams group's streams.session.timeout.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.min.heartbeat.interval.ms", Int, ptr("5000"), vAtLeast(Int, 1), "",
		`Lower bound of a streams group's streams.heartbeat.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.max.heartbeat.interval.ms", Int, ptr("15000"), vAtLeast(Int, 1), "",
		`Upper bound of a streams group's streams.heartbeat.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.max.standby.replicas", Int, ptr("2"), vAtLeast(Int, 0), "",
		`Largest streams.num.standby.replicas group config a streams group may set (else INVALID_CONFIG).`),
	bdef("group.streams.task.offset.interval.ms", Int, ptr("60000"), vAtLeast(Int, 1), "",
		`How often members of streams groups are told to report their tasks' changelog offsets (the streams.task.offset.interval.ms group config overrides it).`),
	bdef("group.streams.min.task.offset.interval.ms", Int, ptr("15000"), vAtLeast(Int, 1), "",
		`Lower bound of a streams group's streams.task.offset.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.acceptable.recovery.lag", Long, ptr("10000"), vAtLeast(Long, 0), "",
		`Lag (offsets to catch up) within which a streams member counts as caught up, told to the members (the streams.acceptable.recovery.lag group config overrides it).`),
	bdef("group.streams.num.warmup.replicas", Int, ptr("2"), vAtLeast(Int, 0), effectAccepted,
		`Warm-up replicas of streams groups (the streams.num.warmup.replicas group config overrides it). Kafka 4.4's sticky task assignor assigns no warm-up tasks, and neither does Sluice's.`),
	bdef("group.streams.max.warmup.replicas", Int, ptr("20"), vAtLeast(Int, 0), "",
		`Largest streams.num.warmup.replicas group config a streams group may set (else INVALID_CONFIG).`),
	bdef("group.streams.initial.rebalance.delay.ms", Int, ptr("3000"), vAtLeast(Int, 0), "",
		`How long the first assignment of a streams group that had no member waits for more members to join (the streams.initial.rebalance.delay.ms group config overrides it); members are told ASSIGNMENT_DELAYED meanwhile.`),
	bdef("group.streams.assignment.interval.ms", Int, ptr("1000"), vAtLeast(Int, 0), "",
		`Least time between two assignments of a streams group (the streams.assignment.interval.ms group config overrides it); a change within it is assigned at a later heartbeat (ASSIGNMENT_DELAYED).`),
	bdef("group.streams.min.assignment.interval.ms", Int, ptr("0"), vAtLeast(Int, 0), "",
		`Lower bound of a streams group's streams.assignment.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.max.assignment.interval.ms", Int, ptr("15000"), vAtLeast(Int, 0), "",
		`Upper bound of a streams group's streams.assignment.interval.ms group config (else INVALID_CONFIG).`),
	bdef("group.streams.rack.aware.assignment.tags", List, ptr(""), rule{}, "",
		`Client tag keys over which standby replicas of streams groups are spread (best effort; the streams.rack.aware.assignment.tags group config overrides it); members lacking one are told MISSING_CLIENT_TAGS (StreamsGroupHeartbeat v1).`),
	bdef("group.consumer.migration.policy", String, ptr("bidirectional"), vInFold("disabled", "downgrade", "upgrade", "bidirectional"), effectAccepted,
		`Whether non-empty groups may convert between the classic and consumer protocols: disabled, downgrade, upgrade or bidirectional.`),

	// --- transactions and producer state --------------------------------------
	bdef("transactional.id.expiration.ms", Int, ptr("604800000"), vAtLeast(Int, 1), "",
		`A transactional id with no transaction activity for this long is expired (a tombstone in __transaction_state).`),
	bdef("transaction.max.timeout.ms", Int, ptr("900000"), vAtLeast(Int, 1), "",
		`Largest transaction timeout a producer may ask for (else INVALID_TRANSACTION_TIMEOUT).`),
	dynamic(bdef("producer.id.expiration.ms", Int, ptr("86400000"), vAtLeast(Int, 1), "",
		`Idempotent-producer state of a producer id with no writes for this long is dropped.`)),
	bdef("producer.id.expiration.check.interval.ms", Int, ptr("600000"), vAtLeast(Int, 1), "", `How often expired producer ids are looked for.`),
	bdef("transaction.state.log.num.partitions", Int, ptr("50"), vAtLeast(Int, 1), "",
		`Partitions of __transaction_state (created at the first transactional request; an existing topic keeps its count).`),
	bdef("transaction.state.log.replication.factor", Short, ptr("3"), vAtLeast(Short, 1), "",
		`Replication factor of __transaction_state: as offsets.topic.replication.factor.`),
	bdef("transaction.state.log.min.isr", Int, ptr("2"), vAtLeast(Int, 1), effectSingleNode, `min.insync.replicas of __transaction_state.`),
	bdef("transaction.state.log.segment.bytes", Int, ptr("104857600"), vAtLeast(Int, 1), "", `Segment size of __transaction_state.`),
	bdef("transaction.state.log.load.buffer.size", Int, ptr("5242880"), vAtLeast(Int, 1), effectAccepted, `Read batch size when loading __transaction_state.`),
	dynamic(bdef("transaction.partition.verification.enable", Boolean, ptr("true"), vBool(),
		"",
		`Verify that a partition was added to a transaction before accepting transactional writes.`)),
	bdef("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, ptr("10000"), vAtLeast(Int, 1), "",
		`How often timed-out transactions are looked for and aborted (and unfinished markers retried).`),
	bdef("transaction.remove.expired.transaction.cleanup.interval.ms", Int, ptr("3600000"), vAtLeast(Int, 1), "",
		`How often expired transactional ids are looked for.`),

	// --- share groups (KIP-932) ---------------------------------------------
	bdef("group.share.record.lock.duration.ms", Int, ptr("30000"), vAtLeast(Int, 1), "",
		`How long records acquired by a share-group member stay locked before they are delivered again (Kafka accepts 15000 to 60000).`),
	bdef("group.share.delivery.count.limit", Int, ptr("5"), vAtLeast(Int, 1), "",
		`How many times a record is delivered to share-group members before it is archived (Kafka accepts 2 to 10).`),
	bdef("group.share.partition.max.record.locks", Int, ptr("2000"), vAtLeast(Int, 1), "",
		`Most records of one share partition acquired at a time.`),
	bdef("group.share.heartbeat.interval.ms", Int, ptr("5000"), vAtLeast(Int, 1), "",
		`Heartbeat interval given to share-group members.`),
	bdef("group.share.session.timeout.ms", Int, ptr("45000"), vAtLeast(Int, 1), "",
		`A share-group member that sends no heartbeat for this long is removed and its records released.`),
	bdef("group.share.max.size", Int, ptr("200"), vAtLeast(Int, 1), "", `Most members a share group may have (else GROUP_MAX_SIZE_REACHED).`),
	bdef("share.auto.offset.reset", String, ptr("latest"), vInFold("latest", "earliest"), "",
		`Where a share group starts reading a partition it has no state for (latest or earliest), for groups without their own share.auto.offset.reset group config. Apache Kafka has only the group config (default latest).`),
	bdef("share.coordinator.state.topic.num.partitions", Int, ptr("50"), vAtLeast(Int, 1), "",
		`Partitions of __share_group_state (created at the first share-group use; an existing topic keeps its count).`),
	bdef("share.coordinator.state.topic.segment.bytes", Int, ptr("104857600"), vAtLeast(Int, 1), "", `Segment size of __share_group_state.`),
	bdef("share.coordinator.state.topic.replication.factor", Short, ptr("3"), vAtLeast(Short, 1), "",
		`Replication factor of __share_group_state on a cluster (capped to the number of brokers; a single node gives it one replica).`),
	bdef("share.coordinator.state.topic.min.isr", Short, ptr("2"), vAtLeast(Short, 1), "",
		`min.insync.replicas of the share-group state topic on a cluster (capped to its replication factor).`),
	bdef("share.coordinator.snapshot.update.records.per.snapshot", Int, ptr("500"), vAtLeast(Int, 0), "",
		`The share coordinator writes a share partition's whole state (a ShareSnapshot record) every this many writes; the writes between are ShareUpdate records.`),

	// --- Sluice's own (Apache Kafka configures its logging with log4j) -------
	bdef("sluice.metrics.listen", String, ptr("127.0.0.1:9095"), rule{}, "",
		`host:port of the HTTP listener for /metrics, /healthz, /readyz and /compaction/status; "" turns it off. `+
			`--metrics-listen and SLUICE_METRICS_LISTEN override it. Set here or by them, an address that cannot be bound `+
			`stops the broker; the default only logs a warning. DescribeConfigs on a broker reports the address it bound `+
			`("" if none): sluice compaction status finds the listener that way.`),
	bdef("console.listen", String, ptr(""), rule{}, "",
		`host:port of the built-in web console (docs/console.md); "" (the default) turns it off. --console-listen and `+
			`SLUICE_CONSOLE_LISTEN override it. The console is a Kafka client of this broker's own listener: with a SASL `+
			`listener it asks for a user name and password and acts as that principal.`),
	bdef("console.allow.writes", Boolean, ptr("false"), vBool(), "",
		`Let the web console create topics, alter configs, reset group offsets and delete records when the broker has no `+
			`SASL listener (no login). With a SASL listener the logged-in principal's rights decide and this is ignored.`),
	bdef("console.allowed.hosts", List, ptr(""), rule{}, "",
		`Host names, besides localhost, IP addresses and the console.listen host, that the web console accepts in the `+
			`Host header (a guard against DNS rebinding). Set it to the name users type in their browser.`),
	bdef("sluice.log.level", String, ptr("info"), vIn("debug", "info", "warn", "error"), "",
		`Least severe level of the broker's log lines: debug, info, warn or error. --log-level and SLUICE_LOG_LEVEL override it.`),
	bdef("sluice.log.format", String, ptr("text"), vIn("text", "json"), "",
		`Format of the broker's log lines on standard error: text (key=value) or json (one object per line). `+
			`--log-format and SLUICE_LOG_FORMAT override it.`),
	bdef("sluice.one.voter.quorum", Boolean, ptr("true"), vBool(), "",
		`Without controller.quorum.voters and controller.quorum.bootstrap.servers (or with only this node's own `+
			`controller listener as the bootstrap server), the node is the only voter (node.id) of a one-voter metadata `+
			`quorum of its own, its metadata committed through raft, so that it can grow into a cluster later; a single `+
			`node's data directory is upgraded in place at its first such start (docs/cluster.md). It serves no controller `+
			`listener unless listeners names one. false runs the single-node `+
			`path of earlier releases, without a quorum (a directory that has a quorum then keeps it unused).`),
	bdef("sluice.test.clock.control", Boolean, ptr("false"), vBool(), "",
		`Test only, never in production: lets the fault checker jump this broker's wall clock (docs/reliability.md). `+
			`When true, /test/clock on the metrics listener reads (GET) and sets (POST offset_ms=N) the offset of the clock `+
			`the logs, the transaction and group coordinators, the log cleaner and share groups read.`),
	bdef("sluice.test.fsync.shadow.dir", String, ptr(""), rule{}, "",
		`Test only, never in production: a directory (outside the data directory) where the broker keeps a copy of its `+
			`data directory as of each file's last fsync, for the fault checker's lose-unfsynced fault (docs/reliability.md). `+
			`"" (the default) keeps none.`),
}

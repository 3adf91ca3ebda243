package config

import "strconv"

// Effect notes shared by several configs.
const (
	effectNoReplication = "accepted, no effect (single node, no replication)"
	effectNoTiered      = "accepted, no effect (no tiered storage)"
	effectNoPrealloc    = "accepted, no effect yet: segment files grow as they are written"
	effectClusterOnly   = "cluster nodes only (a single node has no other replica)"
)

func ptr(s string) *string { return &s }

func i64(n int64) *string { return ptr(strconv.FormatInt(n, 10)) }

const maxInt64 = int64(^uint64(0) >> 1)

// topicDefs is the table of every Apache Kafka 4.x topic-level config,
// sorted by name. Broker synonyms are listed in Kafka's precedence order.
//
// Kafka 4.0 removed message.format.version, message.downconversion.enable
// and message.timestamp.difference.max.ms; they are unknown here as there.
var topicDefs = []Def{
	{
		Name: "cleanup.policy", Type: List, Default: ptr("delete"),
		rule:     vListIn(false, "compact", "delete"),
		Synonyms: []string{"log.cleanup.policy"},
		Doc: `What happens to old log segments: "delete" drops whole segments once they pass retention.ms or ` +
			`retention.bytes; "compact" keeps at least the latest record for every key (log compaction). ` +
			`"compact,delete" does both: retained segments are compacted and old ones are still dropped.`,
	},
	{
		Name: "compression.gzip.level", Type: Int, Default: ptr("-1"),
		rule: vGzipLevel(), Synonyms: []string{"compression.gzip.level"},
		Doc: `Level used when the broker (re)compresses with gzip because compression.type=gzip. -1 is the codec default; otherwise 1 (fastest) to 9 (smallest).`,
	},
	{
		Name: "compression.lz4.level", Type: Int, Default: ptr("9"),
		rule: vBetween(Int, 1, 17), Synonyms: []string{"compression.lz4.level"},
		Doc: `Level used when the broker (re)compresses with lz4 because compression.type=lz4; 1 to 17. As in Kafka, the default 9 ` +
			`uses lz4's fast compressor and any other level its high-compression mode (levels above 9 compress as 9).`,
	},
	{
		Name: "compression.type", Type: String, Default: ptr("producer"),
		rule:     vIn("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Synonyms: []string{"compression.type"},
		Doc: `Codec the topic's stored batches end up with. "producer" keeps whatever the producer sent, byte for byte; ` +
			`"uncompressed", "gzip", "snappy", "lz4" or "zstd" make the broker recompress batches that arrive with a different codec ` +
			`(a batch already in that codec is kept whatever its level, as in Kafka). Recompressing costs broker CPU on every produce.`,
	},
	{
		Name: "compression.zstd.level", Type: Int, Default: ptr("3"),
		rule: vBetween(Int, -131072, 22), Synonyms: []string{"compression.zstd.level"},
		Doc: `Level used when the broker (re)compresses with zstd because compression.type=zstd; -131072 to 22. ` +
			`Sluice's encoder has four speeds: below 3 fastest, 3 to 5 default, 6 to 9 better, 10 and up best.`,
	},
	{
		Name: "delete.retention.ms", Type: Long, Default: i64(86400000),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.cleaner.delete.retention.ms"},
		Doc: `How long a tombstone (a record with a null value) survives in a compacted topic after the segment holding it ` +
			`has been cleaned. Consumers reading from the start must finish within this time to be sure of seeing deletes.`,
	},
	{
		Name: "file.delete.delay.ms", Type: Long, Default: i64(60000),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.segment.delete.delay.ms"},
		Doc: `Grace period between a segment being removed from the log and its files being deleted from disk.`,
	},
	{
		Name: "flush.messages", Type: Long, Default: i64(maxInt64),
		rule: vAtLeast(Long, 1), Synonyms: []string{"log.flush.interval.messages"},
		Doc: `Force an fsync of the partition after this many messages. 1 means every acknowledged write is on stable storage ` +
			`(Sluice group-commits, so one fsync covers many producers). The default leaves flushing to the operating system.`,
	},
	{
		Name: "flush.ms", Type: Long, Default: i64(maxInt64),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
		Doc: `Force an fsync of the partition when its oldest unflushed message is older than this many milliseconds.`,
	},
	{
		Name: "follower.replication.throttled.replicas", Type: List, Default: ptr(""),
		rule: vThrottledReplicas(), Effect: effectClusterOnly,
		Doc: `Replicas whose replication is throttled on the follower side: "*" or partitionId:brokerId pairs (brokerId: the follower), under that broker's follower.replication.throttled.rate.`,
	},
	{
		Name: "index.interval.bytes", Type: Int, Default: ptr("4096"),
		rule: vAtLeast(Int, 0), Synonyms: []string{"log.index.interval.bytes"},
		Doc: `Bytes of log written between two entries in the offset index. Smaller values make lookups land closer to the ` +
			`wanted offset at the price of a larger index.`,
	},
	{
		Name: "leader.replication.throttled.replicas", Type: List, Default: ptr(""),
		rule: vThrottledReplicas(), Effect: effectClusterOnly,
		Doc: `Replicas whose replication is throttled on the leader side: "*" or partitionId:brokerId pairs (brokerId: the leader), under that broker's leader.replication.throttled.rate.`,
	},
	{
		Name: "local.retention.bytes", Type: Long, Default: ptr("-2"),
		rule: vAtLeast(Long, -2), Synonyms: []string{"log.local.retention.bytes"}, Effect: effectNoTiered,
		Doc: `With tiered storage, the size a partition's local log may reach before local segments are removed. -2 means use retention.bytes.`,
	},
	{
		Name: "local.retention.ms", Type: Long, Default: ptr("-2"),
		rule: vAtLeast(Long, -2), Synonyms: []string{"log.local.retention.ms"}, Effect: effectNoTiered,
		Doc: `With tiered storage, how long segments stay in the local log. -2 means use retention.ms.`,
	},
	{
		Name: "max.compaction.lag.ms", Type: Long, Default: i64(maxInt64),
		rule: vAtLeast(Long, 1), Synonyms: []string{"log.cleaner.max.compaction.lag.ms"},
		Doc: `Upper bound on how long a record can stay uncompacted: a log whose dirty part is older than this is cleaned ` +
			`even if min.cleanable.dirty.ratio has not been reached.`,
	},
	{
		Name: "max.message.bytes", Type: Int, Default: ptr("1048588"),
		rule: vAtLeast(Int, 0), Synonyms: []string{"message.max.bytes"},
		Doc: `Largest record batch the topic accepts, measured after compression. Larger batches are rejected with ` +
			`MESSAGE_TOO_LARGE. Consumers' fetch sizes must be at least this large to make progress.`,
	},
	{
		Name: "message.timestamp.after.max.ms", Type: Long, Default: i64(3600000),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.message.timestamp.after.max.ms"},
		Doc: `With message.timestamp.type=CreateTime, how far in the future (relative to the broker clock) a record's ` +
			`timestamp may be; batches beyond it are rejected with INVALID_TIMESTAMP. Ignored for LogAppendTime.`,
	},
	{
		Name: "message.timestamp.before.max.ms", Type: Long, Default: i64(maxInt64),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.message.timestamp.before.max.ms"},
		Doc: `With message.timestamp.type=CreateTime, how far in the past (relative to the broker clock) a record's ` +
			`timestamp may be; batches beyond it are rejected with INVALID_TIMESTAMP. Ignored for LogAppendTime.`,
	},
	{
		Name: "message.timestamp.type", Type: String, Default: ptr("CreateTime"),
		rule: vIn("CreateTime", "LogAppendTime"), Synonyms: []string{"log.message.timestamp.type"},
		Doc: `"CreateTime" keeps the producer's record timestamps; "LogAppendTime" makes the broker stamp each batch with its ` +
			`own clock when appending it.`,
	},
	{
		Name: "min.cleanable.dirty.ratio", Type: Double, Default: ptr("0.5"),
		rule: vDoubleBetween(0, 1), Synonyms: []string{"log.cleaner.min.cleanable.ratio"},
		Doc: `A compacted log becomes eligible for cleaning once the uncleaned ("dirty") part is at least this fraction of ` +
			`the log (and older than min.compaction.lag.ms), or once dirty records are older than max.compaction.lag.ms. ` +
			`Higher values mean fewer, more efficient cleanings and more space held by duplicates.`,
	},
	{
		Name: "min.compaction.lag.ms", Type: Long, Default: ptr("0"),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.cleaner.min.compaction.lag.ms"},
		Doc: `Minimum age of a record before compaction may remove it.`,
	},
	{
		Name: "min.insync.replicas", Type: Int, Default: ptr("1"),
		rule: vAtLeast(Int, 1), Synonyms: []string{"min.insync.replicas"},
		Doc: `Produce requests with acks=all (-1) succeed only if at least this many replicas are in sync; otherwise ` +
			`they fail with NOT_ENOUGH_REPLICAS.`,
	},
	{
		Name: "preallocate", Type: Boolean, Default: ptr("false"),
		rule: vBool(), Synonyms: []string{"log.preallocate"}, Effect: effectNoPrealloc,
		Doc: `Preallocate segment files on disk when a new segment is created.`,
	},
	{
		Name: "remote.log.copy.disable", Type: Boolean, Default: ptr("false"),
		rule: vBool(), Effect: effectNoTiered,
		Doc: `With tiered storage, stop copying segments to remote storage while keeping what is already there readable.`,
	},
	{
		Name: "remote.log.delete.on.disable", Type: Boolean, Default: ptr("false"),
		rule: vBool(), Effect: effectNoTiered,
		Doc: `With tiered storage, delete the remote data when tiered storage is turned off for the topic.`,
	},
	{
		Name: "remote.storage.enable", Type: Boolean, Default: ptr("false"),
		rule: vRemoteStorage(), Effect: "only false is accepted (no tiered storage)",
		Doc: `Turn on tiered storage for the topic. Sluice has no tiered storage, so setting it to true is rejected with INVALID_CONFIG.`,
	},
	{
		Name: "retention.bytes", Type: Long, Default: ptr("-1"),
		rule: vInt(Long), Synonyms: []string{"log.retention.bytes"},
		Doc: `With cleanup.policy containing delete, the size a partition may grow to before its oldest segments are ` +
			`deleted. It is a per-partition limit. Negative means no size limit.`,
	},
	{
		Name: "retention.ms", Type: Long, Default: i64(604800000),
		rule:     vAtLeast(Long, -1),
		Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		Doc: `With cleanup.policy containing delete, how long a segment is kept after its newest record; older segments ` +
			`are deleted. -1 means no time limit.`,
	},
	{
		Name: "segment.bytes", Type: Int, Default: ptr("1073741824"),
		rule: vAtLeast(Int, 1048576), Synonyms: []string{"log.segment.bytes"},
		Doc: `Size at which the active segment is closed and a new one started. Retention and compaction work on whole ` +
			`closed segments, so smaller segments give finer control at the price of more files. At least 1 MiB.`,
	},
	{
		Name: "segment.index.bytes", Type: Int, Default: ptr("10485760"),
		rule: vAtLeast(Int, 4), Synonyms: []string{"log.index.size.max.bytes"},
		Doc: `Maximum size of a segment's offset (and time) index; a full index rolls the segment.`,
	},
	{
		Name: "segment.jitter.ms", Type: Long, Default: ptr("0"),
		rule: vAtLeast(Long, 0), Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		Doc: `Up to this much random time is subtracted from segment.ms per segment, so that many partitions do not roll at once.`,
	},
	{
		Name: "segment.ms", Type: Long, Default: i64(604800000),
		rule: vAtLeast(Long, 1), Synonyms: []string{"log.roll.ms", "log.roll.hours"},
		Doc: `Time after which the active segment is rolled even if it is not full, so that retention and compaction can ` +
			`reach its records.`,
	},
	{
		Name: "unclean.leader.election.enable", Type: Boolean, Default: ptr("false"),
		rule: vBool(), Synonyms: []string{"unclean.leader.election.enable"}, Effect: effectClusterOnly,
		Doc: `Allow a replica that is not in sync to become leader as a last resort, at the risk of losing data.`,
	},
}

package group

// OffsetsTopic is the name of the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// Storage is where the coordinator keeps its records: one append-only, compacted log per
// __consumer_offsets partition. The broker implements it over its partition logs.
type Storage interface {
	// Append durably appends one uncompressed v2 record batch (base offset 0; the log
	// assigns offsets) to partition p. An error means nothing was stored.
	Append(p int32, batch []byte) error
	// Replay calls fn with the raw bytes of partition p's batches, from the log start
	// to the end, in order (fn may be called several times, each with whole batches).
	Replay(p int32, fn func(batches []byte) error) error
}

// TopicInfo is what the coordinator needs to know about a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
	Internal   bool
}

// Topics answers questions about the broker's topics.
type Topics interface {
	Topic(name string) (TopicInfo, bool)
	TopicByID(id [16]byte) (TopicInfo, bool)
	AllTopics() []TopicInfo
	// EndOffset is the partition's high watermark, for consumer-lag metrics.
	EndOffset(topic string, partition int32) (int64, bool)
}

// PartitionFor is the __consumer_offsets partition that holds group's records:
// abs(Java String.hashCode(group)) mod n, as Apache Kafka computes it, so a data
// directory keeps the same layout.
func PartitionFor(group string, n int32) int32 {
	var h int32
	for _, r := range utf16Units(group) {
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

package group

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The KIP-848 consumer-group records of __consumer_offsets, in Apache Kafka's formats
// (group-coordinator's ConsumerGroup*Key/Value message specs). kmsg has no types for
// them, so this file encodes and decodes them with kbin's primitives.
//
// A key is an int16 record type followed by the key fields in the non-flexible
// encoding (int16-length strings). A value is an int16 value version (always 0 here)
// followed by the value fields in the flexible encoding: compact strings and arrays,
// and a tagged-field section closing the value and every nested struct. Tagged fields
// Sluice does not know (for example ConsumerGroupMetadataValue's MetadataHash, or
// ClassicMemberMetadata of members that joined with the classic protocol) are skipped
// on decode and never written.
const (
	keyTypeConsumerGroupMetadata          int16 = 3 // group epoch
	keyTypeConsumerGroupPartitionMetadata int16 = 4 // subscribed topics' metadata
	keyTypeConsumerGroupMemberMetadata    int16 = 5 // a member's subscription and client facts
	keyTypeConsumerGroupTargetMetadata    int16 = 6 // target assignment epoch
	keyTypeConsumerGroupTargetMember      int16 = 7 // a member's target assignment
	keyTypeConsumerGroupCurrentMember     int16 = 8 // a member's epochs, state and partitions

	consumerValueVersion int16 = 0
)

// consumerKey is the decoded key of a record of type 3..8; member is empty for the
// group-level types 3, 4 and 6.
type consumerKey struct {
	typ    int16
	group  string
	member string
}

func (k consumerKey) hasMember() bool {
	return k.typ == keyTypeConsumerGroupMemberMetadata || k.typ == keyTypeConsumerGroupTargetMember ||
		k.typ == keyTypeConsumerGroupCurrentMember
}

func (k consumerKey) encode() []byte {
	b := kbin.AppendInt16(nil, k.typ)
	b = kbin.AppendString(b, k.group)
	if k.hasMember() {
		b = kbin.AppendString(b, k.member)
	}
	return b
}

func decodeConsumerKey(b []byte) (consumerKey, error) {
	r := kbin.Reader{Src: b}
	k := consumerKey{typ: r.Int16()}
	if k.typ < keyTypeConsumerGroupMetadata || k.typ > keyTypeConsumerGroupCurrentMember {
		return k, fmt.Errorf("record type %d is not a consumer-group record", k.typ)
	}
	k.group = r.String()
	if k.hasMember() {
		k.member = r.String()
	}
	if err := r.Complete(); err != nil {
		return k, fmt.Errorf("consumer-group key type %d: %w", k.typ, err)
	}
	if len(r.Src) != 0 {
		return k, fmt.Errorf("consumer-group key type %d: %d trailing bytes", k.typ, len(r.Src))
	}
	return k, nil
}

// cgTopicMetadata is one topic of ConsumerGroupPartitionMetadataValue. Its deprecated
// per-partition rack list is written empty and ignored on read.
type cgTopicMetadata struct {
	id         [16]byte
	name       string
	partitions int32
}

// cgTopicPartitions is Kafka's TopicPartitions struct: a topic id and partition ids.
type cgTopicPartitions struct {
	id         [16]byte
	partitions []int32
}

// cgMemberMetadata is ConsumerGroupMemberMetadataValue.
type cgMemberMetadata struct {
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	subscribed         []string
	regex              *string
	rebalanceTimeoutMs int32
	serverAssignor     *string
}

// cgCurrentAssignment is ConsumerGroupCurrentMemberAssignmentValue. state uses Kafka's
// MemberState values (0 stable, 1 unrevoked partitions, 2 unreleased partitions),
// which reconcileState mirrors.
type cgCurrentAssignment struct {
	epoch, prevEpoch int32
	state            int8
	assigned         []cgTopicPartitions
	revoking         []cgTopicPartitions
}

func appendValueHeader() []byte { return kbin.AppendInt16(make([]byte, 0, 64), consumerValueVersion) }

func appendNoTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

// encodeEpochValue encodes ConsumerGroupMetadataValue (Epoch) and
// ConsumerGroupTargetAssignmentMetadataValue (AssignmentEpoch): both are one int32.
func encodeEpochValue(epoch int32) []byte {
	b := appendValueHeader()
	b = kbin.AppendInt32(b, epoch)
	return appendNoTags(b)
}

func encodePartitionMetadataValue(topics []cgTopicMetadata) []byte {
	b := appendValueHeader()
	b = kbin.AppendCompactArrayLen(b, len(topics))
	for _, t := range topics {
		b = kbin.AppendUuid(b, t.id)
		b = kbin.AppendCompactString(b, t.name)
		b = kbin.AppendInt32(b, t.partitions)
		b = kbin.AppendCompactArrayLen(b, 0) // PartitionMetadata (racks): unused since Kafka 4.0
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func encodeMemberMetadataValue(m cgMemberMetadata) []byte {
	b := appendValueHeader()
	b = kbin.AppendCompactNullableString(b, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.subscribed))
	for _, s := range m.subscribed {
		b = kbin.AppendCompactString(b, s)
	}
	b = kbin.AppendCompactNullableString(b, m.regex)
	b = kbin.AppendInt32(b, m.rebalanceTimeoutMs)
	b = kbin.AppendCompactNullableString(b, m.serverAssignor)
	return appendNoTags(b)
}

func appendTopicPartitions(b []byte, tps []cgTopicPartitions) []byte {
	b = kbin.AppendCompactArrayLen(b, len(tps))
	for _, t := range tps {
		b = kbin.AppendUuid(b, t.id)
		b = kbin.AppendCompactArrayLen(b, len(t.partitions))
		for _, p := range t.partitions {
			b = kbin.AppendInt32(b, p)
		}
		b = appendNoTags(b)
	}
	return b
}

func encodeTargetMemberValue(tps []cgTopicPartitions) []byte {
	b := appendValueHeader()
	b = appendTopicPartitions(b, tps)
	return appendNoTags(b)
}

func encodeCurrentAssignmentValue(a cgCurrentAssignment) []byte {
	b := appendValueHeader()
	b = kbin.AppendInt32(b, a.epoch)
	b = kbin.AppendInt32(b, a.prevEpoch)
	b = kbin.AppendInt8(b, a.state)
	b = appendTopicPartitions(b, a.assigned)
	b = appendTopicPartitions(b, a.revoking)
	return appendNoTags(b)
}

// valueReader wraps kbin.Reader with the flexible-encoding helpers the values need.
type valueReader struct {
	kbin.Reader
	err error
}

func newValueReader(b []byte, what string) *valueReader {
	r := &valueReader{Reader: kbin.Reader{Src: b}}
	if v := r.Int16(); r.Ok() && v != consumerValueVersion {
		r.err = fmt.Errorf("%s value version %d is not supported", what, v)
	}
	return r
}

// arrayLen reads a compact array length; null reads as empty.
func (r *valueReader) arrayLen() int {
	n := r.CompactArrayLen()
	if n < 0 {
		return 0
	}
	return int(n)
}

// skipTags reads a tagged-field section, skipping every field.
func (r *valueReader) skipTags() {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		if size > uint32(len(r.Src)) {
			r.Span(-1) // marks the reader bad
			return
		}
		r.Span(int(size))
	}
}

func (r *valueReader) topicPartitions() []cgTopicPartitions {
	n := r.arrayLen()
	var out []cgTopicPartitions
	for i := 0; i < n && r.Ok(); i++ {
		t := cgTopicPartitions{id: r.Uuid()}
		np := r.arrayLen()
		if np > 0 {
			t.partitions = make([]int32, 0, min(np, len(r.Src)/4+1))
		}
		for j := 0; j < np && r.Ok(); j++ {
			t.partitions = append(t.partitions, r.Int32())
		}
		r.skipTags()
		out = append(out, t)
	}
	return out
}

// done closes the value: its own tagged fields, then checks that everything was read.
func (r *valueReader) done(what string) error {
	if r.err != nil {
		return r.err
	}
	r.skipTags()
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%s value: %w", what, err)
	}
	if len(r.Src) != 0 {
		return fmt.Errorf("%s value: %d trailing bytes", what, len(r.Src))
	}
	return nil
}

var errNilValue = errors.New("tombstone has no value to decode")

func decodeEpochValue(b []byte, what string) (int32, error) {
	if b == nil {
		return 0, errNilValue
	}
	r := newValueReader(b, what)
	epoch := r.Int32()
	return epoch, r.done(what)
}

func decodePartitionMetadataValue(b []byte) ([]cgTopicMetadata, error) {
	const what = "ConsumerGroupPartitionMetadata"
	if b == nil {
		return nil, errNilValue
	}
	r := newValueReader(b, what)
	n := r.arrayLen()
	var out []cgTopicMetadata
	for i := 0; i < n && r.Ok() && r.err == nil; i++ {
		t := cgTopicMetadata{id: r.Uuid(), name: r.CompactString(), partitions: r.Int32()}
		np := r.arrayLen()
		for j := 0; j < np && r.Ok(); j++ {
			r.Int32() // partition
			nr := r.arrayLen()
			for k := 0; k < nr && r.Ok(); k++ {
				r.CompactString() // rack
			}
			r.skipTags()
		}
		r.skipTags()
		out = append(out, t)
	}
	return out, r.done(what)
}

func decodeMemberMetadataValue(b []byte) (cgMemberMetadata, error) {
	const what = "ConsumerGroupMemberMetadata"
	var m cgMemberMetadata
	if b == nil {
		return m, errNilValue
	}
	r := newValueReader(b, what)
	m.instanceID = r.CompactNullableString()
	m.rackID = r.CompactNullableString()
	m.clientID = r.CompactString()
	m.clientHost = r.CompactString()
	n := r.arrayLen()
	for i := 0; i < n && r.Ok(); i++ {
		m.subscribed = append(m.subscribed, r.CompactString())
	}
	m.regex = r.CompactNullableString()
	m.rebalanceTimeoutMs = r.Int32()
	m.serverAssignor = r.CompactNullableString()
	return m, r.done(what)
}

func decodeTargetMemberValue(b []byte) ([]cgTopicPartitions, error) {
	const what = "ConsumerGroupTargetAssignmentMember"
	if b == nil {
		return nil, errNilValue
	}
	r := newValueReader(b, what)
	tps := r.topicPartitions()
	return tps, r.done(what)
}

func decodeCurrentAssignmentValue(b []byte) (cgCurrentAssignment, error) {
	const what = "ConsumerGroupCurrentMemberAssignment"
	var a cgCurrentAssignment
	if b == nil {
		return a, errNilValue
	}
	r := newValueReader(b, what)
	a.epoch = r.Int32()
	a.prevEpoch = r.Int32()
	a.state = r.Int8()
	a.assigned = r.topicPartitions()
	a.revoking = r.topicPartitions()
	return a, r.done(what)
}

// toTopicPartitions lists s by topic id, partitions sorted: the deterministic order the
// records are written in.
func toTopicPartitions(s partitionSet) []cgTopicPartitions {
	grouped := groupByTopic(s)
	out := make([]cgTopicPartitions, len(grouped))
	for i, t := range grouped {
		out[i] = cgTopicPartitions{id: t.id, partitions: t.partitions}
	}
	return out
}

func fromTopicPartitions(tps []cgTopicPartitions) partitionSet {
	s := make(partitionSet)
	for _, t := range tps {
		for _, p := range t.partitions {
			s[tpID{t.id, p}] = true
		}
	}
	return s
}

package broker

// The Fetch response encoder that leaves record sets in the segment files.
//
// fetchResponse wraps the kmsg.FetchResponse built by handleFetch. Partitions
// whose records come from the log carry their file ranges instead of bytes;
// AppendParts (used by the wire layer) encodes every other field itself and
// splices the ranges in as file sections, which the connection's write loop
// sends with sendfile. The encoding is byte-identical to
// kmsg.FetchResponse.AppendTo with the records filled in, for v4–v17
// (flexible from v12) — fetch_encode_test.go checks this for random
// responses at every version, and FuzzFetchEncode keeps checking it.

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/wire"
)

// fetchResponse is a FetchResponse whose record sets may live in files.
type fetchResponse struct {
	*kmsg.FetchResponse
	// records has one entry per partition in encoding order (topics in
	// order, their partitions in order). A non-nil entry replaces that
	// partition's RecordBatches with the concatenation of the ranges.
	records [][]log.FileRange
}

var _ wire.PartsResponse = (*fetchResponse)(nil)

// AppendParts implements wire.PartsResponse.
func (r *fetchResponse) AppendParts(p *wire.Parts) {
	p.Grow(fetchEncodedSizeHint(r.FetchResponse))
	appendFetchParts(p, r.FetchResponse, r.records)
}

// AppendTo implements kmsg.Response for callers that need one slice: the
// record ranges are read into memory. A range that cannot be read turns its
// partition into KAFKA_STORAGE_ERROR with no records, so the bytes are
// never corrupt.
func (r *fetchResponse) AppendTo(dst []byte) []byte {
	return r.materialize().AppendTo(dst)
}

// materialize returns a plain FetchResponse with the records read in.
func (r *fetchResponse) materialize() *kmsg.FetchResponse {
	if len(r.records) == 0 {
		return r.FetchResponse
	}
	out := *r.FetchResponse
	out.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
	i := 0
	for ti := range r.Topics {
		t := r.Topics[ti]
		t.Partitions = append([]kmsg.FetchResponseTopicPartition(nil), t.Partitions...)
		for pi := range t.Partitions {
			if i < len(r.records) && r.records[i] != nil {
				rp := &t.Partitions[pi]
				data, err := log.ReadResult{Ranges: r.records[i], Size: rangesSize(r.records[i])}.Bytes()
				if err != nil {
					rp.ErrorCode = kerr.KafkaStorageError.Code
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
					data = []byte{}
				}
				rp.RecordBatches = data
			}
			i++
		}
		out.Topics[ti] = t
	}
	return &out
}

func rangesSize(rs []log.FileRange) int64 {
	var n int64
	for _, fr := range rs {
		n += fr.Size
	}
	return n
}

// fetchEncodedSizeHint is a generous estimate of the encoded bytes outside
// the file ranges, so the buffer grows at most once.
func fetchEncodedSizeHint(v *kmsg.FetchResponse) int {
	n := 64
	for i := range v.Topics {
		t := &v.Topics[i]
		n += 32 + len(t.Topic) + len(t.Partitions)*96
		for j := range t.Partitions {
			n += len(t.Partitions[j].RecordBatches) + len(t.Partitions[j].AbortedTransactions)*24
		}
	}
	for i := range v.Brokers {
		n += 32 + len(v.Brokers[i].Host)
	}
	return n
}

// appendFetchParts encodes v like kmsg.FetchResponse.AppendTo, splicing in
// records[i] (when non-nil) as the i-th partition's record set.
func appendFetchParts(p *wire.Parts, v *kmsg.FetchResponse, records [][]log.FileRange) {
	version := v.Version
	flex := version >= 12
	dst := p.Buf
	if version >= 1 {
		dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, v.ErrorCode)
		dst = kbin.AppendInt32(dst, v.SessionID)
	}
	dst = appendArrayLen(dst, len(v.Topics), flex)
	idx := 0
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if version <= 12 {
			dst = appendString(dst, t.Topic, flex)
		} else {
			dst = append(dst, t.TopicID[:]...)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flex)
		for pi := range t.Partitions {
			rp := &t.Partitions[pi]
			dst = kbin.AppendInt32(dst, rp.Partition)
			dst = kbin.AppendInt16(dst, rp.ErrorCode)
			dst = kbin.AppendInt64(dst, rp.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, rp.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, rp.LogStartOffset)
			}
			if version >= 4 {
				at := rp.AbortedTransactions
				if flex {
					dst = kbin.AppendCompactNullableArrayLen(dst, len(at), at == nil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, len(at), at == nil)
				}
				for i := range at {
					dst = kbin.AppendInt64(dst, at[i].ProducerID)
					dst = kbin.AppendInt64(dst, at[i].FirstOffset)
					if flex {
						dst = appendTagsWithCount(dst, &at[i].UnknownTags)
					}
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, rp.PreferredReadReplica)
			}
			var ranges []log.FileRange
			if idx < len(records) {
				ranges = records[idx]
			}
			idx++
			if ranges != nil {
				size := rangesSize(ranges)
				if flex {
					dst = kbin.AppendUvarint(dst, uint32(size+1))
				} else {
					dst = kbin.AppendInt32(dst, int32(size))
				}
				p.Buf = dst
				for _, fr := range ranges {
					p.AppendFile(fr.File, fr.Pos, fr.Size)
				}
			} else {
				dst = appendNullableBytes(dst, rp.RecordBatches, flex)
			}
			if flex {
				dst = appendFetchPartitionTags(dst, rp)
			}
		}
		if flex {
			dst = appendTagsWithCount(dst, &t.UnknownTags)
		}
	}
	if flex {
		n := v.UnknownTags.Len()
		if len(v.Brokers) > 0 {
			n++
		}
		dst = kbin.AppendUvarint(dst, uint32(n))
		if len(v.Brokers) > 0 {
			dst = kbin.AppendUvarint(dst, 0)
			var body []byte
			body = appendArrayLen(body, len(v.Brokers), true)
			for i := range v.Brokers {
				b := &v.Brokers[i]
				body = kbin.AppendInt32(body, b.NodeID)
				body = appendString(body, b.Host, true)
				body = kbin.AppendInt32(body, b.Port)
				body = kbin.AppendCompactNullableString(body, b.Rack)
				body = appendTagsWithCount(body, &b.UnknownTags)
			}
			dst = kbin.AppendUvarint(dst, uint32(len(body)))
			dst = append(dst, body...)
		}
		dst = v.UnknownTags.AppendEach(dst)
	}
	p.Buf = dst
}

// appendFetchPartitionTags appends a partition's tagged fields (v12+):
// DivergingEpoch (0), CurrentLeader (1), SnapshotID (2), then unknown tags.
func appendFetchPartitionTags(dst []byte, rp *kmsg.FetchResponseTopicPartition) []byte {
	de, cl, sn := &rp.DivergingEpoch, &rp.CurrentLeader, &rp.SnapshotID
	hasDE := de.Epoch != -1 || de.EndOffset != -1 || de.UnknownTags.Len() > 0
	hasCL := cl.LeaderID != -1 || cl.LeaderEpoch != -1 || cl.UnknownTags.Len() > 0
	hasSN := sn.EndOffset != -1 || sn.Epoch != -1 || sn.UnknownTags.Len() > 0
	n := rp.UnknownTags.Len()
	for _, b := range [...]bool{hasDE, hasCL, hasSN} {
		if b {
			n++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	var scratch [64]byte
	if hasDE {
		body := kbin.AppendInt32(scratch[:0], de.Epoch)
		body = kbin.AppendInt64(body, de.EndOffset)
		body = appendTagsWithCount(body, &de.UnknownTags)
		dst = appendTagged(dst, 0, body)
	}
	if hasCL {
		body := kbin.AppendInt32(scratch[:0], cl.LeaderID)
		body = kbin.AppendInt32(body, cl.LeaderEpoch)
		body = appendTagsWithCount(body, &cl.UnknownTags)
		dst = appendTagged(dst, 1, body)
	}
	if hasSN {
		body := kbin.AppendInt64(scratch[:0], sn.EndOffset)
		body = kbin.AppendInt32(body, sn.Epoch)
		body = appendTagsWithCount(body, &sn.UnknownTags)
		dst = appendTagged(dst, 2, body)
	}
	return rp.UnknownTags.AppendEach(dst)
}

func appendTagged(dst []byte, tag uint32, body []byte) []byte {
	dst = kbin.AppendUvarint(dst, tag)
	dst = kbin.AppendUvarint(dst, uint32(len(body)))
	return append(dst, body...)
}

func appendTagsWithCount(dst []byte, t *kmsg.Tags) []byte {
	dst = kbin.AppendUvarint(dst, uint32(t.Len()))
	return t.AppendEach(dst)
}

func appendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flex bool) []byte {
	if flex {
		dst = kbin.AppendUvarint(dst, 1+uint32(len(s)))
	} else {
		dst = kbin.AppendInt16(dst, int16(len(s)))
	}
	return append(dst, s...)
}

func appendNullableBytes(dst, b []byte, flex bool) []byte {
	if b == nil {
		if flex {
			return append(dst, 0)
		}
		return kbin.AppendInt32(dst, -1)
	}
	if flex {
		dst = kbin.AppendUvarint(dst, 1+uint32(len(b)))
	} else {
		dst = kbin.AppendInt32(dst, int32(len(b)))
	}
	return append(dst, b...)
}

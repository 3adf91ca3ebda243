package metadata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// Encoding a batch: the JSON of encoding/json, byte for byte, with the
// partition changes (fencing or unfencing a broker that leads 100,000
// partitions is a batch of 100,000 of them) written directly instead of
// through reflection. TestEncodeMatchesEncodingJSON compares the two.

// Encode returns the entry bytes of b.
func (b Batch) Encode() []byte {
	if b.Records == nil {
		return []byte(`{"records":null}`)
	}
	buf := make([]byte, 0, 4096) // sized on the first change (below)
	buf = append(buf, `{"records":[`...)
	sized := false
	for i := range b.Records {
		if i > 0 {
			buf = append(buf, ',')
		}
		r := &b.Records[i]
		if r.plainChange() {
			start := len(buf)
			buf = appendChange(buf, r)
			if !sized {
				// Size the rest on the first change (a batch of changes
				// is mostly alike): growing 15 MB in steps copied it
				// several times, into fresh memory.
				sized = true
				if need := len(buf) + (len(buf)-start+1)*(len(b.Records)-1-i)*9/8 + 2; need > cap(buf) {
					buf = append(make([]byte, 0, need), buf...)
				}
			}
			continue
		}
		data, err := json.Marshal(r)
		if err != nil {
			panic(fmt.Sprintf("metadata: encoding batch: %v", err)) // only plain data types
		}
		buf = append(buf, data...)
	}
	return append(buf, "]}"...)
}

// plainChange reports whether r is a ChangePartition record with no field
// set but those of a partition change (appendChange writes only those).
// recordFields in the test lists every field of Record: one added there
// must be checked here.
func (r *Record) plainChange() bool {
	return r.Type == ChangePartition && r.Features == nil && r.ClusterID == "" && r.Broker == nil &&
		r.BrokerID == 0 && r.Epoch == 0 && r.Topic == nil && len(r.Partitions) == 0 && r.Entity == "" &&
		len(r.Configs) == 0 && r.FirstProducerID == 0 && r.ProducerIDCount == 0 && r.QuotaEntity == "" &&
		len(r.Quotas) == 0 && len(r.ACLs) == 0 && r.User == "" && r.Mechanism == "" && r.Scram == nil &&
		r.Address == "" && !r.Controller && len(r.Listeners) == 0 && r.KRaftVersions == nil
}

// appendChange appends the JSON of a plain ChangePartition record.
func appendChange(buf []byte, r *Record) []byte {
	buf = append(buf, `{"type":"change-partition"`...)
	if r.TopicName != "" {
		buf = append(buf, `,"topic_name":`...)
		buf = appendString(buf, r.TopicName)
	}
	buf = append(buf, `,"topic_id":"`...)
	buf = base64.RawURLEncoding.AppendEncode(buf, r.TopicID[:]) // ID.MarshalText's form
	buf = append(buf, '"')
	if r.Partition != 0 {
		buf = append(buf, `,"partition":`...)
		buf = strconv.AppendInt(buf, int64(r.Partition), 10)
	}
	if c := r.Change; c != nil {
		buf = append(buf, `,"change":{"replicas":`...)
		buf = appendInts(buf, c.Replicas)
		buf = append(buf, `,"isr":`...)
		buf = appendInts(buf, c.ISR)
		buf = append(buf, `,"leader":`...)
		buf = strconv.AppendInt(buf, int64(c.Leader), 10)
		buf = append(buf, `,"leader_epoch":`...)
		buf = strconv.AppendInt(buf, int64(c.LeaderEpoch), 10)
		buf = append(buf, `,"partition_epoch":`...)
		buf = strconv.AppendInt(buf, int64(c.PartitionEpoch), 10)
		for _, f := range []struct {
			name string
			v    []int32
		}{{"adding_replicas", c.AddingReplicas}, {"removing_replicas", c.RemovingReplicas},
			{"elr", c.ELR}, {"last_known_elr", c.LastKnownELR}} {
			if len(f.v) > 0 { // omitempty
				buf = append(buf, `,"`...)
				buf = append(buf, f.name...)
				buf = append(buf, `":`...)
				buf = appendInts(buf, f.v)
			}
		}
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// appendInts appends a []int32 as encoding/json does (nil is null).
func appendInts(buf []byte, v []int32) []byte {
	if v == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, n := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(n), 10)
	}
	return append(buf, ']')
}

// appendString appends s as a JSON string: directly when it needs no
// escaping (topic names: [a-zA-Z0-9._-]), else as encoding/json writes it.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			data, _ := json.Marshal(s)
			return append(buf, data...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
)

// TransactionStateTopic is the internal topic holding the coordinator's
// state.
const TransactionStateTopic = "__transaction_state"

// Record versions written to __transaction_state: TransactionLogKey v0 and
// TransactionLogValue v0 while transaction.version is below 1, v1 (flexible,
// with KIP-890's PreviousProducerId, NextProducerId and
// ClientTransactionVersion tagged fields) from 1 on, as Kafka writes them
// (kafka-dump-log --transaction-log-decoder reads both).
const keyVersion = 0

func encodeKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

// encodeValue is the record value of s at version (0 or 1); Empty carries a
// null partition list, as Kafka writes it.
func encodeValue(s snapshot, version int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = version
	if version >= 1 {
		v.PreviousProducerID = s.prevProducerID
		v.NextProducerID = s.nextProducerID
		v.ClientTransactionVersion = 0
		if s.tv2 {
			v.ClientTransactionVersion = 2
		}
	}
	v.ProducerID = s.producerID
	v.ProducerEpoch = s.producerEpoch
	v.TimeoutMillis = s.timeoutMs
	v.State = kmsg.TransactionState(s.state)
	v.LastUpdateTimestamp = s.updateMs
	v.StartTimestamp = s.startMs
	if s.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range s.sortedPartitions() {
			n := len(v.Topics)
			if n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
				n++
			}
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
		}
	}
	return v.AppendTo(nil)
}

// decodeRecord decodes one __transaction_state record; del reports a
// tombstone. Unknown key versions are reported with ok false.
func decodeRecord(key, value []byte) (id string, s snapshot, del bool, ok bool, err error) {
	if len(key) < 2 {
		return "", s, false, false, errors.New("short key")
	}
	if kv := int16(binary.BigEndian.Uint16(key)); kv != 0 {
		return "", s, false, false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", s, false, false, fmt.Errorf("key: %w", err)
	}
	if value == nil {
		return k.TransactionalID, s, true, true, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", s, false, false, fmt.Errorf("value of %q: %w", k.TransactionalID, err)
	}
	st := State(v.State)
	if !st.valid() {
		return "", s, false, false, fmt.Errorf("value of %q: unknown state %d", k.TransactionalID, v.State)
	}
	s = snapshot{
		producerID:     v.ProducerID,
		prevProducerID: -1,
		producerEpoch:  v.ProducerEpoch,
		lastEpoch:      -1,
		timeoutMs:      v.TimeoutMillis,
		state:          st,
		startMs:        v.StartTimestamp,
		updateMs:       v.LastUpdateTimestamp,
		nextProducerID: -1,
	}
	if v.Version >= 1 {
		if v.PreviousProducerID >= 0 {
			s.prevProducerID = v.PreviousProducerID
		}
		if v.NextProducerID >= 0 {
			s.nextProducerID = v.NextProducerID
		}
		s.tv2 = v.ClientTransactionVersion >= 2
	}
	if st != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				if s.partitions == nil {
					s.partitions = make(map[TopicPartition]struct{})
				}
				s.partitions[TopicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return k.TransactionalID, s, false, true, nil
}

// encodeBatch builds the uncompressed v2 batch holding one record for id
// (value nil: a tombstone).
func encodeBatch(id string, value []byte, nowMs int64) []byte {
	b := batch.NewBuilder()
	b.BaseTimestamp = nowMs
	b.AddAt(nowMs, encodeKey(id), value)
	out, err := b.Build()
	if err != nil { // one small uncompressed record cannot fail
		panic("txn: encoding a __transaction_state record: " + err.Error())
	}
	return out
}

func (s snapshot) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(s.partitions))
	for tp := range s.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

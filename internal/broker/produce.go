// Produce (key 0): v3–v12 served; v0–v2 are advertised (librdkafka needs v0
// to compress) but answered UNSUPPORTED_VERSION (registry.go), as Kafka 4.
//
// For every partition: the records must hold exactly one v2 batch (Kafka's
// rule from v3 on; anything else is INVALID_RECORD, a bad length or CRC is
// CORRUPT_MESSAGE), zstd needs v7+ (UNSUPPORTED_COMPRESSION_TYPE), and the
// batch is handed to the partition log, which validates it against the
// topic config (max.message.bytes → MESSAGE_TOO_LARGE, timestamps →
// INVALID_TIMESTAMP, null keys on compacted topics → INVALID_RECORD with
// per-record errors), runs the idempotence check (duplicate → the original
// offsets; OUT_OF_ORDER_SEQUENCE_NUMBER; INVALID_PRODUCER_EPOCH) and appends
// it. I/O failures are KAFKA_STORAGE_ERROR and logged. Error messages go to
// error_message and record_errors (v8+).
//
// acks: 0 gets no response (but a failed partition closes the connection,
// as in Kafka, so the client notices), 1 and -1 are answered once the log accepted the
// batch (a single node: every replica is in sync; the log forces an fsync
// first when flush.messages/flush.ms ask for it). Any other value is
// INVALID_REQUIRED_ACKS. timeout_ms has nothing to wait for. With
// min.insync.replicas above 1, acks=-1 gets NOT_ENOUGH_REPLICAS, as a Kafka
// cluster with a single in-sync replica answers.
//
// Transactional batches go through the same path once the transaction
// coordinator confirms the producer added the partition to its ongoing
// transaction (Kafka's transaction.partition.verification.enable, default
// true: INVALID_TXN_STATE otherwise); the partition's producer state
// (internal/producer) then opens the transaction at its first batch and
// fences stale epochs. Internal
// topics (__consumer_offsets, __transaction_state) are not writable by
// clients (INVALID_TOPIC_EXCEPTION), as in Kafka.
package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.Produce, (*Broker).handleProduce) }

// dataLeaderEpoch is every partition's leader epoch on this single node
// (Metadata reports 0 too).
const dataLeaderEpoch int32 = 0

// isInternalTopic reports Kafka's internal topics, which clients may not
// produce to.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}

func (b *Broker) handleProduce(_ context.Context, r *wire.Request, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	var work []produceItem
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			work = append(work, produceItem{sp: sp, topic: rt.Topic, rp: rp})
		}
	}
	if parallelProduce(work) {
		var wg sync.WaitGroup
		for i := range work {
			wg.Add(1)
			go func(it *produceItem) {
				defer wg.Done()
				it.err = b.producePartition(it.sp, req, it.topic, it.rp)
			}(&work[i])
		}
		wg.Wait()
	} else {
		for i := range work {
			work[i].err = b.producePartition(work[i].sp, req, work[i].topic, work[i].rp)
		}
	}
	for i := range work {
		it := &work[i]
		if it.err == nil {
			continue
		}
		sp, err := it.sp, it.err
		sp.ErrorCode = errorCode(err)
		sp.ErrorMessage = errorMessage(err)
		var ae *log.AppendError
		if errors.As(err, &ae) {
			for _, re := range ae.RecordErrors {
				er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				er.RelativeOffset = int32(re.Index)
				msg := re.Msg
				er.ErrorMessage = &msg
				sp.ErrorRecords = append(sp.ErrorRecords, er)
			}
		}
		if sp.ErrorCode == kerr.KafkaStorageError.Code || sp.ErrorCode == kerr.UnknownServerError.Code {
			b.logger.Error("produce failed", "topic", it.topic, "partition", it.rp.Partition,
				"client_id", r.Header.ClientIDString(), "err", err)
		}
	}
	if req.Acks == 0 {
		// No response is expected, so a failure closes the connection: the
		// client notices and refreshes its metadata (Kafka does the same).
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, fmt.Errorf("acks=0 produce to %s/%d failed with error code %d; closing the connection as Kafka does",
						t.Topic, p.Partition, p.ErrorCode)
				}
			}
		}
		return nil, nil
	}
	return resp, nil
}

// produceItem is one partition of a produce request and its outcome.
type produceItem struct {
	sp    *kmsg.ProduceResponseTopicPartition
	topic string
	rp    kmsg.ProduceRequestTopicPartition
	err   error
}

// parallelMinBytes is the smallest produce (all partitions together) whose
// partitions are appended concurrently: below it a goroutine per partition
// costs more than it saves.
const parallelMinBytes = 256 << 10

// parallelProduce reports whether the partitions of one request are worth
// appending concurrently: more than one, enough bytes, and no partition
// named twice (two batches for one partition must keep their order).
func parallelProduce(work []produceItem) bool {
	if len(work) < 2 {
		return false
	}
	total := 0
	for i := range work {
		total += len(work[i].rp.Records)
	}
	if total < parallelMinBytes {
		return false
	}
	seen := make(map[string]map[int32]bool, 1)
	for i := range work {
		ps := seen[work[i].topic]
		if ps == nil {
			ps = make(map[int32]bool, len(work))
			seen[work[i].topic] = ps
		}
		if ps[work[i].rp.Partition] {
			return false
		}
		ps[work[i].rp.Partition] = true
	}
	return true
}

// producePartition appends one partition's records and fills sp's offsets;
// an error carries the partition's Kafka error code.
func (b *Broker) producePartition(sp *kmsg.ProduceResponseTopicPartition, req *kmsg.ProduceRequest, topic string, rp kmsg.ProduceRequestTopicPartition) error {
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		return errorf(kerr.InvalidRequiredAcks, "acks must be -1, 0 or 1, not %d", req.Acks)
	}
	if isInternalTopic(topic) {
		return errorf(kerr.InvalidTopicException, "cannot append to internal topic %s", topic)
	}
	l, t, code := b.partitionLog(topic, rp.Partition)
	if code != 0 {
		return &Error{Code: code}
	}
	if req.Acks == -1 {
		if n := b.minInsyncReplicas(t); n > 1 {
			// One node is one in-sync replica: acks=all can never be met, as
			// on a Kafka cluster that lost all but one replica.
			return errorf(kerr.NotEnoughReplicas, "min.insync.replicas=%d but this single-node broker has 1 in-sync replica", n)
		}
	}
	h, err := singleBatch(rp.Records, req.Version)
	if err != nil {
		return err
	}
	if h.IsTransactional() {
		if err := b.verifyTxnPartition(h.ProducerID, h.ProducerEpoch, topic, rp.Partition); err != nil {
			return err
		}
	}
	res, err := l.Append(rp.Records, log.AppendOptions{LeaderEpoch: dataLeaderEpoch})
	if err != nil {
		return err
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	if res.Duplicate {
		sp.LogAppendTime = -1
	}
	sp.LogStartOffset = res.LogStartOffset
	return nil
}

// singleBatch applies Kafka's produce-request rules (v3+) to one partition's
// records: exactly one batch, magic 2, no zstd before v7. It returns the
// batch header. The full validation (CRC, records) is the log's.
func singleBatch(records []byte, version int16) (batch.Header, error) {
	if len(records) == 0 {
		return batch.Header{}, errorf(kerr.InvalidRecord, "produce requests with version %d must have at least one record batch per partition", version)
	}
	if len(records) > batch.OffMagic && records[batch.OffMagic] != batch.Magic {
		return batch.Header{}, errorf(kerr.InvalidRecord, "produce requests with version %d may only contain record batches with magic 2, not %d", version, int8(records[batch.OffMagic]))
	}
	h, err := batch.ParseHeader(records)
	if err != nil {
		return batch.Header{}, err
	}
	if size := h.TotalSize(); size != len(records) {
		if size < len(records) {
			return batch.Header{}, errorf(kerr.InvalidRecord, "produce requests with version %d may contain exactly one record batch per partition", version)
		}
		return batch.Header{}, errorf(kerr.CorruptMessage, "record batch of %d bytes truncated to %d", size, len(records))
	}
	if h.Compression() == batch.Zstd && version < 7 {
		return batch.Header{}, errorf(kerr.UnsupportedCompressionType, "zstd compression needs produce version 7 or later, got %d", version)
	}
	return h, nil
}

// minInsyncReplicas is the topic's min.insync.replicas (override, else the
// broker's setting, else 1), read without resolving the whole topic config.
func (b *Broker) minInsyncReplicas(t *topics.Topic) int64 {
	n, err := strconv.ParseInt(b.topicSetting(t, "min.insync.replicas"), 10, 32)
	if err != nil {
		return 1 // absent; a bad value never passes config validation
	}
	return n
}

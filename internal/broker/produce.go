// Produce (key 0): v3–v13 served (v13 names topics by id, KIP-516: an id no
// topic has is UNKNOWN_TOPIC_ID, and the answer names topics by id too); v0–v2 are advertised (librdkafka needs v0
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
// error_message and record_errors (v8+). A transactional batch is admitted
// by the transaction coordinator (txn_coord_verify.go): below v12 its
// partition must have been added with AddPartitionsToTxn; from v12
// (transaction version 2, KIP-890 part 2) the partition is added here.
//
// acks: 0 gets no response (but a failed partition closes the connection,
// as in Kafka, so the client notices), 1 and -1 are answered once the log accepted the
// batch (a single node: every replica is in sync). Any other value is
// INVALID_REQUIRED_ACKS. timeout_ms has nothing to wait for. With
// min.insync.replicas above 1, acks=-1 gets NOT_ENOUGH_REPLICAS, as a Kafka
// cluster with a single in-sync replica answers.
//
// Durability and concurrency: when flush.messages asks for an fsync, the
// answer waits for it as a wire.Deferred response; the connection goes on
// reading and appending its next requests meanwhile, so one fsync covers the
// records of several pipelined requests (group commit). Answers keep the
// request order; a failed fsync answers KAFKA_STORAGE_ERROR. The partitions
// of a request of 256 KiB or more are appended concurrently, and the
// partitions' fsyncs run concurrently.
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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/batch"
	"github.com/sluice-broker/sluice/internal/gopool"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/quota"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.Produce, (*Broker).handleProduce) }

// produceTopicIDVersion is Produce's first version naming topics by id
// (KIP-516): the response names them by id too.
const produceTopicIDVersion = 13

var errUnknownTopicID = &Error{Code: kerr.UnknownTopicID.Code, Msg: "This server does not host this topic ID."}

// isInternalTopic reports Kafka's internal topics, which clients may not
// produce to.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}

func (b *Broker) handleProduce(_ context.Context, r *wire.Request, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	work := make([]produceItem, 0, n)
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		var idErr error
		if req.Version >= produceTopicIDVersion {
			// v13 names topics by id (topic_ids.go); an unknown id is
			// UNKNOWN_TOPIC_ID for each of its partitions, before any
			// authorization, as Kafka answers it.
			if name, ok := b.topicNameByID(rt.TopicID); ok {
				rt.Topic = name
			} else {
				idErr = errUnknownTopicID
			}
		}
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			work = append(work, produceItem{sp: sp, topic: rt.Topic, topicID: rt.TopicID, rp: rp, err: idErr})
		}
	}
	b.authorizeProduce(r, req, work)
	if parallelProduce(work) {
		var wg sync.WaitGroup
		wg.Add(len(work))
		for i := range work {
			appendWorkers.Go(appendTask{b: b, it: &work[i], req: req, wg: &wg})
		}
		wg.Wait()
	} else {
		for i := range work {
			b.producePartition(&work[i], req)
		}
	}
	// producer_byte_rate on the request's size, as Kafka (client_quotas_enforce.go)
	throttle(r, resp, b.recordQuota(r, quota.Produce, float64(r.Size)))
	if req.Acks == 0 {
		// No response is expected, so a failure closes the connection: the
		// client notices and refreshes its metadata (Kafka does the same).
		for i := range work {
			if it := &work[i]; it.err != nil {
				b.logProduceError(r, it)
				return nil, fmt.Errorf("acks=0 produce to %s/%d failed with error code %d; closing the connection as Kafka does",
					it.topic, it.rp.Partition, errorCode(it.err))
			}
		}
		return nil, nil
	}
	var syncs []*produceItem
	for i := range work {
		if work[i].err == nil && (work[i].syncTo > 0 || work[i].replicateTo > 0) {
			syncs = append(syncs, &work[i])
		}
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	finish := func() {
		for i := range work {
			b.fillProduceError(r, &work[i])
		}
	}
	if len(syncs) == 0 {
		finish()
		return resp, nil
	}
	// flush.messages asked for an fsync: answer once it is done, without
	// holding the connection meanwhile (the next request's records then
	// share the fsync).
	return &wire.Deferred{Response: resp, Wait: func() error {
		waitDurable(syncs)
		waitReplicated(syncs, timeout)
		finish()
		return nil
	}}, nil
}

// waitReplicated waits, for the acks=all items, until the in-sync replicas
// hold their records (request.timeout: REQUEST_TIMED_OUT); a failure becomes
// the item's error.
func waitReplicated(items []*produceItem, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, it := range items {
		if it.err == nil && it.replicateTo > 0 {
			it.err = it.p.WaitReplicated(ctx, it.epoch, it.replicateTo, it.minISR)
		}
	}
}

// waitDurable waits until every item's records are durable, the partitions'
// fsyncs running concurrently; a failure becomes the item's error.
func waitDurable(items []*produceItem) {
	// Only the items with a sync to wait for (the others wait for their
	// replicas only); no copy of the list on this per-request path.
	var one *produceItem
	n := 0
	for _, it := range items {
		if it.syncTo > 0 {
			one, n = it, n+1
		}
	}
	switch n {
	case 0:
		return
	case 1:
		one.err = one.p.WaitDurable(one.syncTo)
		return
	}
	var wg sync.WaitGroup
	for _, it := range items {
		if it.syncTo <= 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			it.err = it.p.WaitDurable(it.syncTo)
		}()
	}
	wg.Wait()
}

// fillProduceError writes it's error, if any, into its response partition.
func (b *Broker) fillProduceError(r *wire.Request, it *produceItem) {
	if it.err == nil {
		return
	}
	sp, err := it.sp, it.err
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	sp.ErrorCode = errorCode(err)
	sp.ErrorMessage = produceErrorMessage(err, it.topic, it.rp.Partition) // produce_message.go
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
	b.logProduceError(r, it)
}

// logProduceError logs failures that are the broker's, not the client's.
func (b *Broker) logProduceError(r *wire.Request, it *produceItem) {
	if code := errorCode(it.err); code == kerr.KafkaStorageError.Code || code == kerr.UnknownServerError.Code {
		b.logger.Error("produce failed", "topic", it.topic, "partition", it.rp.Partition,
			"client_id", r.Header.ClientIDString(), "err", it.err)
	}
}

// produceItem is one partition of a produce request and its outcome.
type produceItem struct {
	sp      *kmsg.ProduceResponseTopicPartition
	topic   string
	topicID [16]byte // v13+: the id the request named the topic by
	rp      kmsg.ProduceRequestTopicPartition
	err     error
	// p and syncTo: the records are appended but must be durable up to
	// syncTo (flush.messages) before the answer.
	p      *replica.Partition
	syncTo int64
	// replicateTo: acks=all waits until the high watermark of p reaches it
	// in leader epoch epoch, with at least minISR in-sync replicas.
	replicateTo int64
	epoch       int32
	minISR      int
}

// parallelMinBytes is the smallest produce (all partitions together) whose
// partitions are appended concurrently: below it a goroutine per partition
// costs more than it saves.
const parallelMinBytes = 256 << 10

// appendTask is one partition's append of a produce request whose
// partitions are appended concurrently.
type appendTask struct {
	b   *Broker
	it  *produceItem
	req *kmsg.ProduceRequest
	wg  *sync.WaitGroup
}

// appendWorkers run the appendTasks of every broker of the process on
// goroutines that keep their grown stacks between requests: a new goroutine
// per partition grew and copied its stack on every append (5 % of the
// broker's CPU on 100-byte records over 16 partitions). 64 waiting goroutines
// cover a request's partitions and then some; more are started when needed.
var appendWorkers = gopool.New(64, nil, func(t appendTask) {
	defer t.wg.Done()
	t.b.producePartition(t.it, t.req)
})

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

// producePartition appends one partition's records and fills its answer's
// offsets, or sets it.err (carrying the partition's Kafka error code).
func (b *Broker) producePartition(it *produceItem, req *kmsg.ProduceRequest) {
	if it.err != nil {
		return // denied (authorizeProduce)
	}
	it.err = b.appendPartition(it, req)
}

// authorizeProduce applies Kafka's checks before anything is appended:
// transactional records need WRITE on the transactional id (else every
// partition fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each
// topic needs WRITE (else TOPIC_AUTHORIZATION_FAILED, whether the topic
// exists or not). Idempotent producers need nothing more here (Kafka 3.0+:
// InitProducerId checked IDEMPOTENT_WRITE or WRITE on some topic).
func (b *Broker) authorizeProduce(r *wire.Request, req *kmsg.ProduceRequest, work []produceItem) {
	if b.authz == nil {
		return
	}
	transactional := false
	for i := range work {
		if h, err := batch.ParseHeader(work[i].rp.Records); err == nil && h.IsTransactional() {
			transactional = true
			break
		}
	}
	if transactional && (req.TransactionID == nil ||
		!b.allowed(r, authz.OpWrite, authz.ResourceTransactionalID, *req.TransactionID)) {
		for i := range work {
			work[i].err = &Error{Code: kerr.TransactionalIDAuthorizationFailed.Code, Msg: "Transactional Id authorization failed."}
		}
		return
	}
	names := make([]string, 0, len(work))
	for i := range work {
		if work[i].err == nil { // not an unknown topic id
			names = append(names, work[i].topic)
		}
	}
	denied := b.deniedTopics(r, authz.OpWrite, names)
	for i := range work {
		if work[i].err == nil && denied[work[i].topic] {
			work[i].err = &Error{Code: kerr.TopicAuthorizationFailed.Code, Msg: "Topic authorization failed."}
		}
	}
}

func (b *Broker) appendPartition(it *produceItem, req *kmsg.ProduceRequest) error {
	sp, topic, rp := it.sp, it.topic, it.rp
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		return errorf(kerr.InvalidRequiredAcks, "acks must be -1, 0 or 1, not %d", req.Acks)
	}
	if isInternalTopic(topic) {
		return errorf(kerr.InvalidTopicException, "cannot append to internal topic %s", topic)
	}
	part, t, code := b.partition(topic, rp.Partition)
	if code != 0 {
		return &Error{Code: code}
	}
	if req.Version >= produceTopicIDVersion && t.ID != topics.ID(it.topicID) {
		return errUnknownTopicID // deleted and re-created under its name since it was resolved
	}
	requireISR := 0
	if req.Acks == -1 {
		requireISR = int(b.minInsyncReplicas(t))
	}
	h, err := singleBatch(rp.Records, req.Version)
	if err != nil {
		return err
	}
	release := func() {}
	if h.IsTransactional() {
		// Admitted by the coordinator, whose markers for this transaction
		// wait until the append is done (no batch can land after them).
		if release, err = b.beginTxnProduce(req.TransactionID, h.ProducerID, h.ProducerEpoch, topic, rp.Partition, req.Version >= 12); err != nil {
			return err
		}
	}
	// acks=0 has no answer to hold back, so it waits for the fsync here.
	epoch := part.LeaderEpoch()
	res, err := part.AppendAsLeader(rp.Records, log.AppendOptions{DeferSync: req.Acks != 0}, requireISR)
	release()
	if err != nil {
		return err
	}
	b.countProduced(part, rp.Records, res) // topic_metrics.go
	it.p, it.syncTo = part, res.SyncOffset
	if req.Acks == -1 && part.NeedsReplication() && !chaosBugAckEarly {
		// Answered once the in-sync replicas hold the records.
		it.replicateTo, it.epoch, it.minISR = res.LastOffset+1, epoch, max(requireISR, 1)
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

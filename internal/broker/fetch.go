// Fetch (key 1), v4–v18 (v18 adds a follower's HighWatermark, KIP-1166, a tagged
// field Sluice's leaders ignore: a follower's fetch is not answered early when
// its high watermark is behind).
//
// Partitions are read in request order (or, for an incremental session, in
// the session's order) from their logs: whole stored batches, byte for byte,
// from the fetch offset, each partition limited to partition_max_bytes and
// the whole response to max_bytes (capped by the broker's fetch.max.bytes).
// Until some partition returns data, a batch larger than the limits is
// returned whole (Kafka's rule, so a consumer can always make progress).
//
// Long poll: when fewer than min_bytes are available the request waits up to
// max_wait_ms, woken by the logs' append notifications (log.Wait) — no
// polling — and answers as soon as min_bytes are there, on any error, or
// when the connection closes.
//
// Fetch sessions (KIP-227, v7+): see internal/fetchsession. Incremental
// responses carry only partitions with records, errors or a changed high
// watermark / log start offset; partitions that returned data move to the
// back of the session so the others are served first next time. Session
// errors are top-level FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
// or FETCH_SESSION_TOPIC_ID_ERROR. max.incremental.fetch.session.cache.slots
// (1000) bounds the cache.
//
// Per partition: UNKNOWN_TOPIC_OR_PARTITION (by name, v4–v12),
// UNKNOWN_TOPIC_ID (v13+), OFFSET_OUT_OF_RANGE (offset below the log start
// or past the end; -1 offsets in the answer as Kafka), FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH for a current_leader_epoch other than 0 (-1 skips the
// check), UNSUPPORTED_COMPRESSION_TYPE for v4–v9 on a topic whose
// compression.type is zstd (as Kafka: those clients cannot read zstd).
//
// Isolation: read_uncommitted (0) returns data up to the high watermark,
// with a null aborted-transactions list. read_committed (1) returns only
// whole batches below the last stable offset (the first offset of the
// earliest ongoing transaction), with every aborted transaction (producer
// id, first offset) that overlaps the data returned — Kafka's rule: its
// abort marker is at or after the fetch offset and its first offset is
// below the end of the data — so the client drops those records; an empty
// list when nothing overlaps. last_stable_offset is sent for both levels.
//
// Follower fetches (replica_id >= 0; replica_state from v15) read up to the
// log end, not the high watermark, and each tells the partition how far that
// follower's log reaches (internal/replica: the high watermark moves with
// the in-sync set). A consumer's fetch is never answered above the high
// watermark.
//
// Zero copy: record sets are not read into memory. The response carries
// the segment file ranges (fetch_encode.go) and the connection's write loop
// sends them with sendfile(2) from explicit offsets (internal/wire),
// pinning the segment file's descriptor in the log's descriptor cache for
// the length of the transfer (an idle descriptor evicted in between is
// reopened). A segment deleted in between stays readable for
// file.delete.delay.ms; a file that cannot be reopened (its partition was
// deleted) ends the connection (the client retries).

package broker

import (
	"context"
	"reflect"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/fetchsession"
	"github.com/sluice-broker/sluice/internal/log"
	"github.com/sluice-broker/sluice/internal/replica"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.Fetch, (*Broker).handleFetch) }

// defaultFetchMaxBytes is Kafka's fetch.max.bytes (55 MiB).
const defaultFetchMaxBytes = 57671680

func (b *Broker) startFetchSessions() error {
	slots := 0 // fetchsession's default: 1000
	if v, ok := b.cfg.Raw["max.incremental.fetch.session.cache.slots"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			slots = n
			if n == 0 {
				slots = -1 // 0 slots: sessions disabled
			}
		}
	}
	b.fetchSessions = fetchsession.NewCache(fetchsession.Options{Slots: slots})
	return nil
}

func (b *Broker) fetchMaxBytes() int32 {
	if v, ok := b.cfg.Raw["fetch.max.bytes"]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
			return int32(n)
		}
	}
	return defaultFetchMaxBytes
}

// fetchTarget is one partition of the fetch with what reading it produced.
type fetchTarget struct {
	topic   string
	topicID [16]byte
	p       *replica.Partition
	errCode int16
	res     log.ReadResult
	err     error
	aborted []log.AbortedTxn // read_committed: what overlaps res
	// preferred is the replica the consumer should read from instead
	// (KIP-392, follower_fetch.go), when hasPreferred.
	preferred    int32
	hasPreferred bool
}

func (b *Broker) handleFetch(ctx context.Context, r *wire.Request, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	usesIDs := req.Version >= 13

	sreq := fetchsession.Request{SessionID: req.SessionID, SessionEpoch: req.SessionEpoch, UsesTopicIDs: usesIDs}
	if req.Version < 7 {
		sreq.SessionID, sreq.SessionEpoch = 0, -1
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			sreq.Partitions = append(sreq.Partitions, fetchsession.RequestPartition{
				Key: fetchKey(usesIDs, t.Topic, t.TopicID, p.Partition),
				PartitionState: fetchsession.PartitionState{
					FetchOffset:        p.FetchOffset,
					LogStartOffset:     p.LogStartOffset,
					MaxBytes:           p.PartitionMaxBytes,
					CurrentLeaderEpoch: p.CurrentLeaderEpoch,
					LastFetchedEpoch:   p.LastFetchedEpoch,
				},
			})
		}
	}
	for _, f := range req.ForgottenTopics {
		for _, p := range f.Partitions {
			sreq.Forgotten = append(sreq.Forgotten, fetchKey(usesIDs, f.Topic, f.TopicID, p))
		}
	}
	fctx := b.fetchSessions.NewContext(sreq)
	if fctx.ErrorCode != 0 {
		b.logger.Debug("fetch session error", "err", fctx.Message, "client_id", r.Header.ClientIDString())
		resp.ErrorCode = fctx.ErrorCode
		return resp, nil
	}

	targets := make([]fetchTarget, len(fctx.Partitions))
	consumer := fetchReplicaID(req) < 0
	for i, p := range fctx.Partitions {
		targets[i] = b.resolveFetchTarget(p, req.Version, consumer)
	}
	b.authorizeFetch(r, req, targets)
	if consumer {
		b.choosePreferredReplicas(r, req, targets, func(i int) int64 { return fctx.Partitions[i].FetchOffset })
	}

	// The answer's budget: fetch.max.bytes, or less if the request asks
	// (KIP-74; 0 or less then means the first batch only, as in Kafka).
	maxBytes := b.fetchMaxBytes()
	if req.MaxBytes < maxBytes {
		maxBytes = max(req.MaxBytes, 0)
	}
	committed := req.Version >= 4 && req.IsolationLevel == 1
	replica := fetchReplicaID(req)
	if replica < 0 {
		maxBytes = b.fetchQuotaBound(r, maxBytes) // client_quotas_enforce.go
	}
	if replica >= 0 {
		committed = false // followers copy the log up to its end
	}
	wait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond
	deadline := r.Received.Add(wait)
	if r.Received.IsZero() {
		deadline = time.Now().Add(wait)
	}
	for {
		// Take the wake-up channels before reading, so an append between
		// the read and the wait is not missed.
		var waits []<-chan struct{}
		if wait > 0 {
			waits = make([]<-chan struct{}, 0, len(targets))
			for i := range targets {
				if targets[i].p != nil {
					waits = append(waits, targets[i].p.Wait())
				}
			}
		}
		total, failed := b.readFetchTargets(fctx, targets, maxBytes, committed, replica)
		if failed || total >= int64(req.MinBytes) || len(waits) == 0 || !time.Now().Before(deadline) {
			break
		}
		if !waitAny(ctx, waits, deadline) {
			// Deadline or connection gone: one last read so the answer is
			// current, then respond.
			b.readFetchTargets(fctx, targets, maxBytes, committed, replica)
			break
		}
	}
	if consumer {
		b.countConsumerBytes(targets)
	}
	records := b.buildFetchResponse(resp, fctx, targets, usesIDs, committed)
	resp.SessionID = fctx.Finish()
	if replica < 0 && b.throttleFetch(r, resp, targets, maxBytes) { // client_quotas_enforce.go
		records = nil // throttled: the partitions without their records, as Kafka
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].RecordBatches = []byte{}
			}
		}
	}
	if records == nil {
		return resp, nil
	}
	return &fetchResponse{FetchResponse: resp, records: records}, nil
}

// fetchReplicaID is the follower a fetch comes from, -1 for a consumer.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

func fetchKey(usesIDs bool, topic string, id [16]byte, partition int32) fetchsession.Key {
	if usesIDs {
		return fetchsession.Key{TopicID: id, Partition: partition}
	}
	return fetchsession.Key{Topic: topic, Partition: partition}
}

// resolveFetchTarget finds the log of a session partition. A consumer's
// Fetch v11+ may be served by any replica (KIP-392), others by the leader.
func (b *Broker) resolveFetchTarget(p fetchsession.RequestPartition, version int16, consumer bool) fetchTarget {
	ft := fetchTarget{topic: p.Topic, topicID: p.TopicID}
	if p.Topic == "" {
		t, ok := b.topicByID(p.TopicID)
		if !ok || topics.ID(p.TopicID).IsZero() {
			ft.errCode = kerr.UnknownTopicID.Code
			return ft
		}
		ft.topic = t.Name
	}
	part, t, code := b.partition(ft.topic, p.Key.Partition)
	if code != 0 {
		ft.errCode = code
		return ft
	}
	if p.Topic == "" && t.ID != topics.ID(p.TopicID) {
		ft.errCode = kerr.UnknownTopicID.Code // recreated under the same name
		return ft
	}
	check := part.CheckLeader
	if consumer && version >= followerFetchVersion {
		check = part.CheckReplica
	}
	if c := check(p.CurrentLeaderEpoch); c != 0 {
		ft.errCode = c
		return ft
	}
	if version < 10 && b.topicSetting(t, "compression.type") == "zstd" {
		// Clients that old cannot read zstd; Kafka refuses by the topic's codec.
		ft.errCode = kerr.UnsupportedCompressionType.Code
		return ft
	}
	ft.p = part
	return ft
}

// readFetchTargets reads every partition within the byte limits. It
// returns the bytes available and whether any partition failed (which ends
// a long poll at once, as in Kafka).
func (b *Broker) readFetchTargets(fctx *fetchsession.Context, targets []fetchTarget, maxBytes int32, committed bool, replica int32) (int64, bool) {
	remaining := int64(maxBytes)
	var total int64
	failed := false
	minOne := true
	for i := range targets {
		ft := &targets[i]
		if ft.p == nil {
			failed = true
			continue
		}
		p := fctx.Partitions[i]
		if ft.hasPreferred {
			// Sent to another replica: the leader's offsets, no records,
			// and the answer goes out now (as Kafka's).
			ft.res = log.ReadResult{HighWatermark: ft.p.HighWatermark(), LastStableOffset: ft.p.LastStableOffset(),
				LogStartOffset: ft.p.LogStartOffset()}
			ft.err = nil
			failed = true
			continue
		}
		limit := min(int64(max(p.MaxBytes, 0)), remaining)
		ft.aborted = nil
		if replica >= 0 {
			ft.res, ft.err = b.readForReplica(ft, replica, p.FetchOffset, p.LogStartOffset, limit, minOne)
		} else {
			ft.res, ft.err = ft.p.Read(p.FetchOffset, int(limit), minOne, committed)
		}
		if committed && ft.err == nil && ft.res.Size > 0 {
			ft.aborted = ft.p.AbortedTxns(p.FetchOffset, ft.res.NextOffset)
		}
		if ft.err != nil {
			failed = true
			continue
		}
		if ft.res.Size > 0 {
			minOne = false
			total += ft.res.Size
			remaining = max(remaining-ft.res.Size, 0)
		}
	}
	return total, failed
}

// waitAny blocks until one of chans is closed (true), or the deadline
// passes or ctx is done (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, deadline time.Time) bool {
	defer noteWait(ctx, time.Now()) // not work for the request quota (client_quotas.go)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}

// buildFetchResponse turns the read results into the response, letting the
// session context drop unchanged partitions of an incremental fetch. It
// returns the file ranges of each included partition in encoding order
// (nil entries for partitions without records), or nil when no partition
// has records.
func (b *Broker) buildFetchResponse(resp *kmsg.FetchResponse, fctx *fetchsession.Context, targets []fetchTarget, usesIDs, committed bool) [][]log.FileRange {
	var cur *kmsg.FetchResponseTopic
	var records [][]log.FileRange
	included, withRecords := 0, 0
	for i := range targets {
		ft := &targets[i]
		p := fctx.Partitions[i]
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = p.Key.Partition
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		// Records is nullable in the schema, but Kafka always sends an empty
		// set and librdkafka rejects a null one ("invalid MessageSetSize -1").
		rp.RecordBatches = []byte{}
		var ranges []log.FileRange
		switch {
		case ft.errCode != 0:
			rp.ErrorCode = ft.errCode
		case ft.err != nil:
			rp.ErrorCode = errorCode(ft.err)
			if rp.ErrorCode != kerr.OffsetOutOfRange.Code {
				b.logger.Error("fetch read failed", "topic", ft.topic, "partition", rp.Partition, "err", ft.err)
			}
		default:
			rp.HighWatermark = ft.res.HighWatermark
			rp.LastStableOffset = ft.res.LastStableOffset
			rp.LogStartOffset = ft.res.LogStartOffset
			if ft.res.Size > 0 {
				ranges = ft.res.Ranges
			}
			if committed {
				rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(ft.aborted))
				for _, a := range ft.aborted {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
					rp.AbortedTransactions = append(rp.AbortedTransactions, at)
				}
			}
		}
		if ft.hasPreferred && rp.ErrorCode == 0 {
			rp.PreferredReadReplica = ft.preferred
		}
		if !fctx.Include(i, fetchsession.Result{
			ErrorCode:            rp.ErrorCode,
			HighWatermark:        rp.HighWatermark,
			LastStableOffset:     rp.LastStableOffset,
			LogStartOffset:       rp.LogStartOffset,
			HasRecords:           ranges != nil,
			PreferredReadReplica: rp.PreferredReadReplica >= 0,
		}) {
			continue
		}
		if cur == nil || (usesIDs && cur.TopicID != p.TopicID) || (!usesIDs && cur.Topic != p.Topic) {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = ft.topic, p.TopicID
			resp.Topics = append(resp.Topics, t)
			cur = &resp.Topics[len(resp.Topics)-1]
		}
		cur.Partitions = append(cur.Partitions, rp)
		if ranges != nil {
			if records == nil {
				records = make([][]log.FileRange, included, len(targets))
			}
			withRecords++
		}
		if records != nil {
			records = append(records, ranges)
		}
		included++
	}
	if withRecords == 0 {
		return nil
	}
	return records
}

// authorizeFetch applies Kafka's checks: a replica fetch (replica id >= 0)
// needs CLUSTER_ACTION on the cluster, else every partition fails with
// TOPIC_AUTHORIZATION_FAILED; a consumer needs READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions (an unknown topic id stays
// UNKNOWN_TOPIC_ID: there is no name to check). Denied partitions are not
// read.
func (b *Broker) authorizeFetch(r *wire.Request, req *kmsg.FetchRequest, targets []fetchTarget) {
	if b.authz == nil {
		return
	}
	replica := req.ReplicaID
	if req.Version >= 15 {
		replica = req.ReplicaState.ID
	}
	deny := func(ft *fetchTarget) { ft.p, ft.errCode = nil, kerr.TopicAuthorizationFailed.Code }
	if replica >= 0 {
		if !b.allowedCluster(r, authz.OpClusterAction) {
			for i := range targets {
				deny(&targets[i])
			}
		}
		return
	}
	names := make([]string, 0, len(targets))
	for i := range targets {
		if targets[i].errCode != kerr.UnknownTopicID.Code {
			names = append(names, targets[i].topic)
		}
	}
	denied := b.deniedTopics(r, authz.OpRead, names)
	for i := range targets {
		if targets[i].errCode != kerr.UnknownTopicID.Code && denied[targets[i].topic] {
			deny(&targets[i])
		}
	}
}

package broker

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/quota"
	"github.com/sluice-broker/sluice/internal/wire"
)

// fetchQuotaBound lowers a consumer fetch's byte bound to what its
// consumer_byte_rate allows over the quota window (Kafka: the quota ×
// (quota.window.num − 1) × quota.window.size.seconds), so that one fetch
// cannot earn an hours-long throttle. At least one batch is still returned.
func (b *Broker) fetchQuotaBound(r *wire.Request, maxBytes int32) int32 {
	limit, _, ok := b.quotaIndex().Resolve(quota.ConsumerByteRate, quotaUser(r), r.Header.ClientIDString())
	if !ok {
		return maxBytes
	}
	w := b.quotas.mgr.Window()
	bound := limit * float64(w.Samples-1) * w.Size.Seconds()
	if bound < float64(maxBytes) {
		return int32(max(bound, 1))
	}
	return maxBytes
}

// throttleFetch records the bytes a consumer fetch read against its
// consumer_byte_rate, and puts the throttle time it earned in resp. As in
// Kafka, a fetch that earns a throttle is answered without its records
// (drop: true), and its bytes are taken back from the rate, so that a
// consumer stays below its quota but for the first window's burst; the
// partitions' offsets (high watermark, log start) are still sent. Unlike
// Kafka, a fetch of more than the quota window's bytes (bound: one batch
// larger than fetchQuotaBound allows, returned whole as KIP-74 wants) keeps
// its records, else a batch larger than quota × window could never be
// read.
func (b *Broker) throttleFetch(r *wire.Request, resp *kmsg.FetchResponse, targets []fetchTarget, bound int32) (drop bool) {
	var n int64
	for i := range targets {
		if targets[i].err == nil {
			n += targets[i].res.Size
		}
	}
	d := b.recordQuota(r, quota.Fetch, float64(n))
	throttle(r, resp, d)
	if d <= 0 || n == 0 || n > int64(bound) {
		return false
	}
	if ix := b.quotaIndex(); ix != nil {
		if _, tags, ok := ix.Resolve(quota.KeyOf(quota.Fetch), quotaUser(r), r.Header.ClientIDString()); ok {
			b.quotas.mgr.Unrecord(quota.Fetch, tags, float64(n))
		}
	}
	return true
}

// mutationQuota is Kafka's controller mutation quota for one request
// (KIP-599): partitions created (CreateTopics, CreatePartitions) and
// deleted (DeleteTopics) count against controller_mutation_rate, a token
// bucket. Strict requests (CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+) get THROTTLING_QUOTA_EXCEEDED for each topic asked
// for while the client is over its quota; older versions are always
// served and only throttled. validate_only requests count nothing.
type mutationQuota struct {
	b        *Broker
	r        *wire.Request
	strict   bool
	limit    float64
	tags     quota.Tags
	on       bool
	throttle time.Duration
}

func (b *Broker) mutationQuota(r *wire.Request, strict, validateOnly bool) *mutationQuota {
	m := &mutationQuota{b: b, r: r, strict: strict}
	if validateOnly {
		return m
	}
	m.limit, m.tags, m.on = b.quotaIndex().Resolve(quota.ControllerMutationRate, quotaUser(r), r.Header.ClientIDString())
	return m
}

// admit counts a mutation of n partitions; an error refuses it.
func (m *mutationQuota) admit(n int) error {
	if !m.on || n <= 0 {
		return nil
	}
	mgr := m.b.quotas.mgr
	if m.strict {
		if d := mgr.Check(quota.Mutation, m.tags, m.limit); d > 0 {
			m.throttle = max(m.throttle, d)
			return errorf(kerr.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")
		}
		mgr.Record(quota.Mutation, m.tags, m.limit, float64(n))
		return nil
	}
	m.throttle = max(m.throttle, mgr.Record(quota.Mutation, m.tags, m.limit, float64(n)))
	return nil
}

// finish puts the throttle time in resp and mutes the connection.
func (m *mutationQuota) finish(resp kmsg.Response) { throttle(m.r, resp, m.throttle) }

// partitionsToCreate is the partition count a CreateTopics entry asks for.
func (b *Broker) partitionsToCreate(rt *kmsg.CreateTopicsRequestTopic) int {
	switch {
	case len(rt.ReplicaAssignment) > 0:
		return len(rt.ReplicaAssignment)
	case rt.NumPartitions > 0:
		return int(rt.NumPartitions)
	}
	return int(max(b.cfg.NumPartitions, 1))
}

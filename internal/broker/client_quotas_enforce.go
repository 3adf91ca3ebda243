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

// throttleFetch records the bytes a consumer fetch returns against its
// consumer_byte_rate. Unlike Kafka, which answers a throttled fetch with
// no data, Sluice returns what was read and throttles afterwards (the
// fetch session has already moved on).
func (b *Broker) throttleFetch(r *wire.Request, resp *kmsg.FetchResponse, targets []fetchTarget) {
	var n int64
	for i := range targets {
		if targets[i].err == nil {
			n += targets[i].res.Size
		}
	}
	throttle(r, resp, b.recordQuota(r, quota.Fetch, float64(n)))
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

// DeleteTopics (key 20), v1–v6: deletes topics by name (all versions) or by
// topic id (v6+); the metadata goes first, then every partition's data is
// removed from disk (see Broker.deleteTopic). adminMu is held per topic and
// only for the metadata change: data is removed after releasing it, so a
// long deletion does not stall other clients' Metadata (auto-creation),
// Produce or admin requests.
//
// Errors per topic: unknown name UNKNOWN_TOPIC_OR_PARTITION, unknown id
// UNKNOWN_TOPIC_ID, both or neither of name and id (v6) INVALID_REQUEST, a
// topic listed twice INVALID_REQUEST, delete.topic.enable=false
// TOPIC_DELETION_DISABLED.
//
// Differences from Kafka: internal topics (__consumer_offsets, …) cannot be
// deleted (INVALID_REQUEST) because the broker holds them open; timeout_ms
// is ignored because deletion is synchronous.

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/authz"
	"github.com/sluice-broker/sluice/internal/topics"
	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.DeleteTopics, (*Broker).handleDeleteTopics) }

func (b *Broker) handleDeleteTopics(_ context.Context, r *wire.Request, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   topics.ID
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: kmsg.StringPtr(n)})
		}
	}

	// Resolve every target to a name first, to spot duplicates (by name or
	// by id of the same topic).
	b.adminMu.Lock()
	names := make([]string, len(targets))
	errs := make([]error, len(targets))
	count := map[string]int{}
	for i, tg := range targets {
		hasName := tg.name != nil && *tg.name != ""
		switch {
		case hasName && !tg.id.IsZero():
			errs[i] = errorf(kerr.InvalidRequest, "You may not specify both topic name and topic id.")
		case !hasName && tg.id.IsZero():
			errs[i] = errorf(kerr.InvalidRequest, "Neither topic name nor id were specified.")
		case hasName:
			names[i] = *tg.name
		default:
			t, ok := b.topics.ByID(tg.id)
			if !ok {
				errs[i] = &Error{Code: kerr.UnknownTopicID.Code}
			} else {
				names[i] = t.Name
			}
		}
		if errs[i] == nil {
			count[names[i]]++
		}
	}
	b.adminMu.Unlock()

	mq := b.mutationQuota(r, req.Version >= 5, false) // client_quotas_enforce.go
	defer mq.finish(resp)
	var purges []func()
	defer func() {
		for _, purge := range purges {
			purge()
		}
	}()

	// On a cluster node the topics that pass their checks are deleted
	// together, in one metadata entry (cluster_admin_batch.go).
	rts := make([]kmsg.DeleteTopicsResponseTopic, len(targets))
	var batch []int
	for i, tg := range targets {
		rt := &rts[i]
		*rt = kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = tg.name
		rt.TopicID = tg.id
		err := errs[i]
		if err == nil && !b.allowed(r, authz.OpDelete, authz.ResourceTopic, names[i]) {
			err = errTopicAuth // the name of a topic given by id is not revealed
		}
		if err == nil {
			var purge func()
			b.adminMu.Lock()
			if t, ok := b.topics.Get(names[i]); ok {
				rt.TopicID = t.ID
				err = mq.admit(int(t.Partitions))
			}
			if err == nil && b.cluster != nil {
				if err = b.checkDelete(names[i], count[names[i]] > 1); err == nil {
					batch = append(batch, i)
				}
			} else if err == nil {
				purge, err = b.deleteOne(names[i], count[names[i]] > 1)
			}
			b.adminMu.Unlock()
			if purge != nil {
				purges = append(purges, purge)
			}
		}
		errs[i] = err
	}
	if len(batch) > 0 {
		bnames := make([]string, len(batch))
		for k, i := range batch {
			bnames[k] = names[i]
		}
		b.adminMu.Lock()
		berrs := b.cluster.deleteTopicsBatch(bnames)
		b.adminMu.Unlock()
		for k, i := range batch {
			if errs[i] = berrs[k]; errs[i] == nil {
				purges = append(purges, b.purges.waiter(names[i])) // cluster_purge.go
			}
		}
	}
	for i, tg := range targets {
		rt := &rts[i]
		err := errs[i]
		if err != errTopicAuth && names[i] != "" && (err == nil || tg.name == nil) {
			rt.Topic = kmsg.StringPtr(names[i])
		}
		if err != nil {
			rt.ErrorCode = errorCode(err)
			if req.Version >= 5 {
				rt.ErrorMessage = errorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, *rt)
	}
	return resp, nil
}

// deleteOne deletes one topic's metadata and returns the purge of its data
// (see Broker.deleteTopic). Caller holds adminMu.
func (b *Broker) deleteOne(name string, duplicate bool) (purge func(), err error) {
	if err := b.checkDelete(name, duplicate); err != nil {
		return nil, err
	}
	return b.deleteTopic(name)
}

// checkDelete refuses what DeleteTopics may not delete. Caller holds
// adminMu.
func (b *Broker) checkDelete(name string, duplicate bool) error {
	switch {
	case duplicate:
		return errorf(kerr.InvalidRequest, "Topic '%s' is listed more than once in the request.", name)
	case !b.cfg.DeleteTopicEnable:
		return errorf(kerr.TopicDeletionDisabled, "Topic deletion is disabled (delete.topic.enable=false).")
	case topics.IsInternal(name):
		if _, ok := b.topics.Get(name); ok {
			return errorf(kerr.InvalidRequest, "Internal topic %s cannot be deleted.", name)
		}
	}
	return nil
}

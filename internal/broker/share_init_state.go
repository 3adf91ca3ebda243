package broker

import (
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/share"
)

// initShareStates is share.Options.InitState: the group coordinator has the
// share coordinator initialize the state of share partitions a group's
// members subscribe to, as Kafka 4.4's GroupCoordinatorService does through
// its persister: InitializeShareGroupState with start offset -1 (resolved
// with share.auto.offset.reset by the share-partition leader when it first
// loads the partition) and the group epoch as state epoch. A partition the
// share coordinator already has state for (set by AlterShareGroupOffsets, or
// fetched before the group coordinator recorded its initializations) is
// initialized as it is. It returns the keys whose state is initialized; the
// others (share coordinator not available yet) are tried again at the next
// heartbeat, and stay unassigned meanwhile.
//
// The keys are grouped by share coordinator (the leader of their
// __share_group_state partition), and each coordinator gets one
// ReadShareGroupState and at most one InitializeShareGroupState carrying all
// of its keys (the requests take many topics and partitions, and answer per
// partition); the coordinators are asked concurrently.
func (b *Broker) initShareStates(keys []share.Key, stateEpoch int32) []share.Key {
	if len(keys) == 0 {
		return nil
	}
	route, err := b.shareStateRouter()
	if err != nil {
		b.logger.Info("share: initializing share-partition state", "group", keys[0].Group, "partitions", len(keys), "err", err)
		return nil
	}
	type dest struct {
		t     shareStateTarget
		group string
	}
	var order []dest
	byDest := map[dest][]share.Key{}
	unrouted, routeErr := 0, error(nil)
	for _, k := range keys {
		t, err := route(k)
		if err != nil {
			unrouted, routeErr = unrouted+1, err
			continue
		}
		d := dest{t, k.Group}
		if _, ok := byDest[d]; !ok {
			order = append(order, d)
		}
		byDest[d] = append(byDest[d], k)
	}
	if unrouted > 0 {
		b.logger.Info("share: initializing share-partition state", "group", keys[0].Group, "partitions", len(keys),
			"without_coordinator", unrouted, "err", routeErr)
	}
	done := make([][]share.Key, len(order))
	var wg sync.WaitGroup
	for i, d := range order {
		wg.Go(func() { done[i] = b.initShareStatesAt(d.t, d.group, byDest[d], stateEpoch) })
	}
	wg.Wait()
	var out []share.Key
	for _, ks := range done {
		out = append(out, ks...)
	}
	return out
}

// shareTopicPartition is a share partition of a group, as the share-state
// requests and responses name it.
type shareTopicPartition struct {
	topic     [16]byte
	partition int32
}

// initShareStatesAt initializes the state of keys, all of group and all
// served by coordinator t: one ReadShareGroupState for all of them, then one
// InitializeShareGroupState for those that have no state. It returns the
// keys whose state is initialized; a failure is logged once for the request.
func (b *Broker) initShareStatesAt(t shareStateTarget, group string, keys []share.Key, stateEpoch int32) []share.Key {
	fail := func(what string, failed int, err error) {
		b.logger.Info("share: initializing share-partition state", "group", group, "coordinator", t.id,
			"request", what, "partitions", len(keys), "failed", failed, "err", err)
	}
	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = group
	forEachTopic(keys, func(id [16]byte, ks []share.Key) {
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = id
		for _, k := range ks {
			p := kmsg.NewReadShareGroupStateRequestTopicPartition()
			p.Partition, p.LeaderEpoch = k.Partition, b.shareLeaderEpoch(k)
			rt.Partitions = append(rt.Partitions, p)
		}
		read.Topics = append(read.Topics, rt)
	})
	raw, err := b.shareStateSend(t, read)
	if err != nil {
		fail("ReadShareGroupState", len(keys), err)
		return nil
	}
	readCodes := map[shareTopicPartition]*kmsg.ReadShareGroupStateResponseTopicPartition{}
	for _, rt := range raw.(*kmsg.ReadShareGroupStateResponse).Topics {
		for i := range rt.Partitions {
			readCodes[shareTopicPartition{rt.TopicID, rt.Partitions[i].Partition}] = &rt.Partitions[i]
		}
	}
	var done, todo []share.Key
	var firstErr error
	failed := 0
	note := func(err error) {
		failed++
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, k := range keys {
		rp := readCodes[shareTopicPartition{k.TopicID, k.Partition}]
		switch {
		case rp == nil:
			note(errors.New("share coordinator: partition missing from the ReadShareGroupState response"))
		case rp.ErrorCode == kerr.UnknownTopicOrPartition.Code:
			todo = append(todo, k) // no state yet
		case rp.ErrorCode != 0:
			note(shareStateCode(rp.ErrorCode, rp.ErrorMessage))
		default:
			done = append(done, k) // state set already: kept as it is
		}
	}
	if failed > 0 {
		fail("ReadShareGroupState", failed, firstErr)
	}
	if len(todo) == 0 {
		return done
	}
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = group
	forEachTopic(todo, func(id [16]byte, ks []share.Key) {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = id
		for _, k := range ks {
			p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			p.Partition, p.StateEpoch, p.StartOffset = k.Partition, stateEpoch, -1
			rt.Partitions = append(rt.Partitions, p)
		}
		init.Topics = append(init.Topics, rt)
	})
	raw, err = b.shareStateSend(t, init)
	if err != nil {
		fail("InitializeShareGroupState", len(todo), err)
		return done
	}
	initCodes := map[shareTopicPartition]*kmsg.InitializeShareGroupStateResponseTopicPartition{}
	for _, rt := range raw.(*kmsg.InitializeShareGroupStateResponse).Topics {
		for i := range rt.Partitions {
			initCodes[shareTopicPartition{rt.TopicID, rt.Partitions[i].Partition}] = &rt.Partitions[i]
		}
	}
	firstErr, failed = nil, 0
	for _, k := range todo {
		rp := initCodes[shareTopicPartition{k.TopicID, k.Partition}]
		switch {
		case rp == nil:
			note(errors.New("share coordinator: partition missing from the InitializeShareGroupState response"))
		case rp.ErrorCode != 0:
			note(shareStateCode(rp.ErrorCode, rp.ErrorMessage))
		default:
			done = append(done, k)
		}
	}
	if failed > 0 {
		fail("InitializeShareGroupState", failed, firstErr)
	}
	return done
}

// forEachTopic calls fn with each topic of keys and its keys, in the order
// of their first key.
func forEachTopic(keys []share.Key, fn func(id [16]byte, ks []share.Key)) {
	var ids [][16]byte
	byTopic := map[[16]byte][]share.Key{}
	for _, k := range keys {
		if _, ok := byTopic[k.TopicID]; !ok {
			ids = append(ids, k.TopicID)
		}
		byTopic[k.TopicID] = append(byTopic[k.TopicID], k)
	}
	for _, id := range ids {
		fn(id, byTopic[id])
	}
}

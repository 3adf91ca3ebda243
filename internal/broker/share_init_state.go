package broker

import (
	"errors"

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
func (b *Broker) initShareStates(keys []share.Key, stateEpoch int32) []share.Key {
	var done []share.Key
	for _, k := range keys {
		if err := b.initShareState(k, stateEpoch); err != nil {
			b.logger.Info("share: initializing share-partition state", "group", k.Group, "partition", k.Partition, "err", err)
			continue
		}
		done = append(done, k)
	}
	return done
}

func (b *Broker) initShareState(k share.Key, stateEpoch int32) error {
	if _, found, err := b.readShareState(k); err != nil || found {
		return err
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = k.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = k.Partition, stateEpoch, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := b.shareStateCall(k, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.InitializeShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return errors.New("share coordinator: malformed InitializeShareGroupState response")
	}
	rp := resp.Topics[0].Partitions[0]
	return shareStateCode(rp.ErrorCode, rp.ErrorMessage)
}

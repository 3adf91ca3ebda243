package group

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicPartition struct {
	topic     string
	partition int32
}

type committedOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
	// seq orders commits as their records are ordered in __consumer_offsets
	// (Kafka compares record offsets): a transactional commit completed by a
	// marker does not replace a regular commit written after it.
	seq int64
}

// commitEntry checks one partition of an offset commit (regular or
// transactional): code is the request-level error, if any. On 0 it returns
// the offset to store.
func (c *Coordinator) commitEntry(code int16, info TopicInfo, known bool, partition int32, offset int64,
	leaderEpoch int32, metadata *string, nowMs int64) (committedOffset, int16) {
	switch {
	case code != 0:
		return committedOffset{}, code
	case !known || partition < 0 || partition >= info.Partitions:
		return committedOffset{}, kerr.UnknownTopicOrPartition.Code
	case metadata != nil && len(*metadata) > c.cfg.OffsetMetadataMaxBytes:
		return committedOffset{}, kerr.OffsetMetadataTooLarge.Code
	}
	o := committedOffset{offset: offset, leaderEpoch: leaderEpoch, commitMs: nowMs}
	if metadata != nil {
		o.metadata = *metadata
	}
	return o, 0
}

// OffsetCommit handles OffsetCommit (v2-v9). Commits are durable in
// __consumer_offsets before the response says so. The v2-v4 retention_time field is
// ignored: retention follows offsets.retention.minutes, as in Kafka 4.
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrOffsetCommitResponse()
	r.Version = req.Version
	code := c.validateCommit(req, false)
	var g *group
	if code == 0 {
		g = c.groups[req.Group]
	}
	nowMs := c.nowMs()
	type pending struct {
		tp  topicPartition
		o   committedOffset
		dst *int16
	}
	var todo []pending
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(t.Partitions))
		info, known := c.topics.Topic(t.Topic)
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			rp.Default()
			rp.Partition = p.Partition
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			o, ec := c.commitEntry(code, info, known, p.Partition, p.Offset, epoch, p.Metadata, nowMs)
			if rp.ErrorCode = ec; ec == 0 {
				todo = append(todo, pending{topicPartition{t.Topic, p.Partition}, o, nil})
			}
		}
		r.Topics = append(r.Topics, rt)
	}
	if len(todo) == 0 {
		return r
	}
	recs := make([]record, len(todo))
	for i, p := range todo {
		recs[i] = offsetCommitRecord(g.id, p.tp, p.o)
	}
	if err := c.persist(g.id, recs...); err != nil {
		failed := make(map[topicPartition]bool, len(todo))
		for _, p := range todo {
			failed[p.tp] = true
		}
		for ti := range r.Topics {
			for pi := range r.Topics[ti].Partitions {
				rp := &r.Topics[ti].Partitions[pi]
				if failed[topicPartition{r.Topics[ti].Topic, rp.Partition}] {
					rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
		return r
	}
	for _, p := range todo {
		p.o.seq = c.nextSeq()
		g.offsets[p.tp] = p.o
	}
	return r
}

// validateCommit applies Kafka's group checks for OffsetCommit (and, with transactional
// set, TxnOffsetCommit, which carries no member before v3 and ignores the group's
// rebalance state); it creates the group for a "simple" commit (generation < 0) to a
// group that does not exist.
func (c *Coordinator) validateCommit(req *kmsg.OffsetCommitRequest, transactional bool) int16 {
	if c.notCoordinator(req.Group) {
		return kerr.NotCoordinator.Code
	}
	if !validGroupID(req.Group) {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation < 0 {
			c.groups[req.Group] = newGroup(req.Group, c.clock.Now())
			return 0
		}
		if req.Version >= 9 {
			return kerr.GroupIDNotFound.Code
		}
		return kerr.IllegalGeneration.Code
	}
	if g.consumer != nil {
		return g.consumer.validateCommit(req.MemberID, req.Generation)
	}
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if req.Generation < 0 && g.state == stateEmpty {
		return 0
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if !transactional && g.state != stateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if !transactional && g.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	if m := g.members[req.MemberID]; m != nil {
		c.touchMember(g, m)
	}
	return 0
}

// OffsetFetch handles OffsetFetch (v1-v9; v8+ carries several groups). A group that does
// not exist answers offset -1 with no error, as Kafka does.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrOffsetFetchResponse()
	r.Version = req.Version
	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		if req.Topics != nil {
			topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
			for _, t := range req.Topics {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = t.Topic, t.Partitions
				topics = append(topics, gt)
			}
		}
		rg := c.fetchGroup(req.Group, nil, -1, topics, req.RequireStable)
		r.ErrorCode = rg.ErrorCode
		for _, t := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	for _, rg := range req.Groups {
		r.Groups = append(r.Groups, c.fetchGroup(rg.Group, rg.MemberID, rg.MemberEpoch, rg.Topics, req.RequireStable))
	}
	return r
}

// fetchGroup answers one group of an OffsetFetch. With requireStable (v7+), a partition
// with a pending transactional commit answers UNSTABLE_OFFSET_COMMIT, as Kafka does.
func (c *Coordinator) fetchGroup(id string, memberID *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = id
	switch {
	case c.notCoordinator(id):
		rg.ErrorCode = kerr.NotCoordinator.Code
	case !validGroupID(id):
		rg.ErrorCode = kerr.InvalidGroupID.Code
	}
	g := c.groups[id]
	if rg.ErrorCode == 0 && g != nil && g.consumer != nil && memberID != nil && *memberID != "" {
		rg.ErrorCode = g.consumer.validateFetch(*memberID, memberEpoch)
	}
	if rg.ErrorCode != 0 {
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, rg.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		return rg
	}
	fill := func(rp *kmsg.OffsetFetchResponseGroupTopicPartition, tp topicPartition) {
		rp.Partition = tp.partition
		rp.Offset, rp.LeaderEpoch = -1, -1
		empty := ""
		rp.Metadata = &empty
		if g == nil {
			return
		}
		if requireStable && c.hasPendingTxnOffset(g.id, tp) {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return
		}
		if o, ok := g.offsets[tp]; ok {
			rp.Offset, rp.LeaderEpoch = o.offset, o.leaderEpoch
			md := o.metadata
			rp.Metadata = &md
		}
	}
	if topics == nil { // all committed offsets
		if g == nil {
			return rg
		}
		byTopic := make(map[string][]int32)
		for tp := range g.offsets {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ps := byTopic[n]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = n
			for _, p := range ps {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				fill(&rp, topicPartition{n, p})
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		return rg
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			fill(&rp, topicPartition{t.Topic, p})
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

// OffsetDelete handles OffsetDelete (v0): committed offsets of topics the group is not
// subscribed to are removed (tombstoned).
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := kmsg.NewPtrOffsetDeleteResponse()
	r.Version = req.Version
	g := c.groups[req.Group]
	switch {
	case c.notCoordinator(req.Group):
		r.ErrorCode = kerr.NotCoordinator.Code
	case !validGroupID(req.Group):
		r.ErrorCode = kerr.InvalidGroupID.Code
	case g == nil || (g.consumer == nil && g.state == stateDead):
		r.ErrorCode = kerr.GroupIDNotFound.Code
	}
	if r.ErrorCode != 0 {
		return r
	}
	subscribed, known := c.subscribedTopics(g)
	if !known && !g.isEmpty() {
		r.ErrorCode = kerr.NonEmptyGroup.Code
		return r
	}
	var recs []record
	var del []topicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		_, exists := c.topics.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			tp := topicPartition{t.Topic, p.Partition}
			switch {
			case !exists:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.offsets[tp]; ok || c.hasPendingTxnOffset(g.id, tp) {
					recs = append(recs, record{key: offsetCommitKey(g.id, tp.topic, tp.partition)})
					del = append(del, tp)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	if err := c.persist(g.id, recs...); err != nil {
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		r.Topics = nil
		return r
	}
	for _, tp := range del {
		delete(g.offsets, tp)
		c.dropPendingTxnOffsets(g.id, tp)
	}
	return r
}

// subscribedTopics is the set of topics the group's members subscribe to, and whether
// it is known (a classic group with a protocol type other than "consumer" cannot be
// inspected).
func (c *Coordinator) subscribedTopics(g *group) (map[string]bool, bool) {
	out := make(map[string]bool)
	if g.consumer != nil {
		for _, m := range g.consumer.members {
			for _, t := range m.resolvedTopics {
				out[t] = true
			}
		}
		return out, true
	}
	if len(g.members) == 0 {
		return out, true
	}
	if g.protocolType != "consumer" {
		return nil, false
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out, true
}

// scheduleExpiry arms the periodic offset-expiry pass.
func (c *Coordinator) scheduleExpiry() {
	if c.closed {
		return
	}
	c.expiryTimer = c.clock.AfterFunc(c.cfg.OffsetsRetentionCheckInterval, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		c.expireOffsets()
		c.scheduleExpiry()
	})
}

// expireOffsets removes offsets past offsets.retention.minutes (Kafka's KIP-211 rules):
// in an empty group every offset expires once the group has been empty for the
// retention period (or, for a group that never had members, once its commit is that
// old); in a group of consumers, offsets of topics nobody subscribes to expire by commit
// time. An empty group left without offsets is deleted.
func (c *Coordinator) expireOffsets() {
	now := c.clock.Now()
	retention := c.cfg.OffsetsRetention
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		var expired []topicPartition
		if g.isEmpty() {
			for tp, o := range g.offsets {
				base := time.UnixMilli(o.commitMs)
				if g.consumer == nil && g.protocolType != "" && g.stateSince.After(base) {
					base = g.stateSince
				}
				if g.consumer != nil && g.consumer.emptySince.After(base) {
					base = g.consumer.emptySince
				}
				if now.Sub(base) >= retention && !c.hasPendingTxnOffset(g.id, tp) {
					expired = append(expired, tp)
				}
			}
		} else if subs, known := c.subscribedTopics(g); known {
			for tp, o := range g.offsets {
				if !subs[tp.topic] && now.Sub(time.UnixMilli(o.commitMs)) >= retention && !c.hasPendingTxnOffset(g.id, tp) {
					expired = append(expired, tp)
				}
			}
		}
		var recs []record
		for _, tp := range expired {
			recs = append(recs, record{key: offsetCommitKey(g.id, tp.topic, tp.partition)})
		}
		// A group with an undecided transactional commit stays (Kafka's rule).
		deleteGroup := g.isEmpty() && len(g.offsets) == len(expired) && (g.consumer != nil || g.state == stateEmpty) &&
			len(c.pendingTxnPartitions(g.id)) == 0
		if deleteGroup {
			recs = append(recs, consumerTombstones(g)...)
			recs = append(recs, record{key: groupMetadataKey(g.id)})
		}
		if len(recs) == 0 {
			continue
		}
		if err := c.persist(g.id, recs...); err != nil {
			continue
		}
		for _, tp := range expired {
			delete(g.offsets, tp)
		}
		if len(expired) > 0 {
			c.log.Info("group: expired offsets", "group", g.id, "partitions", len(expired))
		}
		if deleteGroup {
			forgetConsumerRecords(g)
			c.dropGroup(g)
		}
	}
}

func (c *Coordinator) sortedGroupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// dropGroup forgets g entirely (its records are already tombstoned).
func (c *Coordinator) dropGroup(g *group) {
	g.stopTimers()
	if g.consumer != nil {
		g.consumer.stopTimers()
	}
	g.transition(stateDead, c.clock.Now())
	delete(c.groups, g.id)
}

// OnTopicsDeleted removes every group's committed offsets of the deleted topics (and
// their undecided transactional commits), writing a tombstone for each to
// __consumer_offsets, as Kafka's coordinator does when topics go: a topic re-created
// with the same name starts with no committed offsets (OffsetFetch answers -1).
// The groups themselves stay; an empty group left without offsets goes at the next
// expiry pass.
func (c *Coordinator) OnTopicsDeleted(names ...string) {
	if len(names) == 0 {
		return
	}
	gone := make(map[string]bool, len(names))
	for _, n := range names {
		gone[n] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		var del []topicPartition
		for tp := range g.offsets {
			if gone[tp.topic] {
				del = append(del, tp)
			}
		}
		for _, byGroup := range c.pendingTxn {
			for tp := range byGroup[id] {
				if gone[tp.topic] && !slices.Contains(del, tp) {
					del = append(del, tp)
				}
			}
		}
		if len(del) == 0 {
			continue
		}
		slices.SortFunc(del, func(a, b topicPartition) int {
			return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
		})
		recs := make([]record, 0, len(del))
		for _, tp := range del {
			recs = append(recs, record{key: offsetCommitKey(id, tp.topic, tp.partition)})
		}
		if err := c.persist(id, recs...); err != nil {
			continue // logged by persist; memory stays as the log has it
		}
		for _, tp := range del {
			delete(g.offsets, tp)
			c.dropPendingTxnOffsets(id, tp)
		}
		c.log.Info("group: removed offsets of deleted topics", "group", id, "partitions", len(del))
	}
}

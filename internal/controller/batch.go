package controller

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// Requests over many topics (CreateTopics, DeleteTopics, CreatePartitions
// of one Kafka request) are decided together, as Kafka's controller does:
// every topic is checked against the image the previous ones would
// produce, the ones that pass are committed as one quorum entry (one raft
// append, one fsync, one new image published by every broker), and each
// topic gets its own outcome. A topic's records never span two entries;
// a request whose records exceed MaxEntryBytes is committed in several
// entries of whole topics, one after the other.

// MaxEntryBytes bounds the encoded size of one metadata entry a batched
// request commits (raft's log record limit is 64 MiB, its append messages
// aim at 1 MiB; a 1,000-topic CreateTopics of 1 partition each is about
// 250 KiB).
var MaxEntryBytes = 4 << 20

// ItemError is one topic's refusal in a batched answer (nil: done).
type ItemError struct {
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

func itemError(err error) *ItemError {
	if ce, ok := err.(*Error); ok {
		return &ItemError{Code: ce.Code, Message: ce.Msg}
	}
	return &ItemError{Code: kerr.UnknownServerError.Code, Message: err.Error()}
}

// Err returns the item's error as an *Error (nil when it succeeded).
func (e *ItemError) Err() error {
	if e == nil {
		return nil
	}
	return &Error{Code: e.Code, Msg: e.Message}
}

// TopicResult is one topic's outcome in a batched answer.
type TopicResult struct {
	Name    string      `json:"name"`
	Error   *ItemError  `json:"error,omitempty"`
	TopicID metadata.ID `json:"topic_id"`
	// Partitions is the topic's placement after the change (CreateTopics,
	// CreatePartitions).
	Partitions []metadata.Partition `json:"partitions,omitempty"`
}

// TopicsResponse answers a batched request: one result per topic, in the
// request's order, and the offset of the last entry committed (0: none).
type TopicsResponse struct {
	Results []TopicResult `json:"results"`
	Offset  uint64        `json:"offset"`
}

// CreateTopicsRequest creates several topics (one CreateTopics).
type CreateTopicsRequest struct {
	Topics []CreateTopicRequest `json:"topics"`
}

// DeleteTopicsRequest deletes several topics (one DeleteTopics).
type DeleteTopicsRequest struct {
	Names []string `json:"names"`
}

// CreatePartitionsBatchRequest grows several topics (one CreatePartitions).
type CreatePartitionsBatchRequest struct {
	Topics []CreatePartitionsRequest `json:"topics"`
}

// pending is one topic's records in a batch being committed.
type pending struct {
	idx  int
	recs []metadata.Record
}

// CreateTopics places and creates several topics in one entry.
func (c *Controller) CreateTopics(ctx context.Context, req CreateTopicsRequest) (TopicsResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicsResponse{}, err
	}
	defer c.mu.Unlock()
	resp := TopicsResponse{Results: make([]TopicResult, len(req.Topics))}
	var todo []pending
	names := map[string]bool{}
	ids := map[metadata.ID]bool{}
	for i, tr := range req.Topics {
		res := &resp.Results[i]
		res.Name = tr.Name
		if _, ok := im.Topics[tr.Name]; ok || names[tr.Name] {
			res.Error = itemError(errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", tr.Name))
			continue
		}
		parts, err := c.place(im, tr.Partitions, tr.ReplicationFactor, tr.Assignments, len(im.Topics)+len(names))
		if err != nil {
			res.Error = itemError(err)
			continue
		}
		id := newTopicID(im)
		for ids[id] {
			id = newTopicID(im)
		}
		res.TopicID, res.Partitions = id, parts
		if tr.ValidateOnly {
			continue
		}
		names[tr.Name], ids[id] = true, true
		t := &metadata.Topic{Name: tr.Name, ID: id, Configs: maps.Clone(tr.Configs), Partitions: parts}
		todo = append(todo, pending{i, []metadata.Record{{Type: metadata.CreateTopic, Topic: t}}})
	}
	if resp.Offset, err = c.commitBatched(ctx, todo, resp.Results); err != nil {
		return TopicsResponse{}, err
	}
	return resp, nil
}

// DeleteTopics removes several topics in one entry.
func (c *Controller) DeleteTopics(ctx context.Context, req DeleteTopicsRequest) (TopicsResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicsResponse{}, err
	}
	defer c.mu.Unlock()
	resp := TopicsResponse{Results: make([]TopicResult, len(req.Names))}
	var todo []pending
	seen := map[string]bool{}
	for i, name := range req.Names {
		res := &resp.Results[i]
		res.Name = name
		t, ok := im.Topics[name]
		if !ok || seen[name] {
			res.Error = &ItemError{Code: kerr.UnknownTopicOrPartition.Code}
			continue
		}
		seen[name] = true
		res.TopicID = t.ID
		todo = append(todo, pending{i, []metadata.Record{{Type: metadata.RemoveTopic, TopicName: t.Name, TopicID: t.ID}}})
	}
	if resp.Offset, err = c.commitBatched(ctx, todo, resp.Results); err != nil {
		return TopicsResponse{}, err
	}
	return resp, nil
}

// CreatePartitionsBatch grows several topics in one entry.
func (c *Controller) CreatePartitionsBatch(ctx context.Context, req CreatePartitionsBatchRequest) (TopicsResponse, error) {
	im, err := c.begin()
	if err != nil {
		return TopicsResponse{}, err
	}
	defer c.mu.Unlock()
	resp := TopicsResponse{Results: make([]TopicResult, len(req.Topics))}
	var todo []pending
	seen := map[string]bool{}
	added := 0
	for i, pr := range req.Topics {
		res := &resp.Results[i]
		res.Name = pr.Name
		t, ok := im.Topics[pr.Name]
		if !ok {
			res.Error = &ItemError{Code: kerr.UnknownTopicOrPartition.Code}
			continue
		}
		if seen[pr.Name] {
			res.Error = itemError(errorf(kerr.InvalidRequest, "Duplicate topic in request."))
			continue
		}
		res.TopicID = t.ID
		parts, err := c.newPartitions(im, t, pr, len(im.Topics)+added)
		if err != nil {
			res.Error = itemError(err)
			continue
		}
		res.Partitions = append(slices.Clone(t.Partitions), parts...)
		if pr.ValidateOnly {
			continue
		}
		seen[pr.Name] = true
		added += len(parts)
		todo = append(todo, pending{i, []metadata.Record{{Type: metadata.AddPartitions, TopicName: t.Name, TopicID: t.ID, Partitions: parts}}})
	}
	if resp.Offset, err = c.commitBatched(ctx, todo, resp.Results); err != nil {
		return TopicsResponse{}, err
	}
	return resp, nil
}

// newPartitions checks a CreatePartitions of topic t and places the new
// partitions (CreatePartitions and CreatePartitionsBatch).
func (c *Controller) newPartitions(im *metadata.Image, t *metadata.Topic, req CreatePartitionsRequest, start int) ([]metadata.Partition, error) {
	have := int32(len(t.Partitions))
	if req.Count <= have {
		return nil, errorf(kerr.InvalidPartitions, "Topic currently has %d partitions, which is higher than the requested %d.", have, req.Count)
	}
	if len(req.Assignments) > 0 && int32(len(req.Assignments)) != req.Count-have {
		return nil, errorf(kerr.InvalidReplicaAssignment, "Increasing the number of partitions by %d but %d assignments provided.", req.Count-have, len(req.Assignments))
	}
	rf := len(t.Partitions[0].Replicas)
	for _, reps := range req.Assignments {
		if len(reps) != rf {
			return nil, errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(reps), rf)
		}
	}
	return c.place(im, req.Count-have, int16(rf), req.Assignments, start+int(have))
}

// commitBatched commits the records of todo in as few entries as
// MaxEntryBytes allows (one topic's records always in the same entry) and
// sets the error of every item whose entry failed. It returns the offset of
// the last entry committed (0: none), or the error of the first entry when
// it failed (nothing was committed: the whole request fails, and a
// NOT_CONTROLLER answer sends it to the new controller). Caller holds mu.
func (c *Controller) commitBatched(ctx context.Context, todo []pending, results []TopicResult) (uint64, error) {
	groups := make([][]metadata.Record, len(todo))
	for i, p := range todo {
		groups[i] = p.recs
	}
	done, last, err := c.commitGroups(ctx, groups)
	if err != nil && done == 0 {
		return 0, err
	}
	for _, p := range todo[done:] {
		results[p.idx].Error = itemError(err)
		results[p.idx].Partitions = nil
	}
	return last, nil
}

// commitGroups commits groups of records, each group whole in one entry,
// as few entries as MaxEntryBytes allows, one after the other, until one
// fails. It returns how many groups were committed, the offset of the last
// entry committed (0: none) and the error that stopped it. Caller holds mu.
func (c *Controller) commitGroups(ctx context.Context, groups [][]metadata.Record) (done int, last uint64, err error) {
	var recs []metadata.Record
	n, size := 0, 0 // groups and bytes in recs
	flush := func() error {
		if n == 0 {
			return nil
		}
		off, err := c.commit(ctx, recs...)
		if err != nil {
			return err
		}
		done, last = done+n, off
		recs, n, size = nil, 0, 0 // not reused: the store may hold the last one (Store.Proposed)
		return nil
	}
	for _, g := range groups {
		gs := 0
		for _, r := range g {
			data, _ := json.Marshal(r)
			gs += len(data) + 1
		}
		if size > 0 && size+gs > MaxEntryBytes {
			if err := flush(); err != nil {
				return done, last, err
			}
		}
		recs = append(recs, g...)
		n++
		size += gs
	}
	if err := flush(); err != nil {
		return done, last, err
	}
	return done, last, nil
}

// ElectLeadersRequest elects the leaders of several partitions (one
// ElectLeaders).
type ElectLeadersRequest struct {
	Partitions []ElectRequest `json:"partitions"`
}

// ElectLeadersResponse answers each partition in the request's order.
type ElectLeadersResponse struct {
	Results []ElectResponse `json:"results"`
	Offset  uint64          `json:"offset"`
}

// ElectLeaders runs Kafka's ElectLeaders for several partitions, the
// changes committed together (a partition named twice gets the first
// answer again).
func (c *Controller) ElectLeaders(ctx context.Context, req ElectLeadersRequest) (ElectLeadersResponse, error) {
	im, err := c.begin()
	if err != nil {
		return ElectLeadersResponse{}, err
	}
	defer c.mu.Unlock()
	type key struct {
		topic string
		part  int32
	}
	resp := ElectLeadersResponse{Results: make([]ElectResponse, len(req.Partitions))}
	first := map[key]int{}
	var groups [][]metadata.Record
	var idx []int
	for i, pr := range req.Partitions {
		k := key{pr.Topic, pr.Partition}
		if j, ok := first[k]; ok {
			resp.Results[i] = resp.Results[j]
			continue
		}
		first[k] = i
		var rec *metadata.Record
		resp.Results[i], rec = c.elect(im, pr)
		if rec != nil {
			groups = append(groups, []metadata.Record{*rec})
			idx = append(idx, i)
		}
	}
	done, last, err := c.commitGroups(ctx, groups)
	if err != nil && done == 0 {
		return ElectLeadersResponse{}, err
	}
	if err != nil {
		e := itemError(err)
		for _, i := range idx[done:] {
			resp.Results[i] = ElectResponse{Code: e.Code, Message: e.Message}
		}
		for i, pr := range req.Partitions { // repeats of failed partitions
			if j := first[key{pr.Topic, pr.Partition}]; j != i {
				resp.Results[i] = resp.Results[j]
			}
		}
	}
	resp.Offset = last
	return resp, nil
}

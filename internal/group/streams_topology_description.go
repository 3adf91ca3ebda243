package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topology descriptions of streams groups (KIP-1331): the full processing
// graph of a Kafka Streams application (its subtopologies' source, processor
// and sink nodes, their stores and successors, and its global stores), which
// a member pushes with StreamsGroupTopologyDescriptionUpdate (key 93) and
// StreamsGroupDescribe v1 returns (kafka-streams-groups --describe).
//
// Apache Kafka 4.4 keeps descriptions in a pluggable store
// (group.streams.topology.description.plugin.class; without one the feature is
// off). Sluice has the store built in: the coordinator keeps the description
// of the group's current topology epoch and writes it to __consumer_offsets
// with the group's other records, under a record type of its own
// (keyTypeStreamsTopologyDescription; a Kafka broker reading the log skips
// record types it does not know), so that a restart or a coordinator move
// keeps it. As Kafka's coordinator does, a StreamsGroupHeartbeat v1 answer
// asks for a push (TopologyDescriptionRequired) when the coordinator holds no
// description of the group's topology epoch, at most once per backoff period
// for one epoch (30 s, doubling up to an hour), so that members do not all
// push at once; a push for another epoch than the group's is INVALID_REQUEST.

// keyTypeStreamsTopologyDescription is Sluice's record type for a streams
// group's topology description: key (type, group), value (version 0, the
// topology epoch and the description in StreamsGroupTopologyDescriptionUpdate
// v0's encoding).
const keyTypeStreamsTopologyDescription int16 = 32000

// Kafka's topology description statuses (StreamsGroupDescribe v1).
const (
	topologyDescNotRequested int8 = 0
	topologyDescNotStored    int8 = 1
	topologyDescAvailable    int8 = 3
)

// Kafka's backoff between two asks for one topology epoch's description.
const (
	topologyDescAskInitial = 30 * time.Second
	topologyDescAskMax     = time.Hour
)

// streamsTopologyDescription is what a streams group keeps of its topology
// description.
type streamsTopologyDescription struct {
	epoch int32 // the topology epoch the stored description is of
	desc  *kmsg.TopologyDescription

	askEpoch int32         // the epoch last asked for
	askAt    time.Time     // when
	askDelay time.Duration // before the next ask for askEpoch
}

// maybeAskTopologyDescription sets TopologyDescriptionRequired on a successful
// v1 heartbeat answer when the group has no description of its topology
// epoch and the backoff allows.
func (c *Coordinator) maybeAskTopologyDescription(st *streamsState, req *kmsg.StreamsGroupHeartbeatRequest, r *kmsg.StreamsGroupHeartbeatResponse) {
	if req.Version < 1 || st.subtopologies == nil || st.topologyEpoch < 0 {
		return
	}
	if st.desc != nil && st.desc.desc != nil && st.desc.epoch == st.topologyEpoch {
		return
	}
	for _, s := range r.Status {
		if s.StatusCode == streamsStaleTopology {
			return // the member's topology is not the group's: it cannot describe it
		}
	}
	if st.desc == nil {
		st.desc = &streamsTopologyDescription{epoch: -1}
	}
	d, now := st.desc, c.clock.Now()
	switch {
	case d.askEpoch != st.topologyEpoch || d.askAt.IsZero():
		d.askEpoch, d.askDelay = st.topologyEpoch, topologyDescAskInitial
	case now.Before(d.askAt.Add(d.askDelay)):
		return
	default:
		d.askDelay = min(2*d.askDelay, topologyDescAskMax)
	}
	d.askAt = now
	r.TopologyDescriptionRequired = true
	c.log.Info("group: requested topology description", "group", req.Group, "topology_epoch", st.topologyEpoch)
}

// StreamsGroupTopologyDescriptionUpdate handles StreamsGroupTopologyDescriptionUpdate
// v0: a member's push of its topology's description.
func (c *Coordinator) StreamsGroupTopologyDescriptionUpdate(req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	fail := func(err *kerr.Error, msg string) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		r.ErrorCode = err.Code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		return r
	}
	switch {
	case req.MemberID == "":
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.Group == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case c.notCoordinator(req.Group):
		return fail(kerr.NotCoordinator, "")
	}
	g := c.groups[req.Group]
	if g == nil || !g.isStreams() {
		return fail(kerr.GroupIDNotFound, fmt.Sprintf("Streams group %s not found.", req.Group))
	}
	cg, st := g.consumer, g.consumer.streams
	if cg.members[req.MemberID] == nil {
		return fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group))
	}
	if req.TopologyEpoch != st.topologyEpoch {
		return fail(kerr.InvalidRequest, fmt.Sprintf("Topology epoch %d does not match the group's current topology epoch %d.", req.TopologyEpoch, st.topologyEpoch))
	}
	desc := req.TopologyDescription
	if st.desc == nil {
		st.desc = &streamsTopologyDescription{}
	}
	st.desc.epoch, st.desc.desc = req.TopologyEpoch, &desc
	st.desc.askAt = time.Time{}
	c.persistConsumer(g, nil)
	c.log.Info("group: stored topology description", "group", req.Group, "topology_epoch", req.TopologyEpoch,
		"subtopologies", len(desc.Subtopologies), "global_stores", len(desc.GlobalStores))
	return r
}

// describeTopologyDescription fills StreamsGroupDescribe v1's description
// fields of a described group (no error).
func describeTopologyDescription(st *streamsState, include bool, dg *kmsg.StreamsGroupDescribeResponseGroup) {
	dg.AssignorName = kmsg.StringPtr("sticky") // Kafka's default (and Sluice's only) streams task assignor
	if !include {
		dg.TopologyDescriptionStatus = topologyDescNotRequested
		return
	}
	if st.subtopologies == nil || st.desc == nil || st.desc.desc == nil || st.desc.epoch != st.topologyEpoch {
		dg.TopologyDescriptionStatus = topologyDescNotStored
		return
	}
	d := st.desc.desc
	dg.TopologyDescriptionStatus = topologyDescAvailable
	dg.TopologyDescription = &kmsg.StreamsGroupDescribeResponseGroupTopologyDescription{
		Subtopologies: append([]kmsg.TopologyDescriptionSubtopology{}, d.Subtopologies...),
		GlobalStores:  append([]kmsg.TopologyDescriptionGlobalStore{}, d.GlobalStores...),
	}
}

// encodeStreamsTopologyDescriptionValue encodes the description record's value.
func encodeStreamsTopologyDescriptionValue(d *streamsTopologyDescription) []byte {
	req := kmsg.StreamsGroupTopologyDescriptionUpdateRequest{TopologyEpoch: d.epoch, TopologyDescription: *d.desc}
	return req.AppendTo(appendValueHeader())
}

func decodeStreamsTopologyDescriptionValue(v []byte) (*streamsTopologyDescription, error) {
	r := kbin.Reader{Src: v}
	if ver := r.Int16(); !r.Ok() || ver != consumerValueVersion {
		return nil, fmt.Errorf("topology description value version %d is not supported", ver)
	}
	var req kmsg.StreamsGroupTopologyDescriptionUpdateRequest
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("topology description value: %w", err)
	}
	desc := req.TopologyDescription
	return &streamsTopologyDescription{epoch: req.TopologyEpoch, desc: &desc}, nil
}

package group

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// When a streams group's tasks are assigned, as Kafka 4.4's group coordinator
// decides it:
//
//   - streams.initial.rebalance.delay.ms (group.streams.initial.rebalance.delay.ms,
//     3000): when a member joins a group that has no member, the first
//     assignment waits this long for more members, so that they do not get
//     all the tasks one after the other; a timer assigns the tasks when it ends.
//   - streams.assignment.interval.ms (group.streams.assignment.interval.ms,
//     1000, bounded by group.streams.min/max.assignment.interval.ms): at most
//     one assignment per interval; a change within it is assigned at the
//     first heartbeat after it.
//
// Meanwhile the heartbeats answer the ASSIGNMENT_DELAYED status with Kafka's
// detail. streams.rack.aware.assignment.tags (group.streams.rack.aware.assignment.tags)
// names client tags over which the standby replicas of a task are spread
// (best effort: a standby goes preferably to a member whose tag values the
// task's active and other standby replicas do not already have), and members
// that lack one of the tags are told MISSING_CLIENT_TAGS (StreamsGroupHeartbeat
// v1 only, as Kafka). A change of the tags changes the assignment
// configuration, as a change of the standby count does. streams.assignor.name
// can only name Kafka's "sticky" assignor, the one Sluice has.

// Status codes of StreamsGroupHeartbeat (streams_group.go has the others).
const (
	streamsAssignmentDelayed = 5
	streamsMissingClientTags = 6
)

const (
	detailInitialDelay       = "Assignment delayed due to the configured initial rebalance delay."
	detailAssignmentInterval = "Assignment delayed due to the configured assignment interval."
)

// splitTags splits a LIST config value (comma-separated, trimmed).
func splitTags(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// streamsAssignmentDelay reports why the group's next assignment must wait
// ("" if it need not), arming the initial-delay timer when firstJoin (a
// member joined a group that had none).
func (c *Coordinator) streamsAssignmentDelay(g *group, gcfg streamsGroupConfig, firstJoin bool) string {
	cg := g.consumer
	st := cg.streams
	now := c.clock.Now()
	if firstJoin && gcfg.initialDelay > 0 && st.initialTimer == nil {
		st.initialTimer = c.clock.AfterFunc(gcfg.initialDelay, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.closed || c.groups[g.id] != g || !g.isStreams() || g.consumer.streams != st {
				return
			}
			st.initialTimer = nil
			if len(g.consumer.members) > 0 && g.consumer.epoch > g.consumer.assignmentEpoch {
				c.computeStreamsTarget(g.consumer)
				c.persistConsumer(g, nil)
				c.log.Debug("group: streams group assigned after the initial rebalance delay", "group", g.id, "epoch", g.consumer.assignmentEpoch)
			}
		})
	}
	if st.initialTimer != nil {
		return detailInitialDelay
	}
	if gcfg.assignmentInterval > 0 && !st.assignedAt.IsZero() && now.Sub(st.assignedAt) < gcfg.assignmentInterval {
		return detailAssignmentInterval
	}
	return ""
}

// missingClientTags returns the rack-aware tags info's member lacks.
func missingClientTags(info *streamsMemberInfo, tags []string) []string {
	var missing []string
	for _, k := range tags {
		if !slices.ContainsFunc(info.clientTags, func(t kmsg.StreamsGroupHeartbeatRequestClientTag) bool { return t.Key == k }) {
			missing = append(missing, k)
		}
	}
	return missing
}

func missingTagsStatus(missing []string) kmsg.StreamsGroupHeartbeatResponseStatus {
	return kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsMissingClientTags,
		StatusDetail: fmt.Sprintf("Missing required client tags for rack-aware standby assignment: [%s]. Configure them via 'client.tag.<tagKey>' in your Streams config.",
			strings.Join(missing, ", "))}
}

// tagValue is member id's value of client tag key ("" if none).
func (st *streamsState) tagValue(id, key string) string {
	if info := st.members[id]; info != nil {
		for _, t := range info.clientTags {
			if t.Key == key {
				return t.Value
			}
		}
	}
	return ""
}

// tagOverlap counts the rack-aware tag dimensions in which member id's value
// is already used by a replica of the task (used: tag key -> values).
func (st *streamsState) tagOverlap(id string, used map[string]map[string]bool) int {
	n := 0
	for _, k := range st.rackTags {
		if v := st.tagValue(id, k); v != "" && used[k][v] {
			n++
		}
	}
	return n
}

// useTags records member id's tag values as used by a replica of a task.
func (st *streamsState) useTags(id string, used map[string]map[string]bool) {
	for _, k := range st.rackTags {
		if v := st.tagValue(id, k); v != "" {
			if used[k] == nil {
				used[k] = map[string]bool{}
			}
			used[k][v] = true
		}
	}
}

// sameTags reports whether two tag lists are the same.
func sameTags(a, b []string) bool { return slices.Equal(a, b) }

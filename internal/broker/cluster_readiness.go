package broker

import (
	"fmt"
	"slices"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// Readiness of a cluster node for the partitions it follows (/readyz,
// notReady): a broker restarted in a rolling restart is ready only once it
// is back in the in-sync set of every partition it follows, so that an
// operator (or a supervisor) waiting for /readyz before stopping the next
// broker never takes a partition below min.insync.replicas (Apache Kafka's
// operators wait for the same: no under-replicated partition). Bounded:
// a partition whose leader is not live (no leader, or a fenced one) does not
// hold readiness back, since this broker cannot join its in-sync set until
// it has a leader again; nor does a replica that a reassignment is adding or
// removing (copying a partition to a new broker may take hours).

// followedOutOfSync counts the partitions broker id follows, with a live
// leader, whose in-sync set lacks it, and names the first of them.
func followedOutOfSync(im *metadata.Image, id int32) (int, string) {
	if im == nil {
		return 0, ""
	}
	n, first := 0, ""
	for _, t := range im.SortedTopics() {
		for i, p := range t.Partitions {
			if p.Leader == id || p.Leader == metadata.NoLeader || !im.IsLive(p.Leader) ||
				!slices.Contains(p.Replicas, id) || slices.Contains(p.ISR, id) ||
				slices.Contains(p.AddingReplicas, id) || slices.Contains(p.RemovingReplicas, id) {
				continue
			}
			if n == 0 {
				first = fmt.Sprintf("%s-%d (leader %d)", t.Name, i, p.Leader)
			}
			n++
		}
	}
	return n, first
}

// followerNotReady is notReady's reason for the partitions this broker
// follows, "" when it is in every in-sync set it should be in.
func (c *clusterNode) followerNotReady() string {
	n, first := followedOutOfSync(c.pubImage.Load(), c.cfg.nodeID)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d partition(s) followed here are not in their in-sync set yet, e.g. %s", n, first)
}

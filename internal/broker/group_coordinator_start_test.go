package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/group"
)

// A single node starting on a fresh data directory creates __consumer_offsets
// and leads its partitions before the group coordinator listens for
// leadership: the coordinator must still serve them (issue #11: every
// JoinGroup of franz-go's integration tests got NOT_COORDINATOR).
func TestGroupCoordinatorServesOffsetsTopicCreatedAtStart(t *testing.T) {
	tb := startTestBroker(t, testOptions{Props: map[string]string{"offsets.topic.num.partitions": "3"}})
	check := func(when string) {
		t.Helper()
		for p := int32(0); p < 3; p++ {
			if !tb.broker().groups.Loaded(p) {
				t.Errorf("%s: %s-%d is not loaded by the group coordinator", when, group.OffsetsTopic, p)
			}
		}
		cl := tb.client()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, g := range []string{"g-a", "g-b", "g-c", "g-d", "g-e"} {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 4
			req.Group = g
			req.SessionTimeoutMillis = 10000
			req.RebalanceTimeoutMillis = 10000
			req.ProtocolType = "consumer"
			proto := kmsg.NewJoinGroupRequestProtocol()
			proto.Name = "range"
			req.Protocols = append(req.Protocols, proto)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("%s: JoinGroup %s: %v", when, g, err)
			}
			// A new dynamic member is first asked for its member id (KIP-394).
			if got := kerr.ErrorForCode(resp.ErrorCode); got != kerr.MemberIDRequired {
				t.Errorf("%s: JoinGroup %s (partition %d): %v, want MEMBER_ID_REQUIRED", when, g, group.PartitionFor(g, 3), got)
			}
		}
	}
	check("fresh data directory")
	tb.restart()
	check("after a restart")
}

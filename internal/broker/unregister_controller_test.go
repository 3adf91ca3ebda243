package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unregisterController sends UnregisterController for id to addr.
func unregisterController(t *testing.T, ctx context.Context, addr string, id int32) (*kmsg.UnregisterControllerResponse, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrUnregisterControllerRequest()
	req.ControllerID = id
	return req.RequestWith(ctx, cl)
}

// UnregisterController on a cluster, as Kafka 4.4's controller answers it:
// the active controller's own id and an unknown id are refused with Kafka's
// errors, a voter is refused until it is removed from the voters, and a
// removed controller that stopped is unregistered: DescribeQuorum no longer
// lists it among the observers, a second request finds it unregistered, and
// it joins again when it starts again.
func TestClusterUnregisterController(t *testing.T) {
	tc := startJoiningCluster(t, 2)
	a := tc.nodes[0].addr
	waitQuorum(t, a, []int32{1}, []int32{2})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	expect := func(addr string, id int32, want *kerr.Error, msg string) {
		t.Helper()
		resp, err := unregisterController(t, ctx, addr, id)
		if err != nil {
			t.Fatalf("unregister controller %d: %v", id, err)
		}
		if resp.ErrorCode != want.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, msg) {
			t.Fatalf("unregister controller %d: code %d message %v, want %s containing %q", id, resp.ErrorCode, resp.ErrorMessage, want.Message, msg)
		}
	}
	// Through the observer (forwarded to the active controller, node 1).
	expect(tc.nodes[1].addr, 1, kerr.InvalidRequest, "Controller cannot unregister itself while it is active.")
	expect(tc.nodes[1].addr, 99, kerr.ControllerIDNotRegistered, "Controller ID 99 is not currently registered.")

	if err := raftVoterChange(t, ctx, a, true, 2); err != nil {
		t.Fatalf("add voter 2: %v", err)
	}
	waitQuorum(t, a, []int32{1, 2}, nil)
	expect(a, 2, kerr.InvalidRequest, "remove it from the voters first")
	if err := raftVoterChange(t, ctx, a, false, 2); err != nil {
		t.Fatalf("remove voter 2: %v", err)
	}
	waitQuorum(t, a, []int32{1}, []int32{2})
	// Running (an observer now, answering the leader over its open
	// connections), it is refused.
	expect(a, 2, kerr.InvalidRequest, "still running")

	// Stopped, node 2 is unregistered once the leader sees it gone (a
	// running one is refused meanwhile).
	tc.nodes[1].stop()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := unregisterController(t, ctx, a, 2)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		if err == nil && (resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "still running")) {
			t.Fatalf("unregister stopped controller 2: code %d message %v", resp.ErrorCode, resp.ErrorMessage)
		}
		if time.Now().After(deadline) {
			t.Fatalf("controller 2 not unregistered within 60 s: %v %+v", err, resp)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitQuorum(t, a, []int32{1}, nil)
	expect(a, 2, kerr.ControllerIDNotRegistered, "Controller ID 2 is not currently registered.")

	// Started again, it joins again as an observer (as a restarted Kafka
	// controller registers again).
	tc.nodes[1].start()
	waitQuorum(t, a, []int32{1}, []int32{2})
}

// A single node, either path: its own id is the active controller, any
// other is not registered.
func TestUnregisterControllerSingleNode(t *testing.T) {
	for _, oneVoter := range []string{"true", "false"} {
		tb := startTestBroker(t, testOptions{Props: map[string]string{oneVoterQuorumConfig: oneVoter}})
		self := tb.broker().NodeID()
		for _, c := range []struct {
			id   int32
			code int16
		}{{self, kerr.InvalidRequest.Code}, {self + 1, kerr.ControllerIDNotRegistered.Code}} {
			req := kmsg.NewPtrUnregisterControllerRequest()
			req.ControllerID = c.id
			resp := tb.request(req).(*kmsg.UnregisterControllerResponse)
			if resp.ErrorCode != c.code || resp.ErrorMessage == nil {
				t.Errorf("%s=%s: unregister controller %d: %+v, want code %d", oneVoterQuorumConfig, oneVoter, c.id, resp, c.code)
			}
		}
	}
}

// UnregisterController needs ALTER on the cluster, as in Kafka: DESCRIBE is
// not enough.
func TestAuthzUnregisterController(t *testing.T) {
	ab := startAuthzBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	self := ab.broker().NodeID()
	req := func(user string) *kmsg.UnregisterControllerResponse {
		r := kmsg.NewPtrUnregisterControllerRequest()
		r.ControllerID = self
		return send[*kmsg.UnregisterControllerResponse](t, ab.as(user), r)
	}
	ab.grant(ctx, kadm.NewACLs().Clusters().Allow("User:alice").AllowHosts("*").Operations(kadm.OpDescribe))
	if r := req("alice"); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice with DESCRIBE only: %+v, want CLUSTER_AUTHORIZATION_FAILED", r)
	}
	ab.grant(ctx, kadm.NewACLs().Clusters().Allow("User:alice").AllowHosts("*").Operations(kadm.OpAlter))
	deadline := time.Now().Add(30 * time.Second) // the grant is applied through the metadata log
	for {
		r := req("alice")
		if r.ErrorCode == kerr.InvalidRequest.Code {
			break
		}
		if r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || time.Now().After(deadline) {
			t.Fatalf("alice with ALTER: %+v, want INVALID_REQUEST (the active controller)", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

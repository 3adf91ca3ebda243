package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sendUpdateRaftVoter sends UpdateRaftVoter for voter id through addr with
// the given listeners, kraft.version range 0-0 and leader epoch; edit
// changes the request before it is sent.
func sendUpdateRaftVoter(ctx context.Context, addr string, id, epoch int32, listeners []kmsg.UpdateRaftVoterRequestListener,
	edit func(*kmsg.UpdateRaftVoterRequest)) (*kmsg.UpdateRaftVoterResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	req.VoterID, req.CurrentLeaderEpoch, req.Listeners = id, epoch, listeners
	req.VoterDirectoryID = [16]byte{1, 2, 3}
	if edit != nil {
		edit(req)
	}
	return req.RequestWith(ctx, cl)
}

// quorumNodeListeners returns DescribeQuorum v2's endpoints by voter, as
// "NAME host:port", and the leader epoch.
func quorumNodeListeners(ctx context.Context, t *testing.T, addr string) (map[int32][]string, int32, error) {
	qr, err := describeQuorum(t, ctx, addr)
	if err != nil {
		return nil, 0, err
	}
	if len(qr.Topics) != 1 || len(qr.Topics[0].Partitions) != 1 || qr.Topics[0].Partitions[0].ErrorCode != 0 {
		return nil, 0, fmt.Errorf("DescribeQuorum answered %+v", qr.Topics)
	}
	out := map[int32][]string{}
	for _, n := range qr.Nodes {
		for _, l := range n.Listeners {
			out[n.NodeID] = append(out[n.NodeID], fmt.Sprintf("%s %s:%d", l.Name, l.Host, l.Port))
		}
	}
	return out, qr.Topics[0].Partitions[0].LeaderEpoch, nil
}

// UpdateRaftVoter (KIP-853): every voter records its own endpoints and
// kraft.version range at start; a Kafka UpdateRaftVoter for voter 3 moves
// its controller endpoint to another host name and adds a listener, the
// leader commits it, DescribeQuorum v2 shows it on every broker, the quorum
// reaches node 3 at its new address, and bad requests get Kafka's errors.
func TestClusterUpdateRaftVoter(t *testing.T) {
	var ports []int
	tc := startTestClusterWith(t, 3, func(_ int, p []int) map[string]string { ports = p; return nil })
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })

	poll := func(what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		var last string
		for time.Now().Before(deadline) {
			var ok bool
			if ok, last = cond(); ok {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s (last: %s)", what, last)
	}
	// Every voter has told its endpoints (and will not again this run).
	poll("every voter's own UpdateRaftVoter", func() (bool, string) {
		for i, n := range tc.nodes {
			if !n.srv.Broker().cluster.voterTold.Load() {
				return false, fmt.Sprintf("node %d not yet", i+1)
			}
		}
		return true, ""
	})
	for _, n := range tc.nodes {
		addr := n.addr
		poll("DescribeQuorum's endpoints via "+addr, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got, _, err := quorumNodeListeners(ctx, t, addr)
			if err != nil {
				return false, err.Error()
			}
			for i, p := range ports {
				if want := []string{fmt.Sprintf("CONTROLLER 127.0.0.1:%d", p)}; !slices.Equal(got[int32(i+1)], want) {
					return false, fmt.Sprintf("%v", got)
				}
			}
			q, ok := n.srv.Broker().cluster.store.Image().QuorumNode(2)
			if !ok || q.KRaftVersions == nil || q.KRaftVersions.Min != 0 || q.KRaftVersions.Max != 0 {
				return false, fmt.Sprintf("node 2's kraft.version range %+v", q)
			}
			return true, ""
		})
	}

	// Voter 3's controller endpoint by another name of the same address,
	// plus a second listener.
	moved := []kmsg.UpdateRaftVoterRequestListener{
		{Name: "CONTROLLER", Host: "localhost", Port: uint16(ports[2])},
		{Name: "CONTROLLER_TLS", Host: "node3.example", Port: 9443},
	}
	poll("UpdateRaftVoter for voter 3 accepted", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, epoch, err := quorumNodeListeners(ctx, t, tc.nodes[1].addr)
		if err != nil {
			return false, err.Error()
		}
		resp, err := sendUpdateRaftVoter(ctx, tc.nodes[1].addr, 3, epoch, moved, nil)
		if err != nil {
			return false, err.Error()
		}
		if resp.ErrorCode != 0 {
			// A leader change between the two requests: ask again.
			return false, kerr.ErrorForCode(resp.ErrorCode).Error()
		}
		if resp.CurrentLeader.LeaderID < 1 || resp.CurrentLeader.LeaderEpoch != epoch || resp.CurrentLeader.Port <= 0 {
			t.Fatalf("CurrentLeader %+v (epoch %d)", resp.CurrentLeader, epoch)
		}
		return true, ""
	})
	want := []string{fmt.Sprintf("CONTROLLER localhost:%d", ports[2]), "CONTROLLER_TLS node3.example:9443"}
	for _, n := range tc.nodes {
		addr := n.addr
		poll("voter 3's new endpoints via "+addr, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got, _, err := quorumNodeListeners(ctx, t, addr)
			if err != nil {
				return false, err.Error()
			}
			if !slices.Equal(got[3], want) || len(got[1]) != 1 {
				return false, fmt.Sprintf("%v", got)
			}
			if a, _ := n.srv.Broker().cluster.peers.Addr(3); n != tc.nodes[2] && a != fmt.Sprintf("localhost:%d", ports[2]) {
				return false, "peer address of node 3: " + a
			}
			return true, ""
		})
	}
	// The quorum still commits with node 3 reached at its new address.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 3, 1, nil, "after-update"); err != nil || res.Err != nil {
		t.Fatalf("create topic after the update: %v %v", err, res.Err)
	}

	// Bad requests.
	ok := []kmsg.UpdateRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(ports[1])}}
	for _, bad := range []struct {
		name      string
		id        int32
		listeners []kmsg.UpdateRaftVoterRequestListener
		edit      func(*kmsg.UpdateRaftVoterRequest)
		want      *kerr.Error
	}{
		{"not a voter", 9, ok, nil, kerr.VoterNotFound},
		{"no default listener", 2, []kmsg.UpdateRaftVoterRequestListener{{Name: "OTHER", Host: "h", Port: 1}}, nil, kerr.InvalidRequest},
		{"no listeners", 2, nil, nil, kerr.InvalidRequest},
		{"no directory id", 2, ok, func(r *kmsg.UpdateRaftVoterRequest) { r.VoterDirectoryID = [16]byte{} }, kerr.InvalidRequest},
		{"kraft.version 1 only", 2, ok, func(r *kmsg.UpdateRaftVoterRequest) {
			r.KRaftVersionFeature.MinSupportedVersion, r.KRaftVersionFeature.MaxSupportedVersion = 1, 1
		}, kerr.InvalidRequest},
		{"an old leader epoch", 2, ok, func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = -1 }, kerr.FencedLeaderEpoch},
		{"another cluster", 2, ok, func(r *kmsg.UpdateRaftVoterRequest) { r.ClusterID = kmsg.StringPtr("not-this-one") }, kerr.InconsistentClusterID},
	} {
		poll("UpdateRaftVoter "+bad.name, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, epoch, err := quorumNodeListeners(ctx, t, tc.nodes[0].addr)
			if err != nil {
				return false, err.Error()
			}
			resp, err := sendUpdateRaftVoter(ctx, tc.nodes[0].addr, bad.id, epoch, bad.listeners, bad.edit)
			if err != nil {
				return false, err.Error()
			}
			if got := kerr.ErrorForCode(resp.ErrorCode); got != bad.want {
				if got == kerr.FencedLeaderEpoch || got == kerr.UnknownLeaderEpoch || got == kerr.NotLeaderForPartition {
					return false, got.Error() // the leader changed meanwhile: ask again
				}
				t.Fatalf("UpdateRaftVoter %s: %v, want %v", bad.name, got, bad.want)
			}
			return true, ""
		})
	}
}

package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
)

// raftVoterChange sends AddRaftVoter (add) or RemoveRaftVoter to addr and
// returns the answer's error (nil on success).
func raftVoterChange(t *testing.T, ctx context.Context, addr string, add bool, id int32) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if add {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis = id, 20000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// waitQuorum polls DescribeQuorum through addr until it shows voters and
// observers.
func waitQuorum(t *testing.T, addr string, voters, observers []int32) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous: CI shares two cores
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		qr, err := describeQuorum(t, ctx, addr)
		cancel()
		if err == nil && len(qr.Topics) == 1 && qr.Topics[0].Partitions[0].ErrorCode == 0 {
			qp := qr.Topics[0].Partitions[0]
			v, o := replicaIDs(qp.CurrentVoters), replicaIDs(qp.Observers)
			if slices.Equal(v, voters) && slices.Equal(o, observers) {
				return
			}
			last = fmt.Sprintf("voters %v observers %v", v, o)
		} else {
			last = fmt.Sprintf("err %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("DescribeQuorum via %s: want voters %v observers %v, last %s", addr, voters, observers, last)
}

// A one-voter cluster grows to three voters (KIP-853): two nodes started
// with only controller.quorum.bootstrap.servers join as observers and are
// promoted with AddRaftVoter; the three voters survive the loss of the
// first; RemoveRaftVoter shrinks the quorum back to one voter, which then
// commits alone.
func TestClusterGrowAndShrinkVoters(t *testing.T) {
	tc := startJoiningCluster(t, 3)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	a := tc.nodes[0].addr
	waitQuorum(t, a, []int32{1}, []int32{2, 3})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := raftVoterChange(t, ctx, tc.nodes[2].addr, false, 2); err != kerr.VoterNotFound {
		t.Fatalf("removing an observer: %v, want VOTER_NOT_FOUND", err)
	}
	if err := raftVoterChange(t, ctx, tc.nodes[1].addr, true, 2); err != nil {
		t.Fatalf("add voter 2: %v", err)
	}
	if err := raftVoterChange(t, ctx, tc.nodes[2].addr, true, 3); err != nil {
		t.Fatalf("add voter 3: %v", err)
	}
	if err := raftVoterChange(t, ctx, a, true, 3); err != kerr.DuplicateVoter {
		t.Fatalf("adding a voter twice: %v, want DUPLICATE_VOTER", err)
	}
	waitQuorum(t, a, []int32{1, 2, 3}, nil)

	// Three voters: the first node's loss leaves a majority that commits.
	dir1 := tc.nodes[0].opts.DataDir
	tc.nodes[0].stop()
	adm = tc.admin()
	waitCluster(t, adm, "a controller among 2 and 3", func(md kadm.Metadata) bool {
		return len(md.Brokers) == 2 && (md.Controller == 2 || md.Controller == 3)
	})
	if res, err := adm.CreateTopic(ctx, 2, 2, nil, "while-1-is-down"); err != nil || res.Err != nil {
		t.Fatalf("create topic without node 1: %v %v", err, res.Err)
	}
	tc.nodes[0].opts.DataDir = dir1
	tc.nodes[0].start()
	a = tc.nodes[0].addr
	adm = tc.admin()
	waitCluster(t, adm, "three live brokers again", func(md kadm.Metadata) bool {
		_, ok := md.Topics["while-1-is-down"]
		return len(md.Brokers) == 3 && ok
	})

	// Shrink back to one voter.
	if err := raftVoterChange(t, ctx, a, false, 2); err != nil {
		t.Fatalf("remove voter 2: %v", err)
	}
	if err := raftVoterChange(t, ctx, a, false, 3); err != nil {
		t.Fatalf("remove voter 3: %v", err)
	}
	waitQuorum(t, a, []int32{1}, []int32{2, 3})
	if err := raftVoterChange(t, ctx, a, false, 1); err != kerr.InvalidRequest {
		t.Fatalf("removing the last voter: %v, want INVALID_REQUEST", err)
	}
	tc.nodes[1].stop()
	tc.nodes[2].stop()
	adm = tc.admin()
	if res, err := adm.CreateTopic(ctx, 1, 1, nil, "one-voter-again"); err != nil || res.Err != nil {
		t.Fatalf("create topic on the one voter left: %v %v", err, res.Err)
	}
}

// A voter that lost its data directory is replaced (docs/operations.md):
// removed from the voters while it is down, started empty with only
// controller.quorum.bootstrap.servers (an observer), then added back.
func TestClusterReplaceLostVoter(t *testing.T) {
	var ports []int
	tc := startTestClusterWith(t, 3, func(_ int, p []int) map[string]string { ports = p; return nil })
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	a := tc.nodes[0].addr
	waitQuorum(t, a, []int32{1, 2, 3}, nil)

	tc.nodes[2].stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := raftVoterChange(t, ctx, a, false, 3); err != nil {
		t.Fatalf("remove the lost voter: %v", err)
	}
	n3 := tc.nodes[2]
	n3.opts.DataDir = t.TempDir() // its disk is gone
	n3.opts.Props["controller.quorum.voters"] = ""
	n3.opts.Props["controller.quorum.bootstrap.servers"] = fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	n3.opts.Props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ports[2])
	n3.opts.Props["controller.listener.names"] = "CONTROLLER"
	n3.start()
	adm = tc.admin()
	waitCluster(t, adm, "node 3 back as a broker", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	waitQuorum(t, a, []int32{1, 2}, []int32{3})
	if err := raftVoterChange(t, ctx, a, true, 3); err != nil {
		t.Fatalf("add node 3 back: %v", err)
	}
	waitQuorum(t, a, []int32{1, 2, 3}, nil)
}

// A new node that lists itself in controller.quorum.voters of a running
// cluster that does not count it as a voter is refused: it would start a
// quorum of its own.
func TestClusterNewVoterOutsideRunningQuorumRefused(t *testing.T) {
	ports := freePorts(t, 2)
	tc := startTestClusterWith(t, 1, func(int, []int) map[string]string {
		return map[string]string{"controller.quorum.voters": fmt.Sprintf("1@127.0.0.1:%d", ports[0])}
	})
	adm := tc.admin()
	waitCluster(t, adm, "one live broker", func(md kadm.Metadata) bool { return len(md.Brokers) == 1 })
	props := map[string]string{"node.id": "2", "controller.quorum.voters": fmt.Sprintf("1@127.0.0.1:%d,2@127.0.0.1:%d", ports[0], ports[1])}
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Config: cfg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err = srv.Start()
	if err == nil {
		srv.Close()
		t.Fatal("a new voter outside the running quorum started")
	}
	if !strings.Contains(err.Error(), "does not count it as a voter") {
		t.Fatalf("unclear refusal: %v", err)
	}
}

// startJoiningCluster starts n nodes: node 1 the one voter of the metadata
// quorum, the others with only controller.quorum.bootstrap.servers, so that
// they join as observers (KIP-853).
func startJoiningCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	ports := freePorts(t, n)
	return startTestClusterWith(t, n, func(id int, _ []int) map[string]string {
		m := map[string]string{
			"listeners":                 "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:" + fmt.Sprint(ports[id-1]),
			"controller.listener.names": "CONTROLLER",
		}
		if id == 1 {
			m["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", ports[0])
		} else {
			m["controller.quorum.voters"] = ""
			m["controller.quorum.bootstrap.servers"] = fmt.Sprintf("127.0.0.1:%d", ports[0])
		}
		return m
	})
}

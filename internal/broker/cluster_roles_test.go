package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
)

// describeQuorum asks addr for the metadata quorum's state.
func describeQuorum(t *testing.T, ctx context.Context, addr string) (*kmsg.DescribeQuorumResponse, error) {
	t.Helper()
	one, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = "__cluster_metadata"
	dt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = append(dq.Topics, dt)
	return dq.RequestWith(ctx, one)
}

func replicaIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []int32 {
	var out []int32
	for _, r := range rs {
		out = append(out, r.ReplicaID)
	}
	slices.Sort(out)
	return out
}

// Process roles: node 1 is controller-only (a voter with no Kafka listener,
// never a broker), nodes 2 and 3 are combined, node 4 is broker-only (it
// follows the metadata log as a raft learner) and node 5 is broker-only and
// knows the quorum only through controller.quorum.bootstrap.servers.
// Partitions are placed on the broker-only nodes; stopping one moves its
// leaderships to the other replicas.
func TestClusterProcessRoles(t *testing.T) {
	ports := freePorts(t, 3)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	tc := startTestClusterWith(t, 5, func(id int, _ []int) map[string]string {
		m := map[string]string{"controller.quorum.voters": strings.Join(voters, ",")}
		switch id {
		case 1:
			m["process.roles"] = "controller"
		case 4:
			m["process.roles"] = "broker"
		case 5:
			m["process.roles"] = "broker"
			m["controller.quorum.voters"] = ""
			m["controller.quorum.bootstrap.servers"] = fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[1], ports[2])
		}
		return m
	})
	if tc.nodes[0].addr != "" {
		t.Fatalf("the controller-only node has a Kafka listener: %s", tc.nodes[0].addr)
	}
	adm := tc.admin()
	waitCluster(t, adm, "brokers 2-5 live", func(md kadm.Metadata) bool {
		ids := md.Brokers.NodeIDs()
		slices.Sort(ids)
		return slices.Equal(ids, []int32{2, 3, 4, 5}) && md.Controller > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The quorum: three voters, two observers.
	deadline := time.Now().Add(60 * time.Second)
	for {
		qr, err := describeQuorum(t, ctx, tc.nodes[4].addr)
		if err == nil && len(qr.Topics) == 1 && qr.Topics[0].Partitions[0].ErrorCode == 0 {
			qp := qr.Topics[0].Partitions[0]
			if slices.Equal(replicaIDs(qp.CurrentVoters), []int32{1, 2, 3}) && slices.Equal(replicaIDs(qp.Observers), []int32{4, 5}) {
				break
			}
			err = fmt.Errorf("voters %v observers %v", replicaIDs(qp.CurrentVoters), replicaIDs(qp.Observers))
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeQuorum: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if res, err := adm.CreateTopic(ctx, 8, 2, nil, "roles"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	md := waitCluster(t, adm, "roles led everywhere", func(md kadm.Metadata) bool {
		leaders := map[int32]int{}
		for _, p := range md.Topics["roles"].Partitions {
			leaders[p.Leader]++
		}
		return len(md.Topics["roles"].Partitions) == 8 && leaders[-1] == 0 && leaders[4] > 0 && leaders[5] > 0
	})
	for _, p := range md.Topics["roles"].Partitions {
		if slices.Contains(p.Replicas, 1) {
			t.Fatalf("partition %d placed on the controller-only node: %v", p.Partition, p.Replicas)
		}
	}

	// Records go to every partition, including those led by broker-only nodes.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("roles"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 16 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d", i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	// Stop broker-only node 4: its leaderships move to the other replicas.
	tc.nodes[3].stop()
	adm = tc.admin()
	waitCluster(t, adm, "leadership moved off broker 4", func(md kadm.Metadata) bool {
		if len(md.Brokers) != 3 {
			return false
		}
		for _, p := range md.Topics["roles"].Partitions {
			if p.Leader == 4 || p.Leader < 0 {
				return false
			}
		}
		return true
	})

	// Both broker-only nodes restart on their data directories (node 4's
	// peer port, chosen by the system, changes; node 5 knows its raft
	// cluster id from its quorum directory): they follow the log again,
	// register and rejoin the in-sync sets.
	tc.nodes[4].restart()
	tc.nodes[3].start()
	adm = tc.admin()
	waitCluster(t, adm, "brokers 4 and 5 back in every in-sync set", func(md kadm.Metadata) bool {
		if len(md.Brokers) != 4 {
			return false
		}
		for _, p := range md.Topics["roles"].Partitions {
			if len(p.ISR) != 2 {
				return false
			}
		}
		return true
	})
	waitQuorum(t, tc.nodes[4].addr, []int32{1, 2, 3}, []int32{4, 5})
}

// Kafka's stock one-node server.properties (its own controller listener as
// the only bootstrap server, no voters) still runs a single node; another
// node's address makes a cluster node that joins through it.
func TestParseClusterConfigBootstrapSelf(t *testing.T) {
	props := map[string]string{
		"process.roles": "broker,controller", "node.id": "1",
		"controller.quorum.bootstrap.servers": "localhost:9093",
		"listeners":                           "PLAINTEXT://:9092,CONTROLLER://:9093",
		"controller.listener.names":           "CONTROLLER",
		"listener.security.protocol.map":      "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
	}
	props[oneVoterQuorumConfig] = "false"
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	if cc, err := parseClusterConfig(cfg); err != nil || cc != nil {
		t.Fatalf("stock single-node file: %+v %v, want a single node", cc, err)
	}
	// With the implicit one-voter quorum, the same file makes this node
	// the only voter, its controller listener on the file's port.
	props[oneVoterQuorumConfig] = "true"
	if cfg, err = config.NewBroker(props); err != nil {
		t.Fatal(err)
	}
	if cc, err := parseClusterConfig(cfg); err != nil || cc == nil || !cc.implicit || cc.observer || !cc.broker || !cc.controller ||
		len(cc.voters) != 1 || cc.peerBind != ":9093" || len(cc.bootstrap) != 0 {
		t.Fatalf("stock single-node file, one-voter quorum: %+v %v", cc, err)
	}
	// A broker-only node without a quorum to follow is refused.
	if cfg, err = config.NewBroker(map[string]string{"process.roles": "broker", oneVoterQuorumConfig: "true"}); err != nil {
		t.Fatal(err)
	}
	if cc, err := parseClusterConfig(cfg); err == nil || !strings.Contains(err.Error(), "process.roles=broker needs") {
		t.Fatalf("broker-only without quorum config: %+v %v", cc, err)
	}
	delete(props, oneVoterQuorumConfig)
	props["controller.quorum.bootstrap.servers"] = "10.0.0.9:9093"
	if cfg, err = config.NewBroker(props); err != nil {
		t.Fatal(err)
	}
	cc, err := parseClusterConfig(cfg)
	if err != nil || cc == nil || !cc.observer || !cc.broker || !cc.controller || len(cc.bootstrap) != 1 {
		t.Fatalf("bootstrap through another node: %+v %v", cc, err)
	}
	props["process.roles"] = "broker"
	props["controller.quorum.voters"] = "1@10.0.0.1:9093"
	if cfg, err = config.NewBroker(props); err != nil {
		t.Fatal(err)
	}
	if _, err := parseClusterConfig(cfg); err == nil || !strings.Contains(err.Error(), "no controller role") {
		t.Fatalf("a voter without the controller role: %v", err)
	}
}

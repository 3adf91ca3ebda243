package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/group"
	"github.com/sluice-broker/sluice/internal/txn"
)

// A node with no quorum config and sluice.one.voter.quorum=true is the only
// voter of its own quorum and serves as a single node does when Start
// returns: registered, its internal topics created. It keeps its cluster id
// and topics across restarts, restarts as the only voter of
// controller.quorum.voters (to grow) with the same metadata, and back
// without quorum config again.
func TestOneVoterQuorumNode(t *testing.T) {
	tb := startTestBroker(t, testOptions{Quiet: true, Props: map[string]string{oneVoterQuorumConfig: "true"}})
	b := tb.broker()
	if b.cluster == nil || !b.clusterCfg.implicit {
		t.Fatal("not an implicit one-voter quorum node")
	}
	// Ready when Start returns: no polling.
	dc := tb.request(kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse)
	if dc.ErrorCode != 0 || len(dc.Brokers) != 1 || dc.Brokers[0].NodeID != 1 || dc.ControllerID != 1 || dc.ClusterID != b.ClusterID() {
		t.Fatalf("describe cluster right after start: %+v", dc)
	}
	for _, name := range []string{group.OffsetsTopic, txn.TransactionStateTopic} {
		if _, ok := b.topics.Get(name); !ok {
			t.Fatalf("%s not created when Start returned", name)
		}
	}
	if r := b.cluster.notReady(); r != "" {
		t.Fatalf("not ready when Start returned: %s", r)
	}
	if _, err := os.Stat(filepath.Join(tb.opts.DataDir, quorumDirName)); err != nil {
		t.Fatalf("no quorum directory: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topicID := func(adm *kadm.Client, name string) string {
		t.Helper()
		td, err := adm.ListTopics(ctx, name)
		if err != nil || td[name].Err != nil {
			t.Fatalf("list %s: %v %v", name, err, td[name].Err)
		}
		return fmt.Sprint(td[name].ID)
	}
	adm := tb.admin()
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "first"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	id, cluster := topicID(adm, "first"), b.ClusterID()

	check := func(step string, topics ...string) {
		t.Helper()
		adm := tb.admin()
		if got := tb.broker().ClusterID(); got != cluster {
			t.Fatalf("%s: cluster id %s, want %s", step, got, cluster)
		}
		if got := topicID(adm, "first"); got != id {
			t.Fatalf("%s: topic id %s, want %s", step, got, id)
		}
		for _, name := range topics {
			topicID(adm, name)
		}
	}
	tb.restart()
	check("implicit restart")

	// Restarted as the only voter of controller.quorum.voters: same quorum.
	tb.stop()
	port := freePorts(t, 1)[0]
	tb.opts.Props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", port)
	tb.opts.Props["broker.heartbeat.interval.ms"] = "100"
	tb.start()
	if tb.broker().clusterCfg.implicit {
		t.Fatal("implicit with controller.quorum.voters set")
	}
	adm = tb.admin()
	waitCluster(t, adm, "the node live with its topic", func(md kadm.Metadata) bool {
		td, ok := md.Topics["first"]
		return len(md.Brokers) == 1 && ok && len(td.Partitions) == 2 && td.Partitions[0].Leader == 1
	})
	check("restart with controller.quorum.voters")
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "second"); err != nil || r.Err != nil {
		t.Fatalf("create with voters: %v %v", err, r.Err)
	}

	// And back without quorum config.
	tb.stop()
	delete(tb.opts.Props, "controller.quorum.voters")
	tb.start()
	check("implicit again", "second")
}

// A single node's ACLs, client quotas, dynamic broker configs and group
// configs (kept in files of its data directory) are in the metadata once it
// restarts as a one-voter quorum.
func TestOneVoterQuorumImportsSingleNodeState(t *testing.T) {
	props := map[string]string{oneVoterQuorumConfig: "false",
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:ANONYMOUS"}
	tb := startTestBroker(t, testOptions{Quiet: true, Props: props})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := tb.admin()
	acl := kadm.NewACLs().Topics("orders").Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create acl: %v %+v", err, res)
	}
	user := kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("alice")}}
	setQuota(t, adm, user, "producer_byte_rate", 1024)
	errCode(t, "cluster-wide config", alterBroker(tb, "", setOp("log.retention.ms", "7000")), 0)
	if code := alterGroupConfig(t, tb, "sg", "share.auto.offset.reset", kmsg.StringPtr("earliest")); code != 0 {
		t.Fatalf("group config: %d", code)
	}

	tb.stop()
	tb.opts.Props[oneVoterQuorumConfig] = "true"
	tb.start()
	if tb.broker().cluster == nil {
		t.Fatal("not a one-voter quorum after the restart")
	}
	im := tb.broker().cluster.store.Image()
	if len(im.ACLs) != 1 || len(im.ClientQuotas) != 1 || im.BrokerConfigs[""]["log.retention.ms"] != "7000" ||
		im.GroupConfigs["sg"]["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("metadata after the upgrade: acls %+v quotas %+v broker configs %+v group configs %+v",
			im.ACLs, im.ClientQuotas, im.BrokerConfigs, im.GroupConfigs)
	}
	adm = tb.admin()
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || len(described[0].Described) != 1 || described[0].Described[0].Principal != "User:bob" {
		t.Fatalf("describe acls: %v %+v", err, described)
	}
	qs, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: kmsg.StringPtr("alice")}})
	if err != nil || len(qs) != 1 || len(qs[0].Values) != 1 || qs[0].Values[0].Value != 1024 {
		t.Fatalf("describe quotas: %v %+v", err, qs)
	}
	if c := describeBroker(tb, "", "log.retention.ms")["log.retention.ms"]; c.Value == nil || *c.Value != "7000" {
		t.Fatalf("cluster-wide config: %+v", c)
	}
	if v, _ := describeGroupConfig(t, tb, "sg", "share.auto.offset.reset"); v != "earliest" {
		t.Fatalf("group config: %s", v)
	}
}

// A one-voter quorum without a configured controller listener serves none:
// the address it recorded takes no connection.
func TestOneVoterQuorumServesNoControllerListener(t *testing.T) {
	tb := startTestBroker(t, testOptions{Quiet: true, Props: map[string]string{oneVoterQuorumConfig: "true"}})
	c := tb.broker().cluster
	if c == nil || !c.cfg.localOnly {
		t.Fatal("not a one-voter quorum without a controller listener")
	}
	if conn, err := net.DialTimeout("tcp", c.peerAddr, 2*time.Second); err == nil {
		conn.Close()
		t.Fatalf("the controller address %s took a connection", c.peerAddr)
	}
	// The node works without it: a topic is created through the controller.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := tb.admin().CreateTopic(ctx, 1, 1, nil, "t"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
}

package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/config"
)

// A single node's data directory, restarted as the only voter of a new
// cluster, keeps its cluster id, topic ids, configs, records (at their
// offsets), committed offsets, SCRAM credentials and transactional state.
func TestClusterUpgradeSingleNodeInPlace(t *testing.T) {
	// A single node of the earlier path (a one-voter quorum by default now).
	tb := startTestBroker(t, testOptions{Quiet: true, Props: map[string]string{"offsets.topic.num.partitions": "2",
		"transaction.state.log.num.partitions": "2", oneVoterQuorumConfig: "false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(tb.client())
	if res, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kmsgStr("123456789")}, "kept"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	pr := tb.client(kgo.DefaultProduceTopic("kept"), kgo.TransactionalID("tx-kept"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		r := kgo.StringRecord(fmt.Sprintf("v%d", i))
		r.Partition = int32(i % 3)
		if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	pr.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "kept", Partition: 1, At: 2, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "g-kept", offs); err != nil {
		t.Fatalf("commit offsets: %v", err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatalf("scram: %v", err)
	}
	before, err := adm.ListTopics(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	idBefore := before["kept"].ID
	clusterBefore := tb.broker().ClusterID()

	// Restart on the same directory as the only voter of a new cluster.
	tb.stop()
	port := freePorts(t, 1)[0]
	tb.opts.Props["node.id"] = "1"
	tb.opts.Props["process.roles"] = "broker,controller"
	tb.opts.Props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", port)
	tb.opts.Props["controller.quorum.election.timeout.ms"] = "500"
	tb.opts.Props["broker.heartbeat.interval.ms"] = "100"
	tb.start()
	if tb.broker().cluster == nil {
		t.Fatal("not a cluster node after the restart")
	}
	adm = kadm.NewClient(tb.client())
	md := waitCluster(t, adm, "the upgraded node live with its topic led", func(md kadm.Metadata) bool {
		td, ok := md.Topics["kept"]
		if len(md.Brokers) != 1 || !ok || len(td.Partitions) != 3 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader != 1 {
				return false
			}
		}
		return true
	})
	if md.Cluster != clusterBefore {
		t.Fatalf("cluster id %q, was %q", md.Cluster, clusterBefore)
	}
	if got := md.Topics["kept"].ID; got != idBefore {
		t.Fatalf("topic id %v, was %v", got, idBefore)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("kept", nil); err != nil || !hasConfig(v, "retention.ms", "123456789") {
		t.Fatalf("retention.ms lost: %+v %v", v, err)
	}
	fo, err := adm.FetchOffsets(ctx, "g-kept")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fo.Lookup("kept", 1); !ok || o.At != 2 {
		t.Fatalf("committed offset: %+v %v", o, ok)
	}
	sc, err := adm.DescribeUserSCRAMs(ctx, "alice")
	if err != nil || len(sc["alice"].CredInfos) != 1 {
		t.Fatalf("SCRAM credentials: %+v %v", sc, err)
	}
	// The committed transaction reads back read_committed, at its offsets,
	// and the transactional id's producer is fenced by a new one as before.
	cl := tb.client(kgo.ConsumeTopics("kept"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int64{}
	for len(got) < 9 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 9 records: %v", len(got), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r.Offset })
	}
	for i := range 9 {
		if off := got[fmt.Sprintf("v%d", i)]; off != int64(i/3) {
			t.Fatalf("v%d at offset %d, want %d", i, off, i/3)
		}
	}
	pr2 := tb.client(kgo.DefaultProduceTopic("kept"), kgo.TransactionalID("tx-kept"))
	if err := pr2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := pr2.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("transactional produce after the upgrade: %v", err)
	}
	if err := pr2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the upgrade: %v", err)
	}

	// A second start of the upgraded directory imports nothing again.
	tb.restart()
	adm = kadm.NewClient(tb.client())
	waitCluster(t, adm, "the topic after a second restart", func(md kadm.Metadata) bool {
		td, ok := md.Topics["kept"]
		return ok && td.ID == idBefore && len(md.Brokers) == 1
	})
	if n := countLines(tb.logs.text(), "upgraded a single-node data directory"); n != 1 {
		t.Fatalf("imported %d times, want once", n)
	}
}

func kmsgStr(s string) *string { return &s }

func hasConfig(rc kadm.ResourceConfig, key, value string) bool {
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

func countLines(text, sub string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// A single node's data directory is refused as a node of a cluster with
// other voters, whose metadata would not know its topics.
func TestClusterUpgradeRefusedWithOtherVoters(t *testing.T) {
	// A single node of the earlier path, and a one-voter quorum without
	// quorum config (cluster_implicit.go): both refused with the same advice.
	for _, oneVoter := range []string{"false", "true"} {
		tb := startTestBroker(t, testOptions{Quiet: true, Props: map[string]string{oneVoterQuorumConfig: oneVoter}})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if res, err := kadm.NewClient(tb.client()).CreateTopic(ctx, 1, 1, nil, "mine"); err != nil || res.Err != nil {
			t.Fatalf("create: %v %v", err, res.Err)
		}
		cancel()
		tb.stop()
		ports := freePorts(t, 2)
		props := map[string]string{"node.id": "1", "controller.quorum.voters": fmt.Sprintf("1@127.0.0.1:%d,2@127.0.0.1:%d", ports[0], ports[1])}
		cfg, err := config.NewBroker(props)
		if err != nil {
			t.Fatal(err)
		}
		srv := NewServer(Options{Listen: "127.0.0.1:0", DataDir: tb.opts.DataDir, Config: cfg,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		err = srv.Start()
		if err == nil {
			srv.Close()
			t.Fatalf("%s=%s: the data directory started as one of two voters", oneVoterQuorumConfig, oneVoter)
		}
		if !strings.Contains(err.Error(), "only voter of a new cluster") {
			t.Fatalf("%s=%s: unclear refusal: %v", oneVoterQuorumConfig, oneVoter, err)
		}
	}
}

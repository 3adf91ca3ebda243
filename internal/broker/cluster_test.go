package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/security/sectest"
	"github.com/sluice-broker/sluice/internal/testport"
)

// freePorts returns n TCP ports free on 127.0.0.1, reserved for the test
// (internal/testport: a port closed here and bound later by a node must not
// be taken in between by another listener or client connection).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	return testport.Free(t, n)
}

// testCluster is n in-process cluster nodes (combined broker and
// controller) on 127.0.0.1.
type testCluster struct {
	t     testing.TB
	nodes []*testBroker
}

func startTestCluster(t testing.TB, n int, extra map[string]string) *testCluster {
	t.Helper()
	return startTestClusterWith(t, n, func(int, []int) map[string]string { return extra })
}

// startTestClusterWith is startTestCluster with each node's extra configs
// from extra(node id, the voters' controller ports).
func startTestClusterWith(t testing.TB, n int, extra func(id int, ports []int) map[string]string) *testCluster {
	t.Helper()
	return startTestClusterFS(t, n, extra, nil)
}

// startTestClusterFS is startTestClusterWith with each node's filesystem
// from fsFor(node id) (nil: the OS's).
func startTestClusterFS(t testing.TB, n int, extra func(id int, ports []int) map[string]string, fsFor nodeFS) *testCluster {
	t.Helper()
	ports := freePorts(t, n)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	tc := &testCluster{t: t}
	for i := range n {
		props := map[string]string{
			"node.id":                               fmt.Sprint(i + 1),
			"process.roles":                         "broker,controller",
			"controller.quorum.voters":              strings.Join(voters, ","),
			"controller.quorum.election.timeout.ms": "500",
			"broker.session.timeout.ms":             "1500",
			"broker.heartbeat.interval.ms":          "100",
			"offsets.topic.num.partitions":          "3",
			"transaction.state.log.num.partitions":  "3",
		}
		for k, v := range extra(i+1, ports) {
			props[k] = v
		}
		opts := testOptions{Props: props, Quiet: true}
		if fsFor != nil {
			opts.FS = fsFor(i + 1)
		}
		tc.nodes = append(tc.nodes, startTestBroker(t, opts))
	}
	tc.stopOnCleanup()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, n := range tc.nodes {
			lines := strings.Split(n.logs.text(), "\n")
			if len(lines) > 80 && os.Getenv("SLUICE_TEST_FULL_LOGS") == "" {
				lines = lines[len(lines)-80:]
			}
			t.Logf("--- node %d log (last lines) ---\n%s", i+1, strings.Join(lines, "\n"))
		}
	})
	return tc
}

// stopOnCleanup makes the test's end stop the running nodes, last to
// first (after the failure logs are written, before each node's own
// cleanup). The last one has no quorum left to commit its controlled
// shutdown and would wait out the 2 s timeout of that last heartbeat in
// every cluster test; its broker epoch is cleared first, so that it skips
// the heartbeat as a node that never registered does. Every other node
// still shuts down in the controlled way.
func (tc *testCluster) stopOnCleanup() {
	tc.t.Cleanup(func() {
		var running []*testBroker
		for _, n := range tc.nodes {
			if n.srv != nil {
				running = append(running, n)
			}
		}
		for i := len(running) - 1; i >= 0; i-- {
			n := running[i]
			if b := n.srv.Broker(); i == 0 && b != nil && b.cluster != nil {
				b.cluster.epoch.Store(0)
			}
			n.stop()
		}
	})
}

func (tc *testCluster) addrs() []string {
	var out []string
	for _, n := range tc.nodes {
		if n.srv != nil && n.addr != "" {
			out = append(out, n.addr)
		}
	}
	return out
}

// admin returns an admin client of the running nodes. Its metadata is
// at most 50 ms old (kadm answers Metadata from kgo's cache, for 5 s by
// default): waitCluster sees a change as soon as the brokers do, instead of
// up to 5 s later, and never returns a condition that held 5 s ago only.
func (tc *testCluster) admin() *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RetryTimeout(10*time.Second),
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// client returns a client of the running nodes that retries for up to a
// minute, with metadata at most 50 ms old (as admin's); it is closed when
// the test ends.
func (tc *testCluster) client() *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RetryTimeout(60*time.Second),
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(cl.Close)
	return cl
}

// waitCluster polls until cond holds for the metadata a broker returns to
// adm now.
func waitCluster(t *testing.T, adm *kadm.Client, what string, cond func(kadm.Metadata) bool) kadm.Metadata {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// WithAuthorizedOps makes kadm ask a broker: it would otherwise
		// answer from kgo's metadata cache, up to 5 s old.
		md, err := adm.Metadata(kadm.WithAuthorizedOps(ctx))
		cancel()
		if err == nil && cond(md) {
			return md
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last metadata err %v, brokers %v, controller %d)", what, err, md.Brokers.NodeIDs(), md.Controller)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterThreeNodes(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool {
		return len(md.Brokers) == 3 && md.Controller > 0
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, 6, 1, nil, "spread")
	if err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	if res, err := adm.CreateTopic(ctx, 1, 4, nil, "rf4"); err == nil && res.Err == nil {
		t.Fatalf("replication factor 4 accepted on three brokers")
	}
	md := waitCluster(t, adm, "spread with leaders", func(md kadm.Metadata) bool {
		td, ok := md.Topics["spread"]
		if !ok || len(td.Partitions) != 6 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 1 {
				return false
			}
		}
		return true
	})
	// DescribeQuorum, asked of every broker, names the controller as the
	// leader of three voters that all have the committed entries. (Polled:
	// on a loaded machine an election may move the controller meanwhile.)
	for _, addr := range tc.addrs() {
		one, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		var last string
		quorumOK := func() bool {
			dq := kmsg.NewPtrDescribeQuorumRequest()
			dt := kmsg.NewDescribeQuorumRequestTopic()
			dt.Topic = "__cluster_metadata"
			dt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
			dq.Topics = append(dq.Topics, dt)
			qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
			defer qcancel()
			qr, err := dq.RequestWith(qctx, one)
			if err != nil {
				last = err.Error()
				return false
			}
			if len(qr.Topics) != 1 || len(qr.Topics[0].Partitions) != 1 {
				last = fmt.Sprintf("%+v", qr)
				return false
			}
			qp := qr.Topics[0].Partitions[0]
			mreq := kmsg.NewPtrMetadataRequest()
			mreq.Topics = []kmsg.MetadataRequestTopic{}
			mr, err := mreq.RequestWith(qctx, one)
			if err != nil {
				last = err.Error()
				return false
			}
			last = fmt.Sprintf("%+v (controller %d)", qp, mr.ControllerID)
			return qp.ErrorCode == 0 && qp.LeaderID > 0 && qp.LeaderID == mr.ControllerID && len(qp.CurrentVoters) == 3 && qp.HighWatermark > 0
		}
		deadline := time.Now().Add(60 * time.Second)
		for !quorumOK() {
			if time.Now().After(deadline) {
				t.Fatalf("DescribeQuorum via %s: %s", addr, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
		one.Close()
	}
	per := map[int32]int{}
	for _, p := range md.Topics["spread"].Partitions {
		per[p.Leader]++
	}
	if len(per) != 3 || per[1] != 2 || per[2] != 2 || per[3] != 2 {
		t.Fatalf("leaders not spread evenly: %v", per)
	}

	// Produce through every broker and read everything back.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("spread"),
		kgo.ConsumeTopics("spread"), kgo.ConsumerGroup("g1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const total = 60
	for i := range total {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < total {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), total, err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()

	// Stop the active controller: another node takes over, the dead node's
	// partitions go offline (replication factor 1), topics can be created.
	ctl := md.Controller
	victim := tc.nodes[ctl-1]
	victimDir := victim.opts.DataDir
	victim.stop()
	adm = tc.admin()
	waitCluster(t, adm, "a new controller and two live brokers", func(md kadm.Metadata) bool {
		return md.Controller > 0 && md.Controller != ctl && len(md.Brokers) == 2
	})
	md = waitCluster(t, adm, "the stopped broker's partitions offline", func(md kadm.Metadata) bool {
		for _, p := range md.Topics["spread"].Partitions {
			if p.Leader == ctl {
				return false
			}
		}
		return true
	})
	if res, err := adm.CreateTopic(ctx, 4, 1, nil, "after-failover"); err != nil || res.Err != nil {
		t.Fatalf("create topic after failover: %v %v", err, res.Err)
	}

	// The node comes back on its data directory: it rejoins, is unfenced and
	// leads its partitions again; every record is still there.
	victim.opts.DataDir = victimDir
	victim.start()
	adm = tc.admin()
	waitCluster(t, adm, "all partitions led again", func(md kadm.Metadata) bool {
		if len(md.Brokers) != 3 {
			return false
		}
		for _, p := range md.Topics["spread"].Partitions {
			if p.Leader < 1 {
				return false
			}
		}
		_, ok := md.Topics["after-failover"]
		return ok
	})
	cl2, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("spread"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	seen = map[string]bool{}
	for len(seen) < total {
		fs := cl2.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("after restart consumed %d of %d: %v", len(seen), total, err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	// The group's commit survived (its coordinator partition may have
	// moved with the failover).
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != total {
		t.Fatalf("committed offsets sum to %d, want %d", committed, total)
	}
}

// A transaction over partitions led by all three brokers commits and aborts
// correctly: the coordinator writes its markers to the other brokers.
func TestClusterTransactionAcrossBrokers(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 3, 1, nil, "txn-spread"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	md := waitCluster(t, adm, "leaders on three brokers", func(md kadm.Metadata) bool {
		leaders := map[int32]bool{}
		for _, p := range md.Topics["txn-spread"].Partitions {
			if p.Leader > 0 {
				leaders[p.Leader] = true
			}
		}
		return len(leaders) == 3
	})
	_ = md
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.TransactionalID("tx-across"),
		kgo.DefaultProduceTopic("txn-spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	run := func(prefix string, commit bool) {
		if err := pr.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for p := int32(0); p < 3; p++ {
			r := kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, p))
			r.Partition = p
			if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	run("aborted", false)
	run("committed", true)

	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("txn-spread"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]bool{}
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer got %v: markers missing on some broker?", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	for v := range got {
		if !strings.HasPrefix(v, "committed-") {
			t.Fatalf("read_committed returned %q from an aborted transaction", v)
		}
	}
}

// Replication factor 3 with min.insync.replicas=2: acks=all records are on
// every in-sync replica; when a leader stops, a new one is elected from the
// in-sync set and serves every acknowledged record at its offset; the
// stopped broker leaves the in-sync sets and joins them again once it has
// caught up after its restart.
func TestClusterReplication(t *testing.T) {
	tc := startTestCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "3000", "leader.imbalance.check.interval.seconds": "1"})
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mir := "2"
	if res, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &mir}, "rep"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	allISR := func(n int) func(kadm.Metadata) bool {
		return func(md kadm.Metadata) bool {
			ps := md.Topics["rep"].Partitions
			if len(ps) != 3 {
				return false
			}
			for _, p := range ps {
				if p.Leader < 1 || len(p.Replicas) != 3 || len(p.ISR) != n {
					return false
				}
			}
			return true
		}
	}
	waitCluster(t, adm, "three in-sync replicas everywhere", allISR(3))

	type at struct {
		p   int32
		off int64
	}
	acked := map[string]at{}
	pr, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("rep"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	produce := func(prefix string, n int) {
		for i := range n {
			v := fmt.Sprintf("%s-%03d", prefix, i)
			res := pr.ProduceSync(ctx, kgo.StringRecord(v))
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked[v] = at{res[0].Record.Partition, res[0].Record.Offset}
		}
	}
	// ackedOn is how many records were acknowledged on partition p (the
	// round-robin partitioner skips a partition that is briefly without a
	// leader, so it need not be a third).
	ackedOn := func(p int32) int64 {
		var n int64
		for _, a := range acked {
			if a.p == p {
				n++
			}
		}
		return n
	}
	produce("a", 60)

	// Every replica holds the acknowledged records.
	for i, n := range tc.nodes {
		for p := int32(0); p < 3; p++ {
			l := n.broker().logs.Get("rep", p)
			if l == nil {
				t.Fatalf("node %d has no replica of rep-%d", i+1, p)
			}
			want := ackedOn(p)
			waitFor(t, fmt.Sprintf("node %d's rep-%d to catch up to %d", i+1, p, want), func() bool {
				return l.LogEndOffset() == want && l.HighWatermark() == want
			})
		}
	}

	// Stop the leader of partition 0.
	md := waitCluster(t, adm, "metadata", allISR(3))
	victim := md.Topics["rep"].Partitions[0].Leader
	vnode := tc.nodes[victim-1]
	vdir := vnode.opts.DataDir
	vnode.stop()
	adm = tc.admin()
	waitCluster(t, adm, "new leaders and two in-sync replicas", func(md kadm.Metadata) bool {
		for _, p := range md.Topics["rep"].Partitions {
			if p.Leader < 1 || p.Leader == victim || len(p.ISR) != 2 {
				return false
			}
		}
		return true
	})
	// The survivors report the shrunken in-sync sets in their
	// under-replicated gauge; one of them is the active controller.
	underReplicated := func() (under, active int) {
		for _, n := range tc.nodes {
			if n.srv != nil {
				c := n.broker().replicationCounts()
				under += c.UnderReplicated
				active += c.ActiveController
			}
		}
		return
	}
	waitFor(t, "three under-replicated partitions and one active controller", func() bool {
		under, active := underReplicated()
		return under == 3 && active == 1
	})
	// /readyz says why a broker leading under-replicated partitions is not
	// ready (operators wait for it between the steps of a rolling restart).
	notReady := 0
	for _, n := range tc.nodes {
		if n.srv != nil && strings.Contains(n.broker().cluster.notReady(), "in-sync") {
			notReady++
		}
	}
	if notReady == 0 {
		t.Fatal("no survivor reports its under-replicated partitions as not ready")
	}
	pr.Close()
	pr, err = kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("rep"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	produce("b", 30)

	// It comes back, catches up, and is in every in-sync set again.
	vnode.opts.DataDir = vdir
	vnode.start()
	adm = tc.admin()
	waitCluster(t, adm, "three in-sync replicas again", allISR(3))
	waitFor(t, "no under-replicated partition", func() bool { under, _ := underReplicated(); return under == 0 })
	for i, n := range tc.nodes {
		waitFor(t, fmt.Sprintf("node %d ready", i+1), func() bool { return n.broker().cluster.notReady() == "" })
	}
	// auto.leader.rebalance.enable: each partition goes back to its
	// preferred (first) replica.
	waitCluster(t, adm, "preferred leaders", func(md kadm.Metadata) bool {
		for _, p := range md.Topics["rep"].Partitions {
			if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
	for p := int32(0); p < 3; p++ {
		l := vnode.broker().logs.Get("rep", p)
		want := ackedOn(p)
		waitFor(t, fmt.Sprintf("restarted rep-%d to catch up to %d", p, want), func() bool { return l != nil && l.LogEndOffset() == want })
	}

	// DeleteRecords on the leader moves every replica's log start.
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "rep", Partition: 0, At: 5})
	if res, err := adm.DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		md, _ := adm.Metadata(ctx)
		t.Fatalf("delete records: %v %v (nodes %v, brokers %v)", err, res.Error(), tc.addrs(), md.Brokers)
	}
	for i, n := range tc.nodes {
		l := n.broker().logs.Get("rep", 0)
		waitFor(t, fmt.Sprintf("node %d's rep-0 log start", i+1), func() bool { return l.LogStartOffset() == 5 })
	}
	for v, a := range acked {
		if a.p == 0 && a.off < 5 {
			delete(acked, v)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.ConsumeTopics("rep"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]at{}
	for len(got) < len(acked) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d", len(got), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = at{r.Partition, r.Offset} })
	}
	for v, want := range acked {
		if got[v] != want {
			t.Fatalf("%s acknowledged at %v, read at %v", v, want, got[v])
		}
	}
}

// With an SSL controller listener the nodes speak raft and the controller's
// requests over mutual TLS; a client without a trusted certificate gets no
// answer from it, and (with the authorizer on) neither does one whose
// trusted certificate's principal is not allowed CLUSTER_ACTION.
func TestClusterControllerListenerTLS(t *testing.T) {
	ca := sectest.NewCA(t, "cluster-ca")
	dir := t.TempDir()
	trust := ca.WritePEM(t, dir, "ca.pem")
	tc := startTestClusterWith(t, 3, func(id int, ports []int) map[string]string {
		return map[string]string{
			"listeners":                                        fmt.Sprintf("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ports[id-1]),
			"controller.listener.names":                        "CONTROLLER",
			"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
			"listener.name.controller.ssl.keystore.type":       "PEM",
			"listener.name.controller.ssl.keystore.location":   ca.Peer(t, fmt.Sprintf("node-%d", id)).WritePEM(t, dir, fmt.Sprintf("node%d.pem", id)),
			"listener.name.controller.ssl.truststore.type":     "PEM",
			"listener.name.controller.ssl.truststore.location": trust,
			// The nodes' certificate subjects, mapped, are super users.
			"listener.name.controller.ssl.principal.mapping.rules": "RULE:^CN=(node-[0-9]+)$/$1/,DEFAULT",
			"authorizer.class.name":                                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":                                          "User:ANONYMOUS;User:node-1;User:node-2;User:node-3",
		}
	})
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers over TLS", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 3, 3, nil, "tls-rep"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	// A plain HTTP client, and a TLS client without a certificate, are
	// refused by the controller listener.
	addr := tc.nodes[0].broker().cluster.ln.Addr().String()
	if resp, err := http.Post("http://"+addr+"/controller/register", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP accepted by a TLS controller listener")
		}
	}
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	if resp, err := anon.Post("https://"+addr+"/controller/register", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate got an answer: %s", resp.Status)
	}
	// A certificate of the same CA whose principal (User:CN=intruder) is
	// not allowed CLUSTER_ACTION: the TLS handshake succeeds, then the
	// connection is closed without an answer.
	ic := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(),
		Certificates: []tls.Certificate{ca.Peer(t, "intruder").TLSCertificate()}}}}
	if resp, err := ic.Post("https://"+addr+"/controller/register", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate without CLUSTER_ACTION got an answer: %s", resp.Status)
	}
}

// A member whose data directory was lost refuses to rejoin as a voter with
// an empty metadata log (it could vote with amnesia, and etcd raft would
// stop it: the leader remembers how far it had acknowledged).
func TestClusterRefusesAmnesia(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
	n3 := tc.nodes[2]
	n3.stop()
	props := maps.Clone(n3.opts.Props)
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Config: cfg,
		Logger: slog.New(slog.DiscardHandler), ShutdownTimeout: 5 * time.Second})
	err = srv.Start()
	if err == nil {
		srv.Close()
		t.Fatal("a member with an empty data directory rejoined without being told to")
	}
	if !strings.Contains(err.Error(), "amnesia") {
		t.Fatalf("refusal does not say why: %v", err)
	}
	// Its own directory still works.
	n3.start()
	waitCluster(t, tc.admin(), "the node back on its own data", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 })
}

// A cluster node restarted while it cannot catch up (here: no quorum) still
// answers with the cluster's id, replayed from its own metadata log, never
// with its data directory's local id: a client that sees the id change takes
// the node for another cluster.
func TestClusterRestartedNodeKeepsClusterID(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	var want string
	waitFor(t, "every node publishing the cluster's id", func() bool {
		want = tc.nodes[0].broker().ClusterID()
		for _, n := range tc.nodes {
			if im := n.broker().image(); im == nil || im.ClusterID == "" || im.ClusterID != want {
				return false
			}
		}
		return true
	})
	if local := tc.nodes[0].broker().clusterID; local == want {
		t.Fatalf("the directory's local id %q is the cluster's: the test cannot tell them apart", local)
	}
	for i := len(tc.nodes) - 1; i >= 0; i-- {
		if i == 0 {
			tc.nodes[i].broker().cluster.epoch.Store(0) // no quorum left for its controlled shutdown
		}
		tc.nodes[i].stop()
	}
	n := tc.nodes[0]
	n.start()
	if n.broker().cluster.published.Load() != 0 {
		t.Fatal("the lone node caught up without a quorum")
	}
	waitFor(t, "the restarted node naming the cluster's id", func() bool { return n.broker().ClusterID() == want })
}

// The dead-process probe never calls a broker gone while it still has a
// connection open to the prober, whatever its registered peer address
// answers (an address that does not reach it from here, a firewall that
// rejects): here the address refuses, and the broker, alive and sending
// raft messages to the active controller, is found alive.
func TestClusterProbeSparesBrokerWithOpenConnection(t *testing.T) {
	tc := startTestCluster(t, 3, nil)
	refused := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]) // reserved, nothing listens
	waitFor(t, "a live broker found alive by the active controller's probe despite a refusing address", func() bool {
		for _, n := range tc.nodes {
			c := n.broker().cluster
			if !c.ctrl.Active() {
				continue
			}
			im := n.broker().image()
			if im == nil {
				return false
			}
			for _, reg := range im.Brokers {
				if reg.ID == c.cfg.nodeID || reg.Fenced {
					continue
				}
				probe := *reg
				probe.PeerAddress = refused
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, found := c.probeBroker(ctx, probe)
				cancel()
				if res == controller.ProbeGone {
					t.Fatalf("broker %d, alive, probed as gone: %s", reg.ID, found)
				}
				if res != controller.ProbeAlive {
					return false
				}
			}
			return len(im.Brokers) == 3
		}
		return false
	})
}

package broker

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/security/sectest"
)

// startListenerCluster starts n cluster nodes serving the broker listeners
// ls (bound on 127.0.0.1:0) besides a PLAINTEXT controller listener, with
// props(id) added to each node's configs.
func startListenerCluster(t *testing.T, n int, ls []security.Listener, props func(id int) map[string]string) *testCluster {
	t.Helper()
	ports := freePorts(t, n)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	var pm []string
	for _, l := range ls {
		pm = append(pm, l.Name+":"+l.Protocol)
	}
	pm = append(pm, "CONTROLLER:PLAINTEXT")
	tc := &testCluster{t: t}
	for i := range n {
		p := map[string]string{
			"node.id":                               fmt.Sprint(i + 1),
			"process.roles":                         "broker,controller",
			"controller.quorum.voters":              strings.Join(voters, ","),
			"controller.quorum.election.timeout.ms": "500",
			"broker.session.timeout.ms":             "1500",
			"broker.heartbeat.interval.ms":          "100",
			"offsets.topic.num.partitions":          "1",
			"transaction.state.log.num.partitions":  "1",
			"listeners":                             fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ports[i]),
			"controller.listener.names":             "CONTROLLER",
			"listener.security.protocol.map":        strings.Join(pm, ","),
		}
		for k, v := range props(i + 1) {
			p[k] = v
		}
		tc.nodes = append(tc.nodes, startTestBroker(t, testOptions{Props: p, Quiet: true, Listeners: ls}))
	}
	tc.stopOnCleanup()
	return tc
}

// listenerAddrs are the nodes' advertised addresses on listener.
func (tc *testCluster) listenerAddrs(listener string) []string {
	var addrs []string
	for _, n := range tc.nodes {
		addrs = append(addrs, n.listenerAddr(listener))
	}
	return addrs
}

// listenerAddr is node's advertised address on listener.
func (tb *testBroker) listenerAddr(listener string) string {
	l := tb.broker().listeners[listener]
	return net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
}

// A cluster whose inter-broker listener is SASL_SSL (PLAIN) with the
// authorizer on: followers authenticate as User:broker (a super user) and
// replicate; a client with topic ACLs only is refused replica requests.
func TestInterBrokerSASLSSL(t *testing.T) {
	ca := sectest.NewCA(t, "ib-ca")
	dir := t.TempDir()
	trust := ca.WritePEM(t, dir, "ca.pem")
	ls := []security.Listener{
		{Name: "CLIENT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
		{Name: "INTERNAL", Protocol: security.SASLSSL, Bind: "127.0.0.1:0"},
	}
	tc := startListenerCluster(t, 3, ls, func(id int) map[string]string {
		return map[string]string{
			"sasl.enabled.mechanisms": "PLAIN",
			"sasl.jaas.config": security.PlainLoginModule + ` required username="broker" password="b-secret" ` +
				`user_broker="b-secret" user_admin="a-secret" user_alice="al-secret";`,
			"listener.name.internal.ssl.keystore.type":       "PEM",
			"listener.name.internal.ssl.keystore.location":   ca.Server(t, fmt.Sprintf("node-%d", id)).WritePEM(t, dir, fmt.Sprintf("n%d.pem", id)),
			"listener.name.internal.ssl.truststore.type":     "PEM",
			"listener.name.internal.ssl.truststore.location": trust,
			"inter.broker.listener.name":                     "INTERNAL",
			"sasl.mechanism.inter.broker.protocol":           "PLAIN",
			"authorizer.class.name":                          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":                                    "User:broker;User:admin",
			"min.insync.replicas":                            "3",
		}
	})
	clientAddrs := tc.listenerAddrs("CLIENT")
	saslClient := func(user, pass string, extra ...kgo.Opt) *kgo.Client {
		opts := append([]kgo.Opt{kgo.SeedBrokers(clientAddrs...), kgo.RetryTimeout(15 * time.Second),
			kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, extra...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admCl := saslClient("admin", "a-secret", kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("replicated"))
	adm := kadm.NewClient(admCl)
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 3, nil, "replicated"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	// acks=all with min.insync.replicas=3 succeeds only once both
	// followers fetch over SASL_SSL.
	for i := range 5 {
		if err := admCl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	for _, n := range tc.nodes {
		pollUntil(t, "every replica to hold the five records", func() bool {
			l, _, code := n.broker().partitionLog("replicated", 0)
			return code == 0 && l != nil && l.LogEndOffset() == 5
		})
	}

	// alice may read the topic, but is no replica.
	acl := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("replicated").
		Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	// The leader, as a broker reports it now: kadm.Metadata may answer from
	// kgo's cache, filled by the producer right after the topic was created
	// (leader -1, LEADER_NOT_AVAILABLE).
	md := waitCluster(t, adm, "replicated's leader", func(md kadm.Metadata) bool {
		p, ok := md.Topics["replicated"].Partitions[0]
		return ok && p.Leader > 0
	})
	leader := md.Topics["replicated"].Partitions[0].Leader
	// (Metadata at most 50 ms old: kgo would otherwise keep answering from
	// a cached TOPIC_AUTHORIZATION_FAILED for 5 s.)
	alice := saslClient("alice", "al-secret", kgo.MetadataMinAge(50*time.Millisecond))
	pollUntil(t, "alice's ACL to reach the leader", func() bool {
		o, err := kadm.NewClient(alice).ListEndOffsets(ctx, "replicated")
		return err == nil && o.Error() == nil
	})
	// alice's client learns the brokers from a metadata response of its
	// own; a cached answer (as kadm may get) does not teach it the leader.
	pollUntil(t, "alice's client to know the leader", func() bool {
		if _, err := alice.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			return false
		}
		_, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, alice.Broker(int(leader)))
		return err == nil
	})
	follower := int32(1)
	if leader == 1 {
		follower = 2
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID = follower
	fetch.ReplicaState.ID = follower
	fetch.ReplicaState.Epoch = -1
	fetch.MaxBytes = 1 << 20
	fetch.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "replicated"
	ft.TopicID = md.Topics["replicated"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := fetch.RequestWith(ctx, alice.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	// Kafka answers a follower fetch without ClusterAction with
	// TOPIC_AUTHORIZATION_FAILED for every partition.
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("replica fetch by alice: %+v", resp)
	}
	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.ReplicaID = follower
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "replicated"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 0
	ot.Partitions = append(ot.Partitions, op)
	ofe.Topics = append(ofe.Topics, ot)
	oresp, err := ofe.RequestWith(ctx, alice.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if c := oresp.Topics[0].Partitions[0].ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("replica OffsetForLeaderEpoch by alice: error %d, want CLUSTER_AUTHORIZATION_FAILED", c)
	}
	// A plain consumer fetch by alice is allowed.
	// (Polled: the ACL was seen on the leader, but the consumer may ask
	// another broker for metadata before the ACL reaches it.)
	consumer := saslClient("alice", "al-secret", kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var lastErr error
	for got := 0; got == 0; {
		fs := consumer.PollRecords(ctx, 5)
		if ctx.Err() != nil {
			t.Fatalf("alice consuming: no record (last error %v)", lastErr)
		}
		fs.EachError(func(_ string, _ int32, err error) { lastErr = err })
		got = fs.NumRecords()
	}
}

// With an SSL inter-broker listener requiring client certificates, each
// broker presents its key store as the client certificate; its subject,
// mapped by ssl.principal.mapping.rules, is the super user.
func TestInterBrokerMutualTLS(t *testing.T) {
	ca := sectest.NewCA(t, "ib-ca")
	dir := t.TempDir()
	trust := ca.WritePEM(t, dir, "ca.pem")
	ls := []security.Listener{
		{Name: "PLAINTEXT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
		{Name: "REPLICATION", Protocol: security.SSL, Bind: "127.0.0.1:0"},
	}
	tc := startListenerCluster(t, 3, ls, func(id int) map[string]string {
		return map[string]string{
			"listener.name.replication.ssl.keystore.type": "PEM",
			"listener.name.replication.ssl.keystore.location": ca.Peer(t, fmt.Sprintf("node-%d.brokers", id)).
				WritePEM(t, dir, fmt.Sprintf("n%d.pem", id)),
			"listener.name.replication.ssl.truststore.type":         "PEM",
			"listener.name.replication.ssl.truststore.location":     trust,
			"listener.name.replication.ssl.client.auth":             "required",
			"listener.name.replication.ssl.principal.mapping.rules": `RULE:^CN=[^.]*\.(brokers)$/$1/,DEFAULT`,
			"inter.broker.listener.name":                            "REPLICATION",
			"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"allow.everyone.if.no.acl.found":                        "true",
			"super.users":                                           "User:brokers",
		}
	})
	// The anonymous PLAINTEXT principal may do everything but ClusterAction
	// (no ACL exists), so replication works only over REPLICATION.
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "mtls"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	// Once an ACL names the cluster, ClusterAction is no longer everyone's.
	acl := kadm.NewACLs().Allow("User:brokers").AllowHosts("*").Clusters().
		Operations(kadm.OpClusterAction).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, res)
	}
	// A client certificate that maps to another principal is no replica.
	other := ca.Client(t, pkix.Name{CommonName: "app"})
	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.ReplicaID = 2
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "mtls"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = -1, 0
	ot.Partitions = append(ot.Partitions, op)
	ofe.Topics = append(ofe.Topics, ot)
	for _, n := range tc.nodes {
		// (Metadata at most 50 ms old: the topic was just created, and kgo
		// would otherwise route by a cached answer without a leader for 5 s.)
		app, err := kgo.NewClient(kgo.SeedBrokers(n.listenerAddr("REPLICATION")), kgo.DialTLSConfig(sectest.ClientTLS(ca, other)),
			kgo.MetadataMinAge(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		pollUntil(t, "CN=app to be refused ClusterAction", func() bool {
			oresp, err := ofe.RequestWith(ctx, app)
			return err == nil && oresp.Topics[0].Partitions[0].ErrorCode == kerr.ClusterAuthorizationFailed.Code
		})
	}
	// acks=all with min.insync.replicas=3 needs both followers, which
	// fetch as User:brokers.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("mtls"),
		kgo.DisableIdempotentWrite(), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("x", i))}).FirstErr(); err != nil {
			t.Fatalf("produce acks=all: %v", err)
		}
	}
	// (At least three: the producer is not idempotent, so a retried
	// request, after a timeout on a loaded box, may have written a record
	// twice.)
	for _, n := range tc.nodes {
		pollUntil(t, "every replica to hold the records", func() bool {
			l, _, code := n.broker().partitionLog("mtls", 0)
			return code == 0 && l != nil && l.HighWatermark() >= 3 && l.LogEndOffset() >= 3
		})
	}
}

// The inter-broker listener's configuration is checked at start.
func TestInterBrokerConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "only one of"},
		{map[string]string{"inter.broker.listener.name": "NOPE"}, "not a listener"},
		{map[string]string{"security.inter.broker.protocol": "SASL_SSL"}, "not a listener"},
	} {
		cfg, err := config.NewBroker(tt.props)
		if err != nil {
			t.Fatal(err)
		}
		b := &Broker{cfg: cfg, listeners: map[string]*listenerState{"PLAINTEXT": {name: "PLAINTEXT", protocol: security.Plaintext}}}
		if _, err := newInterBroker(b, []string{"CONTROLLER"}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.props, err, tt.want)
		}
	}
	// SASL without a mechanism Sluice can speak, or without credentials.
	for _, tt := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"inter.broker.listener.name": "SASL_PLAINTEXT"}, "GSSAPI"},
		{map[string]string{"inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN"}, "no JAAS config"},
		{map[string]string{"inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
			"sasl.jaas.config": security.PlainLoginModule + ` required username="b" password="p";`}, "no " + security.ScramLoginModule},
	} {
		cfg, err := config.NewBroker(tt.props)
		if err != nil {
			t.Fatal(err)
		}
		b := &Broker{cfg: cfg, listeners: map[string]*listenerState{"SASL_PLAINTEXT": {name: "SASL_PLAINTEXT", protocol: security.SASLPlaintext}}}
		if _, err := newInterBroker(b, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.props, err, tt.want)
		}
	}
}

// TestInterBrokerOAuth: followers fetch over a SASL_PLAINTEXT listener with
// OAUTHBEARER (unsecured validator and login, development settings), each
// node presenting its own token: acks=all with min.insync.replicas=3
// succeeds only once both followers fetch.
func TestInterBrokerOAuth(t *testing.T) {
	ls := []security.Listener{
		{Name: "CLIENT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
		{Name: "INTERNAL", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
	}
	tc := startListenerCluster(t, 3, ls, func(id int) map[string]string {
		return map[string]string{
			"listener.name.internal.sasl.enabled.mechanisms": "OAUTHBEARER",
			"listener.name.internal.oauthbearer.sasl.jaas.config": security.OAuthBearerLoginModule + ` required ` +
				`unsecuredLoginStringClaim_sub="broker";`,
			"inter.broker.listener.name":           "INTERNAL",
			"sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
			"min.insync.replicas":                  "3",
		}
	})
	clientAddrs := tc.listenerAddrs("CLIENT")
	cl, err := kgo.NewClient(kgo.SeedBrokers(clientAddrs...), kgo.RetryTimeout(30*time.Second),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("replicated"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 3, nil, "replicated"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	for _, n := range tc.nodes {
		pollUntil(t, "every replica to hold the three records", func() bool {
			l, _, code := n.broker().partitionLog("replicated", 0)
			return code == 0 && l != nil && l.LogEndOffset() == 3
		})
	}
}

// A replica fetcher's SASL session has a lifetime (connections.max.reauth.ms):
// the fetcher replaces its connection before the session ends, so the
// leader never closes one for an expired session, and acks=all writes with
// min.insync.replicas=3 keep succeeding across several lifetimes.
func TestInterBrokerSessionRenewed(t *testing.T) {
	const lifetime = 4 * time.Second // renewed every 2 s
	ls := []security.Listener{{Name: "INTERNAL", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"}}
	tc := startListenerCluster(t, 3, ls, func(int) map[string]string {
		return map[string]string{
			"sasl.enabled.mechanisms": "PLAIN",
			"sasl.jaas.config": security.PlainLoginModule + ` required username="broker" password="b-secret" ` +
				`user_broker="b-secret";`,
			"connections.max.reauth.ms":            strconv.Itoa(int(lifetime.Milliseconds())),
			"inter.broker.listener.name":           "INTERNAL",
			"sasl.mechanism.inter.broker.protocol": "PLAIN",
			"min.insync.replicas":                  "3",
		}
	})
	addrs := tc.listenerAddrs("INTERNAL")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RetryTimeout(15*time.Second),
		kgo.SASL(plain.Auth{User: "broker", Pass: "b-secret"}.AsMechanism()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("renewed"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	waitCluster(t, adm, "three live brokers", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 3, 3, nil, "renewed"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	// Writes for three lifetimes: each needs both followers of its
	// partition to have fetched it.
	start, n := time.Now(), 0
	for ; time.Since(start) < 3*lifetime; n++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", n))}).FirstErr(); err != nil {
			t.Fatalf("produce %d after %v: %v", n, time.Since(start), err)
		}
	}
	auths := 0.0
	for _, node := range tc.nodes {
		if x := counterSum(t, node.broker(), "sluice_sasl_expired_sessions_closed_total", nil); x != 0 {
			t.Errorf("node %d closed %v connections on an expired SASL session", node.broker().cfg.NodeID, x)
		}
		auths += counterSum(t, node.broker(), "sluice_sasl_authentications_total", map[string]string{"result": "success"})
	}
	// Six fetchers (each node follows the two others), each renewed at
	// least four times in three lifetimes, besides the client's
	// connections.
	if auths < 30 {
		t.Errorf("%v successful authentications in %v, want the fetchers' renewals (30 or more)", auths, time.Since(start))
	}
	t.Logf("%d acks=all writes, %v authentications in %v", n, auths, time.Since(start))
}

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

	"github.com/sluice-broker/sluice/internal/peer"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Three voters whose controller listener is SASL_PLAINTEXT with
// SCRAM-SHA-512, their data directories formatted with the controller
// user's credential (sluice format --add-scram): raft and the controller
// requests authenticate with it before anything is agreed, the first
// controller commits it with the cluster id (a SCRAM user of the cluster
// from then on), a restarted node takes it from its own metadata, and a
// wrong password is refused.
func TestClusterControllerListenerSCRAM(t *testing.T) {
	ports := freePorts(t, 3)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	tc := &testCluster{t: t}
	for i := range 3 {
		dir := t.TempDir()
		if err := FormatBootstrapScram(vfs.OS(), dir, []BootstrapScram{{Mechanism: "SCRAM-SHA-512", User: "admin", Password: "admin-secret"}}); err != nil {
			t.Fatal(err)
		}
		props := map[string]string{
			"node.id":                                          fmt.Sprint(i + 1),
			"process.roles":                                    "broker,controller",
			"controller.quorum.voters":                         strings.Join(voters, ","),
			"controller.quorum.election.timeout.ms":            "500",
			"broker.session.timeout.ms":                        "1500",
			"broker.heartbeat.interval.ms":                     "100",
			"offsets.topic.num.partitions":                     "3",
			"transaction.state.log.num.partitions":             "3",
			"listeners":                                        fmt.Sprintf("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ports[i]),
			"controller.listener.names":                        "CONTROLLER",
			"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"listener.name.controller.sasl.enabled.mechanisms": "SCRAM-SHA-512",
			"sasl.mechanism.controller.protocol":               "SCRAM-SHA-512",
			"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required ` +
				`username="admin" password="admin-secret";`,
		}
		tc.nodes = append(tc.nodes, startTestBroker(t, testOptions{Props: props, Quiet: true, DataDir: dir}))
	}
	tc.stopOnCleanup()
	adm := tc.admin()
	waitCluster(t, adm, "three live brokers and a controller", func(md kadm.Metadata) bool { return len(md.Brokers) == 3 && md.Controller > 0 })

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 3, 3, nil, "over-scram"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	// The bootstrap credential is a SCRAM user of the cluster.
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := adm.DescribeUserSCRAMs(ctx, "admin")
		if err == nil && d["admin"].Err == nil && len(d["admin"].CredInfos) == 1 && d["admin"].CredInfos[0].Mechanism == kadm.ScramSha512 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bootstrap credential is not a user of the cluster: %+v %v", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	bad := peer.NewClient(nil, nil, quiet, peer.WithSASL(newScramPeerMechanism("SCRAM-SHA-512", "admin", "wrong")))
	defer bad.Close()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := bad.PeerStatus(sctx, addr, 9)
	scancel()
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a wrong password: %v, want a refusal", err)
	}

	// A restarted node checks logins against its own metadata (its image
	// has the cluster id and the credential before any peer reaches it):
	// it rejoins and sees a topic created while it was away.
	tc.nodes[1].stop()
	waitCluster(t, adm, "two live brokers", func(md kadm.Metadata) bool {
		n := 0
		for _, b := range md.Brokers {
			if b.NodeID != 2 {
				n++
			}
		}
		return n == 2 && md.Controller > 0 && md.Controller != 2
	})
	if res, err := adm.CreateTopic(ctx, 1, 1, nil, "while-away"); err != nil || res.Err != nil {
		t.Fatalf("create topic with a node away: %v %v", err, res.Err)
	}
	tc.nodes[1].start()
	deadline = time.Now().Add(60 * time.Second)
	for {
		_, ok := tc.nodes[1].broker().topics.Get("while-away")
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted node did not catch up over the SCRAM controller listener")
		}
		time.Sleep(50 * time.Millisecond)
	}
	good := peer.NewClient(nil, nil, quiet, peer.WithSASL(newScramPeerMechanism("SCRAM-SHA-512", "admin", "admin-secret")))
	defer good.Close()
	sctx, scancel = context.WithTimeout(ctx, 10*time.Second)
	st, err := good.PeerStatus(sctx, fmt.Sprintf("127.0.0.1:%d", ports[1]), 9)
	scancel()
	if err != nil || st.Node != 2 {
		t.Fatalf("the right password on the restarted node: %+v %v", st, err)
	}
}

// Three voters whose controller listener is SASL_PLAINTEXT with
// OAUTHBEARER (the unsecured validator and login, development settings):
// each node presents a token of its own, the cluster forms and replicates;
// a connection with a malformed token is refused.
func TestClusterControllerListenerOAuth(t *testing.T) {
	tc := startTestClusterWith(t, 3, func(id int, ports []int) map[string]string {
		return map[string]string{
			"listeners":                                        fmt.Sprintf("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ports[id-1]),
			"controller.listener.names":                        "CONTROLLER",
			"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"listener.name.controller.sasl.enabled.mechanisms": "OAUTHBEARER",
			"sasl.mechanism.controller.protocol":               "OAUTHBEARER",
			"listener.name.controller.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
				`unsecuredLoginStringClaim_sub="controller";`,
		}
	})
	adm := tc.admin()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := adm.Metadata(ctx)
		cancel()
		if err == nil && len(md.Brokers) == 3 && md.Controller > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no three-node cluster over OAUTHBEARER: %v %v", err, md.Brokers.NodeIDs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 3, 3, nil, "over-oauth"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	addr := tc.nodes[0].broker().cluster.peerAddr
	bad := peer.NewClient(nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), peer.WithSASL(badTokenMechanism{}))
	defer bad.Close()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := bad.PeerStatus(sctx, addr, 9)
	scancel()
	if err == nil {
		t.Fatal("a malformed token was let through")
	}
}

// badTokenMechanism presents a token that is no JWT.
type badTokenMechanism struct{}

func (badTokenMechanism) Name() string { return "OAUTHBEARER" }

func (badTokenMechanism) Start(context.Context) ([]byte, func([]byte) (bool, []byte, error), error) {
	return []byte("n,,\x01auth=Bearer not-a-jwt\x01\x01"), func([]byte) (bool, []byte, error) { return true, nil, nil }, nil
}

// TestBootstrapScramOnImportedNode: a one-voter node whose cluster id comes
// from the single-node import (the default node, or a single node upgraded
// in place) commits the bootstrap credentials with it too.
func TestBootstrapScramOnImportedNode(t *testing.T) {
	dir := t.TempDir()
	if err := FormatBootstrapScram(vfs.OS(), dir, []BootstrapScram{{Mechanism: "SCRAM-SHA-256", User: "boot", Password: "boot-secret"}}); err != nil {
		t.Fatal(err)
	}
	tb := startTestBroker(t, testOptions{DataDir: dir, Quiet: true})
	if tb.broker().cluster == nil {
		t.Skip("the single-node path (SLUICE_TEST_ONE_VOTER=0) has no metadata quorum")
	}
	im := tb.broker().cluster.store.Image()
	if _, ok := im.Scram["boot"]["SCRAM-SHA-256"]; !ok || im.ClusterID == "" {
		t.Fatalf("bootstrap credential not committed with the cluster id %q: %v", im.ClusterID, im.Scram)
	}
}

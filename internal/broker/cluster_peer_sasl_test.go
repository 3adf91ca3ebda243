package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/peer"
)

// controllerSASLProps secures a test node's controller listener (port)
// with SASL_PLAINTEXT PLAIN, user controller.
func controllerSASLProps(port int) map[string]string {
	return map[string]string{
		"listeners":                                        fmt.Sprintf("PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", port),
		"controller.listener.names":                        "CONTROLLER",
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
		"sasl.mechanism.controller.protocol":               "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="controller" password="ctl-secret" user_controller="ctl-secret";`,
	}
}

// Three voters whose controller listener is SASL_PLAINTEXT with PLAIN, and
// a broker-only node whose file names that listener only in
// controller.listener.names and the protocol map (as Kafka's): raft and the
// brokers' requests to the controller authenticate, so the cluster forms,
// places and replicates topics; a peer connection without SASL or with a
// wrong password is refused, one with the right password answers.
func TestClusterControllerListenerSASLPlain(t *testing.T) {
	ports := freePorts(t, 3)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	tc := startTestClusterWith(t, 4, func(id int, _ []int) map[string]string {
		if id == 4 {
			m := controllerSASLProps(0)
			m["listeners"] = "PLAINTEXT://127.0.0.1:0"
			m["process.roles"] = "broker"
			m["controller.quorum.voters"] = strings.Join(voters, ",")
			return m
		}
		m := controllerSASLProps(ports[id-1])
		m["controller.quorum.voters"] = strings.Join(voters, ",")
		return m
	})
	adm := tc.admin()
	waitCluster(t, adm, "four live brokers and a controller", func(md kadm.Metadata) bool { return len(md.Brokers) == 4 && md.Controller > 0 })
	waitQuorum(t, tc.nodes[0].addr, []int32{1, 2, 3}, []int32{4})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 4, 3, nil, "over-sasl"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	waitCluster(t, adm, "over-sasl with leaders and three in-sync replicas", func(md kadm.Metadata) bool {
		td, ok := md.Topics["over-sasl"]
		if !ok || len(td.Partitions) != 4 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 1 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tc.addrs()...), kgo.DefaultProduceTopic("over-sasl"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce acks=all: %v", err)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Plain HTTP, no SASL: the connection is closed.
	hc := &http.Client{Timeout: 10 * time.Second}
	if resp, err := hc.Get("http://" + addr + "/status?node=9"); err == nil {
		resp.Body.Close()
		t.Fatalf("a peer request without SASL was answered: %s", resp.Status)
	}
	// A wrong password is refused with a reason.
	bad := peer.NewClient(nil, nil, quiet, peer.WithSASL(plainMechanism{user: "controller", pass: "wrong"}))
	defer bad.Close()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = bad.PeerStatus(sctx, addr, 9)
	scancel()
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a wrong password: %v, want a refusal", err)
	}
	// The right one is let through.
	good := peer.NewClient(nil, nil, quiet, peer.WithSASL(plainMechanism{user: "controller", pass: "ctl-secret"}))
	defer good.Close()
	sctx, scancel = context.WithTimeout(ctx, 10*time.Second)
	st, err := good.PeerStatus(sctx, addr, 9)
	scancel()
	if err != nil || st.Node != 1 {
		t.Fatalf("the right password: %+v %v", st, err)
	}
}

// A SASL controller listener needs a mechanism this node can use: the
// default sasl.mechanism.controller.protocol (GSSAPI), a mechanism other
// than PLAIN, or no credentials of its own are refused at start.
func TestClusterControllerListenerSASLRefused(t *testing.T) {
	port := freePorts(t, 1)[0]
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
		want string
	}{
		{"default mechanism", func(m map[string]string) { delete(m, "sasl.mechanism.controller.protocol") }, "sasl.mechanism.controller.protocol"},
		{"GSSAPI enabled", func(m map[string]string) {
			m["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,GSSAPI"
		}, "GSSAPI"},
		{"OAUTHBEARER without a token", func(m map[string]string) {
			m["sasl.mechanism.controller.protocol"] = "OAUTHBEARER"
		}, "unsecuredLoginStringClaim_sub"},
		{"no own credentials", func(m map[string]string) {
			m["listener.name.controller.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required user_controller="x";`
		}, "username"},
	} {
		props := controllerSASLProps(port)
		props["node.id"] = "1"
		props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", port)
		tc.edit(props)
		cfg, err := config.NewBroker(props)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		srv := NewServer(Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Config: cfg,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		err = srv.Start()
		if err == nil {
			srv.Close()
			t.Fatalf("%s: started", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: unclear refusal: %v", tc.name, err)
		}
	}
}

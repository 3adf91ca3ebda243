package goclients

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/broker"
	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/security/sectest"
)

// secureBroker is a broker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL
// listeners: PLAIN users admin/admin-secret and alice/alice-secret, SCRAM
// users made by the tests.
type secureBroker struct {
	srv    *broker.Server
	caFile string
	ca     *sectest.CA
	logs   *logBuffer
}

func startSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	dir := t.TempDir()
	ca := sectest.NewCA(t, "goclients-ca")
	cfg, err := config.NewBroker(map[string]string{
		"offsets.topic.num.partitions":     "1",
		"group.initial.rebalance.delay.ms": "0",
		"ssl.keystore.type":                "PEM",
		"ssl.keystore.location":            ca.Server(t, "broker").WritePEM(t, dir, "broker.pem"),
		"sasl.enabled.mechanisms":          "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_admin="admin-secret" user_alice="alice-secret";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	sb := &secureBroker{ca: ca, caFile: ca.WritePEM(t, dir, "ca.pem"), logs: &logBuffer{}}
	sb.srv = broker.NewServer(broker.Options{
		Listeners: []security.Listener{
			{Name: "PLAINTEXT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
			{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
			{Name: "SASL_SSL", Protocol: security.SASLSSL, Bind: "127.0.0.1:0"},
		},
		DataDir:         t.TempDir(),
		Config:          cfg,
		Logger:          slog.New(slog.NewTextHandler(sb.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Version:         "goclients-test",
		ShutdownTimeout: 5 * time.Second,
	})
	if err := sb.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sb.srv.Close()
		if t.Failed() {
			t.Logf("broker log:\n%s", sb.logs.String())
		}
	})
	return sb
}

func (sb *secureBroker) addr(listener string) string { return sb.srv.ListenerAddr(listener).String() }

// saramaConfig is a sarama configuration for a SASL listener.
func saramaSASL(mech sarama.SASLMechanism, user, pass string, handshake int16) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "sluice-sarama-sasl-test"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = mech
	cfg.Net.SASL.User, cfg.Net.SASL.Password = user, pass
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Version = handshake
	// sarama refuses ApiVersions before a v0 handshake (old brokers did not
	// expect it ahead of the bare tokens).
	cfg.ApiVersionsRequest = handshake != sarama.SASLHandshakeV0
	return cfg
}

// TestSaramaSASL: sarama with SASL/PLAIN over SASL_PLAINTEXT, with the v1
// handshake (SaslAuthenticate requests) and the v0 one (bare tokens,
// KIP-43), and with SCRAM-SHA-512 over SASL_SSL.
func TestSaramaSASL(t *testing.T) {
	t.Parallel()
	sb := startSecureBroker(t)
	topic := uniqueName("sarama-sasl")
	for _, v := range []int16{sarama.SASLHandshakeV1, sarama.SASLHandshakeV0} {
		cfg := saramaSASL(sarama.SASLTypePlaintext, "alice", "alice-secret", v)
		adm, err := sarama.NewClusterAdmin([]string{sb.addr("SASL_PLAINTEXT")}, cfg)
		if err != nil {
			t.Fatalf("handshake v%d: admin: %v", v, err)
		}
		if v == sarama.SASLHandshakeV1 {
			if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
				t.Fatal(err)
			}
		}
		adm.Close()
		p, err := sarama.NewSyncProducer([]string{sb.addr("SASL_PLAINTEXT")}, cfg)
		if err != nil {
			t.Fatalf("handshake v%d: producer: %v", v, err)
		}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("v" + string(rune('0'+v)))}); err != nil {
			t.Fatalf("handshake v%d: produce: %v", v, err)
		}
		p.Close()
	}
	// A wrong password is refused with SASL_AUTHENTICATION_FAILED.
	_, err := sarama.NewClient([]string{sb.addr("SASL_PLAINTEXT")}, saramaSASL(sarama.SASLTypePlaintext, "alice", "nope", sarama.SASLHandshakeV1))
	if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) && (err == nil || !strings.Contains(err.Error(), "Invalid username or password")) {
		t.Fatalf("wrong password: %v", err)
	}

	// SCRAM-SHA-512 over TLS, user made with sarama's admin.
	acfg := sarama.NewConfig()
	acfg.Version = sarama.V2_8_0_0
	adm, err := sarama.NewClusterAdmin([]string{sb.addr("PLAINTEXT")}, acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.UpsertUserScramCredentials([]sarama.AlterUserScramCredentialsUpsert{{
		Name: "bob", Mechanism: sarama.SCRAM_MECHANISM_SHA_512, Iterations: 8192, Password: []byte("bob-secret")}})
	if err != nil || len(res) != 1 || res[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("upsert: %v %+v", err, *res[0])
	}
	cfg := saramaSASL(sarama.SASLTypeSCRAMSHA512, "bob", "bob-secret", sarama.SASLHandshakeV1)
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
		return &scramAdapter{m: func(a scram.Auth) sasl.Mechanism { return a.AsSha512Mechanism() }}
	}
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = sectest.ClientTLS(sb.ca, nil)
	c, err := sarama.NewConsumer([]string{sb.addr("SASL_SSL")}, cfg)
	if err != nil {
		t.Fatalf("SCRAM consumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for i := 0; i < 2; i++ {
		select {
		case m := <-pc.Messages():
			if want := "v" + string(rune('1'-i)); string(m.Value) != want {
				t.Errorf("record %d: %q, want %q", i, m.Value, want)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no record")
		}
	}
}

// scramAdapter drives franz-go's SCRAM client through sarama's SCRAMClient
// interface (sarama ships none).
type scramAdapter struct {
	m    func(scram.Auth) sasl.Mechanism
	auth scram.Auth
	sess sasl.Session
	done bool
}

func (a *scramAdapter) Begin(user, pass, authz string) error {
	a.auth = scram.Auth{User: user, Pass: pass, Zid: authz}
	return nil
}

func (a *scramAdapter) Step(challenge string) (string, error) {
	if a.sess == nil {
		sess, first, err := a.m(a.auth).Authenticate(context.Background(), "")
		a.sess = sess
		return string(first), err
	}
	done, msg, err := a.sess.Challenge([]byte(challenge))
	a.done = done
	return string(msg), err
}

func (a *scramAdapter) Done() bool { return a.done }

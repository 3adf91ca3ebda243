package broker

import (
	"context"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/security/sectest"
)

const testJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// secureBroker is a broker with a PLAINTEXT and a SASL_SSL listener (PLAIN
// and SCRAM) and, when mtls, an SSL listener requiring client certificates.
type secureBroker struct {
	*testBroker
	ca     *sectest.CA
	client *sectest.Leaf // a client certificate the SSL listener trusts
}

func startSecureBroker(t *testing.T, extra map[string]string) *secureBroker {
	t.Helper()
	dir := t.TempDir()
	ca := sectest.NewCA(t, "test-ca")
	srv := ca.Server(t, "broker")
	props := map[string]string{
		"ssl.keystore.type":                                   "PKCS12",
		"ssl.keystore.location":                               srv.WritePKCS12(t, dir, "broker.p12", "store-pw"),
		"ssl.keystore.password":                               "store-pw",
		"sasl.enabled.mechanisms":                             "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       testJAAS,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": testJAAS,
		"listener.name.ssl.ssl.client.auth":                   "required",
		"listener.name.ssl.ssl.truststore.type":               "PEM",
		"listener.name.ssl.ssl.truststore.location":           ca.WritePEM(t, dir, "ca.pem"),
	}
	for k, v := range extra {
		props[k] = v
	}
	tb := startTestBroker(t, testOptions{Props: props, Listeners: []security.Listener{
		{Name: "PLAINTEXT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
		{Name: "SASL_SSL", Protocol: security.SASLSSL, Bind: "127.0.0.1:0"},
		{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
		{Name: "SSL", Protocol: security.SSL, Bind: "127.0.0.1:0"},
	}})
	return &secureBroker{testBroker: tb, ca: ca,
		client: ca.Client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}})}
}

func (sb *secureBroker) addrOf(name string) string { return sb.srv.ListenerAddr(name).String() }

// clientOn returns a kgo client seeded with listener name's address.
func (sb *secureBroker) clientOn(name string, opts ...kgo.Opt) *kgo.Client {
	sb.t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(sb.addrOf(name)), kgo.RetryTimeout(3 * time.Second),
		kgo.RequestRetries(1)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		sb.t.Fatal(err)
	}
	sb.t.Cleanup(cl.Close)
	return cl
}

func (sb *secureBroker) tlsOpt(withCert bool) kgo.Opt {
	var leaf *sectest.Leaf
	if withCert {
		leaf = sb.client
	}
	return kgo.DialTLSConfig(sectest.ClientTLS(sb.ca, leaf))
}

// metadataBroker asks Metadata through cl and returns the one broker's
// address.
func metadataBroker(t *testing.T, cl *kgo.Client) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	if len(resp.Brokers) != 1 {
		t.Fatalf("brokers: %+v", resp.Brokers)
	}
	return net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))), nil
}

func TestListenersAdvertiseTheirOwnAddress(t *testing.T) {
	sb := startSecureBroker(t, nil)
	plainSASL := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	cases := map[string]*kgo.Client{
		"PLAINTEXT":      sb.clientOn("PLAINTEXT"),
		"SASL_SSL":       sb.clientOn("SASL_SSL", sb.tlsOpt(false), plainSASL),
		"SASL_PLAINTEXT": sb.clientOn("SASL_PLAINTEXT", plainSASL),
		"SSL":            sb.clientOn("SSL", sb.tlsOpt(true)),
	}
	for name, cl := range cases {
		got, err := metadataBroker(t, cl)
		if err != nil || got != sb.addrOf(name) {
			t.Errorf("%s: metadata broker %s (%v), want %s", name, got, err, sb.addrOf(name))
		}
	}
	// A group coordinator and DescribeCluster point at the listener too.
	adm := kadm.NewClient(cases["SASL_SSL"])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cases["SASL_SSL"])
	if err != nil || len(dc.Brokers) != 1 {
		t.Fatalf("describe cluster: %v %+v", err, dc)
	}
	if addr := net.JoinHostPort(dc.Brokers[0].Host, strconv.Itoa(int(dc.Brokers[0].Port))); addr != sb.addrOf("SASL_SSL") {
		t.Errorf("describe cluster %s, want %s", addr, sb.addrOf("SASL_SSL"))
	}
	fc := adm.FindGroupCoordinators(ctx, "g1")
	if len(fc) != 1 {
		t.Fatalf("coordinators: %+v", fc)
	}
	for _, c := range fc {
		if addr := net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))); c.Err != nil || addr != sb.addrOf("SASL_SSL") {
			t.Errorf("coordinator %s %v, want %s", addr, c.Err, sb.addrOf("SASL_SSL"))
		}
	}
	// Produce through SASL_SSL, consume through PLAINTEXT.
	produceConsume(t, cases["SASL_SSL"], sb.addrOf("PLAINTEXT"), "secure-topic")
}

func produceConsume(t *testing.T, producer *kgo.Client, consumerSeed, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(producer).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(consumerSeed), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	fs := cons.PollFetches(ctx)
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatalf("fetch: %v", errs)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("records: %v", recs)
	}
}

// authErr pings through cl and returns the error.
func authErr(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

func TestSASLPlain(t *testing.T) {
	sb := startSecureBroker(t, nil)
	for _, listener := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		var tlsOpt []kgo.Opt
		if listener == "SASL_SSL" {
			tlsOpt = []kgo.Opt{sb.tlsOpt(false)}
		}
		ok := sb.clientOn(listener, append(tlsOpt, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))...)
		if err := authErr(ok); err != nil {
			t.Fatalf("%s: %v", listener, err)
		}
		bad := sb.clientOn(listener, append(tlsOpt, kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()))...)
		if err := authErr(bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: wrong password: %v", listener, err)
		}
	}
	if !strings.Contains(sb.logs.text(), "failed authentication") {
		t.Error("failed authentication not logged")
	}

	// Unauthenticated Produce closes the connection; so does SaslAuthenticate
	// before SaslHandshake. After authentication, a second handshake gets
	// ILLEGAL_SASL_STATE.
	rc := dialRaw(t, sb.addrOf("SASL_PLAINTEXT"))
	prod := kmsg.NewPtrProduceRequest()
	prod.Version, prod.Acks, prod.TimeoutMillis = 7, 1, 1000
	rc.send(prod, 1)
	rc.expectClosed()

	rc = dialRaw(t, sb.addrOf("SASL_PLAINTEXT"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	rc.send(hs, 1)
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.Version = 1
	rc.recv(hsr)
	if hsr.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hsr.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Fatalf("GSSAPI handshake: %+v", hsr)
	}
	rc.expectClosed()

	rc = dialRaw(t, sb.addrOf("SASL_PLAINTEXT"))
	hs.Mechanism = "PLAIN"
	rc.send(hs, 1)
	rc.recv(hsr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, []byte("\x00alice\x00alice-secret")
	rc.send(auth, 2)
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.Version = 1
	rc.recv(ar)
	if ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 0 {
		t.Fatalf("authenticate: %+v", ar)
	}
	rc.send(hs, 3)
	rc.recv(hsr)
	if hsr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second handshake: %+v", hsr)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	rc.send(md, 4)
	mr := kmsg.NewPtrMetadataResponse()
	mr.Version = 1
	rc.recv(mr)

	// Before authentication, frames are bounded by
	// sasl.server.max.receive.size (Kafka's default: 512 KiB), announced
	// size alone: nothing is read or allocated.
	rc = dialRaw(t, sb.addrOf("SASL_PLAINTEXT"))
	rc.nc.Write(binary.BigEndian.AppendUint32(nil, 524289))
	rc.expectClosed()
	if !strings.Contains(sb.logs.text(), "size=524289 sasl.server.max.receive.size=524288") {
		t.Errorf("oversized pre-authentication frame not logged with its bound:\n%s", sb.logs.text())
	}

	// SaslHandshake on a PLAINTEXT listener: ILLEGAL_SASL_STATE, stays open.
	rc = dialRaw(t, sb.addrOf("PLAINTEXT"))
	rc.send(hs, 1)
	rc.recv(hsr)
	if hsr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake on PLAINTEXT: %+v", hsr)
	}
	rc.send(md, 2)
	rc.recv(mr)
}

func TestSCRAMCredentials(t *testing.T) {
	sb := startSecureBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := kadm.NewClient(sb.clientOn("PLAINTEXT"))

	scramClient := func(m func(scram.Auth) sasl.Mechanism, user, pass string) *kgo.Client {
		return sb.clientOn("SASL_SSL", sb.tlsOpt(false), kgo.SASL(m(scram.Auth{User: user, Pass: pass})))
	}
	sha256 := func(a scram.Auth) sasl.Mechanism { return a.AsSha256Mechanism() }
	sha512 := func(a scram.Auth) sasl.Mechanism { return a.AsSha512Mechanism() }

	if err := authErr(scramClient(sha256, "alice", "alice-secret")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("before the credential exists: %v", err)
	}
	res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"},
	})
	if err != nil || res.Error() != nil {
		t.Fatalf("alter: %v %v", err, res.Error())
	}
	if err := authErr(scramClient(sha256, "alice", "alice-secret")); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if err := authErr(scramClient(sha512, "bob", "bob-secret")); err != nil {
		t.Fatalf("bob: %v", err)
	}
	err = authErr(scramClient(sha256, "alice", "wrong"))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) ||
		!strings.Contains(err.Error(), "invalid credentials with SASL mechanism SCRAM-SHA-256") {
		t.Fatalf("wrong password: %v", err)
	}

	// Kafka's checks.
	// (kadm checks iterations itself, so the request is built by hand.)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
	up := func(user string, mech int8, iter int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: user, Mechanism: mech, Iterations: iter,
			Salt: []byte("salt"), SaltedPassword: []byte("salted")}
	}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("few", 1, 100), up("many", 1, 20000), up("", 1, 4096), up("twice", 1, 4096), up("twice", 2, 4096), up("mech", 3, 4096),
		up("bad\xffutf8", 1, 4096),
	}
	resp, err := req.RequestWith(ctx, sb.clientOn("PLAINTEXT"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{"nobody": kerr.ResourceNotFound, "few": kerr.UnacceptableCredential,
		"many": kerr.UnacceptableCredential, "": kerr.UnacceptableCredential, "twice": kerr.DuplicateResource,
		"mech": kerr.UnsupportedSaslMechanism, "bad\xffutf8": kerr.UnacceptableCredential}
	if len(resp.Results) != len(want) {
		t.Fatalf("results: %+v", resp.Results)
	}
	for _, r := range resp.Results {
		if code := want[r.User]; code == nil || r.ErrorCode != code.Code || r.ErrorMessage == nil {
			t.Errorf("%q: %+v, want %v", r.User, r, code)
		}
	}

	// Describe, restart, log in again: the credentials are durable.
	described, err := admin.DescribeUserSCRAMs(ctx)
	if err != nil || len(described) != 2 || described["bob"].CredInfos[0].Iterations != 8192 ||
		described["bob"].CredInfos[0].Mechanism != kadm.ScramSha512 {
		t.Fatalf("describe: %v %+v", err, described)
	}
	sb.restart()
	if err := authErr(scramClient(sha256, "alice", "alice-secret")); err != nil {
		t.Fatalf("alice after restart: %v", err)
	}
	admin = kadm.NewClient(sb.clientOn("PLAINTEXT"))
	if _, err := admin.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := authErr(scramClient(sha256, "alice", "alice-secret")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("after delete: %v", err)
	}
	if !strings.Contains(sb.logs.text(), `SCRAM credential upserted" user=alice mechanism=SCRAM-SHA-256 by=User:ANONYMOUS`) {
		t.Error("upsert not logged with the principal")
	}
}

func TestMutualTLS(t *testing.T) {
	sb := startSecureBroker(t, nil)
	if _, err := metadataBroker(t, sb.clientOn("SSL", sb.tlsOpt(true))); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	if err := authErr(sb.clientOn("SSL", sb.tlsOpt(false))); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	// The principal is the certificate subject.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(sb.clientOn("SSL", sb.tlsOpt(true)))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256,
		Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.logs.text(), `by="User:CN=alice,OU=eng,O=Acme"`) {
		t.Errorf("principal not logged:\n%s", sb.logs.text())
	}
}

func TestSecurityStartupErrors(t *testing.T) {
	dir := t.TempDir()
	ca := sectest.NewCA(t, "ca")
	p12 := ca.Server(t, "broker").WritePKCS12(t, dir, "b.p12", "right")
	cases := []struct {
		props     map[string]string
		listeners []security.Listener
		want      string
	}{
		{map[string]string{"ssl.keystore.location": p12, "ssl.keystore.password": "wrong"},
			[]security.Listener{{Name: "SSL", Protocol: security.SSL, Bind: "127.0.0.1:0"}}, "wrong ssl.keystore.password"},
		{map[string]string{}, []security.Listener{{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"}},
			"GSSAPI is not supported"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "sasl.enabled.mechanisms": "SCRAM-SHA-256"},
			nil, "listener SASL_SSL needs a key store"},
		{map[string]string{"listeners": "EXTERNAL://127.0.0.1:0"}, nil, "no security protocol"},
	}
	for _, tc := range cases {
		cfg, err := config.NewBroker(tc.props)
		if err != nil {
			t.Fatal(err)
		}
		srv := NewServer(Options{Listeners: tc.listeners, DataDir: t.TempDir(), Config: cfg,
			Logger: slog.New(slog.DiscardHandler)})
		err = srv.Start()
		if err == nil {
			srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
}
